package main

import (
	"fmt"
	"io"

	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/internal/progress"
	"github.com/spf13/cobra"
)

// env is what the library's settings types need from the command: which
// flags were given, the environment, the log and the image data.
func (a *app) env(c *cobra.Command) experiment.Env {
	return experiment.Env{Changed: c.Flags().Changed, Getenv: a.getenv, Logf: a.logf, Sources: a.sources}
}

// bars turns an experiment's progress reports into progress bars on
// stderr, one per stage.
func (a *app) bars() (experiment.Progress, func()) { return progress.Stages(a.quiet) }

func newAttackCmd(a *app) *cobra.Command {
	f := &experiment.AttackFlags{}
	c := &cobra.Command{
		Use:   "attack",
		Short: "Search for inputs that lengthen the greedy output (random search or PGD on the proxy objective)",
		Long: `For a text model (a translator) see below.

Attack images within S(x, δ) = {x' : ‖x' − x‖∞ ≤ δ} ∩ [min, max]ⁿ: random search
draws --budget uniform samples per image; PGD minimises the paper's proxy J̃ (or the
eos log-probability) with Adam for --budget iterations, each image apart from the
others (a result does not depend on --batch, --shard or the cores; the same build and
kernels, the record's "arithmetic", find the same witness bit for bit).
Every best input is replayed in float64; only replayed lengths are reported, with the
smallest top-2 logit margin of the path. One JSON line per (image, δ, method) goes to
--out, keyed by the model's content and every setting that changes a result; successful
witnesses are saved as safetensors (exact values) and PNG, named by their record's key.

Text models: S(x, δ) is the sequences of x's length with at most ⌈δ·n⌉ of its n
source tokens substituted, special tokens excluded; --eps is δ in (0, 1]. Sentences come
from the model's corpus (--split test by default, --sentences N at random or --index I),
or are your own: --text "..." (repeatable) or --text-file FILE (one per line), keyed by
where they came from and their sha256.
Methods: random (the paper's random search, --budget draws per sentence), gumbel (PGD
through a Gumbel-softmax relaxation, --budget iterations, --lr 0.005 as the paper),
embedding (PGD on the embeddings at the chosen positions: an upper bound, no sentence),
and flip (lenspec's gradient-guided substitution with a beam, --budget evaluations).
Only sequences that are the tokenisation of a text are reported, so every adversarial
source replays from its text with lenspec translate. The step cap defaults to 1,000.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := f.Attack(c.Context(), a.env(c))
			if err != nil {
				return err
			}
			return runAttack(c, a, cfg)
		},
	}
	f.RegisterFlags(c.Flags(), true)
	return c
}

// runAttack runs an attack with progress bars, printing each record as
// it is written.
func runAttack(c *cobra.Command, a *app, cfg experiment.AttackConfig) error {
	progress, finish := a.bars()
	defer finish()
	cfg.Progress = progress
	return experiment.RunAttack(c.Context(), cfg, func(r experiment.AttackRecord) error {
		finish()
		return a.emit(r, func(w io.Writer) { fmt.Fprintln(w, r.Line()) })
	})
}
