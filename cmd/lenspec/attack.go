package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/internal/progress"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nmt"
	"github.com/spf13/cobra"
)

// runFlags are what attack and verify runs share: the model, the data, the
// samples, the radii, the output and the shard.
type runFlags struct{ experiment.RunSettings }

// check validates the shared flags before any work and resolves the
// shard.
func (r *runFlags) check(c *cobra.Command, a *app) (experiment.Shard, error) {
	if err := r.ValidateFlags(c.Flags().Changed); err != nil {
		return experiment.Shard{}, err
	}
	return r.ResolveShard(a.getenv)
}

// loadModel checks the shared flags, then loads the model.
func (r *runFlags) loadModel(c *cobra.Command, a *app) (experiment.Shard, *experiment.Model, error) {
	shard, err := r.check(c, a)
	if err != nil {
		return experiment.Shard{}, nil, err
	}
	m, err := experiment.LoadModel(r.Model)
	return shard, m, err
}

// loadData loads the data for model m, and picks the samples.
func (r *runFlags) loadData(ctx context.Context, a *app, m *experiment.Model) (experiment.Data, []int, error) {
	src, err := a.sources()
	if err != nil {
		return experiment.Data{}, nil, err
	}
	return src.Select(ctx, m, r.Selection(), r.MaxSteps)
}

// bars turns an experiment's progress reports into progress bars on
// stderr, one per stage.
func (a *app) bars() (experiment.Progress, func()) {
	var rep *progress.Reporter
	stage := ""
	finish := func() {
		if rep != nil {
			rep.Finish()
			rep = nil
		}
	}
	return func(s string, done, total int, status string) {
		if s != stage || rep == nil {
			finish()
			stage, rep = s, progress.New(s, total, a.quiet)
		}
		rep.Set(done, status)
	}, finish
}

// attackFlags are the attack command's own.
type attackFlags struct {
	runFlags
	method     string
	budget     int
	batch      int
	s          experiment.AttackSettings // what RegisterFlags sets
	witnessDir string
	// Text models.
	sentences int
	texts     []string // the user's own sentences
	textFile  string
	corpus    nmt.CorpusChoice
}

func (f *attackFlags) register(c *cobra.Command, samples bool) {
	f.RegisterFlags(c.Flags(), samples)
	fl := c.Flags()
	if samples {
		fl.StringVar(&f.method, "method", experiment.MethodPGD, "images: "+orList(experiment.MethodNames(false))+"; text: "+orList(experiment.TextMethods))
		fl.StringVar(&f.witnessDir, "witness-dir", "", "where witnesses go (default: next to --out, in OUT.witnesses/)")
		fl.IntVar(&f.budget, "budget", 10000, "samples per input (random), PGD iterations (pgd, gumbel, embedding) or model evaluations (flip)")
		fl.IntVar(&f.sentences, "sentences", 0, "text: this many sentences of --split, drawn at random with --seed")
		fl.StringArrayVar(&f.texts, "text", nil, "text: a source sentence of your own (repeatable) instead of the corpus's")
		fl.StringVar(&f.textFile, "text-file", "", "text: a file of your own source sentences, one per line (blank lines skipped), instead of the corpus's")
		f.s.RegisterTextFlags(fl, true)
		f.corpus.RegisterFlags(c.Flags())
	}
	fl.IntVar(&f.MaxLen, "max-len", -1, "K̂: success means an output longer than this (default: the original output's length)")
	fl.Lookup("max-len").DefValue = "0" // −1 is a sentinel the usage explains; "0" hides it from the help
	fl.IntVar(&f.batch, "batch", 50, "images per batched PGD run, or samples per decode batch ÷ 20 for random search; text: sentences run side by side (at most 25), random search decoding 8 draws per sentence at a time (speed only: results do not depend on it)")
	f.s.RegisterFlags(fl)
}

// config builds the experiment's configuration from the flags and checks
// it; the data and samples come later.
func (f *attackFlags) config(c *cobra.Command, a *app, shard experiment.Shard, m *experiment.Model) (experiment.AttackConfig, error) {
	k, err := f.K(c.Flags().Changed)
	if err != nil {
		return experiment.AttackConfig{}, err
	}
	cfg := experiment.AttackConfig{
		Model: m, Eps: f.Eps, Method: f.method, Batch: f.batch,
		Settings: experiment.AttackSettings{MaxLen: k, MaxSteps: f.MaxSteps, Budget: f.budget, Seed: f.Seed,
			Loss: f.s.Loss, LR: f.s.LR, Clip: f.s.Clip, Restarts: f.s.Restarts, EarlyStop: f.s.EarlyStop},
		Out: f.Out, WitnessDir: f.witnessDir, Shard: shard, Logf: a.logf,
	}
	return cfg, usage(cfg.Validate())
}

func newAttackCmd(a *app) *cobra.Command {
	f := &attackFlags{}
	c := &cobra.Command{
		Use:   "attack",
		Short: "Search for inputs that lengthen the greedy output (random search or PGD on the proxy objective)",
		Long: `For a text model (a translator) see below.

Attack images within S(x, δ) = {x' : ‖x' − x‖∞ ≤ δ} ∩ [min, max]ⁿ: random search
draws --budget uniform samples per image; PGD minimises the paper's proxy J̃ (or the
eos log-probability) with Adam for --budget iterations, all images batched together.
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
			if f.Model == "" {
				return usagef("--model is required")
			}
			if cfg, err := model.ReadConfig(f.Model); err == nil && cfg.InputKind() == model.Tokens {
				return runTextAttack(c, a, f)
			}
			if !slices.Contains(experiment.MethodNames(false), f.method) {
				return usagef("--method %q: want %s", f.method, strings.Join(experiment.MethodNames(false), " or "))
			}
			if err := experiment.CheckKindFlags(model.Continuous, f.Model, c.Flags().Changed); err != nil {
				return err
			}
			if err := experiment.CheckRead(c.Flags().Changed, []string{f.method}, experiment.MethodNames(false)); err != nil {
				return err
			}
			shard, m, err := f.loadModel(c, a)
			if err != nil {
				return err
			}
			cfg, err := f.config(c, a, shard, m)
			if err != nil {
				return err
			}
			if cfg.Data, cfg.Samples, err = f.loadData(c.Context(), a, m); err != nil {
				return err
			}
			return runAttack(c, a, cfg)
		},
	}
	f.register(c, true)
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
		return a.emit(r, func(w io.Writer) { fmt.Fprintln(w, attackLine(r)) })
	})
}

// attackLine words an attack record: the original and adversarial lengths
// (marked when the output reached the step cap), the verdict, and for a
// sentence the adversarial source.
func attackLine(r experiment.AttackRecord) string {
	what := fmt.Sprintf("image %d eps %g %s", r.Sample, r.Eps, r.Method)
	if r.IsText() {
		what = fmt.Sprintf("sentence %d eps %g %s", r.Sample, r.Eps, r.Method)
	}
	if r.Error != "" {
		return fmt.Sprintf("%s: FAILED: %s", what, r.Error)
	}
	adv, verdict := fmt.Sprint(r.AdvLength), "not lengthened"
	if !r.Stopped {
		adv = fmt.Sprintf("≥%d (no eos)", r.AdvLength)
	}
	if r.Success {
		verdict = "LENGTHENED"
	}
	if !r.IsText() {
		return fmt.Sprintf("%s: length %d → %s (K̂ %d) %s, margin %.2g, %d evals, %.1fs", what, r.OrigLength, adv, r.K, verdict, r.MinRelMargin, r.Evals, r.Seconds)
	}
	src := r.AdvText
	switch {
	case r.Redacted && r.AdvSubs != nil:
		src = "(" + r.RedactedSource() + "; positions and ids in the record)"
	case src == "":
		src = "(embeddings: " + r.Witness + ")"
	}
	return fmt.Sprintf("%s: length %d → %s (K̂ %d) %s, %d evals, %.1fs: %q", what, r.OrigLength, adv, r.K, verdict, r.Evals, r.Seconds, src)
}

// textConfig builds a text attack's configuration from the flags, with
// the method's defaults for what they leave out (Method.TextDefaults).
func (f *attackFlags) textConfig(c *cobra.Command, a *app, method string) (experiment.AttackConfig, error) {
	def, ok := experiment.LookupMethod(method)
	if !ok || !def.Text {
		return experiment.AttackConfig{}, usagef("--method %q: a text model takes %s", method, orList(experiment.TextMethods))
	}
	if err := experiment.CheckKindFlags(model.Tokens, f.Model, c.Flags().Changed); err != nil {
		return experiment.AttackConfig{}, err
	}
	if _, err := attack.ParseLoss(f.s.Loss); err != nil {
		return experiment.AttackConfig{}, usagef("--loss: %v", err)
	}
	k, err := f.K(c.Flags().Changed)
	if err != nil {
		return experiment.AttackConfig{}, err
	}
	s := f.s
	s.MaxLen, s.MaxSteps, s.Budget, s.Seed, s.Restarts, s.EarlyStop = k, f.MaxSteps, f.budget, f.Seed, 0, false
	s = def.TextDefaults(s,
		func(setting string) bool { return c.Flags().Changed(strings.ReplaceAll(setting, "_", "-")) })
	return experiment.AttackConfig{Eps: f.Eps, Method: method, Batch: min(f.batch, experiment.MaxTextBatch), Settings: s,
		Out: f.Out, WitnessDir: f.witnessDir, Logf: a.logf}, nil
}

// orList lists names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// textData loads the sentences the flags pick: the model's corpus's or
// the user's own (--text, --text-file).
func (f *attackFlags) textData(c *cobra.Command, m *experiment.Model) (experiment.TextData, []int, error) {
	sel := experiment.TextSelection{Sentences: f.sentences, Indices: f.Indices, Split: f.Split, Seed: f.Seed, Corpus: f.corpus,
		SplitSeedGiven: c.Flags().Changed("split-seed"), Texts: f.texts, File: f.textFile}
	if err := sel.ValidateFlags(c.Flags().Changed); err != nil {
		return experiment.TextData{}, nil, err
	}
	return sel.Select(m)
}

// textModel checks a text run's output and step flags, then loads the
// model.
func (f *attackFlags) textModel(c *cobra.Command, a *app) (experiment.Shard, *experiment.Model, error) {
	if err := f.ValidateText(); err != nil {
		return experiment.Shard{}, nil, err
	}
	shard, err := f.ResolveShard(a.getenv)
	if err != nil {
		return experiment.Shard{}, nil, err
	}
	if err := checkSteps(c, f.MaxSteps); err != nil {
		return experiment.Shard{}, nil, err
	}
	m, err := experiment.LoadModel(f.Model)
	if err != nil {
		return experiment.Shard{}, nil, err
	}
	return shard, m, nil
}

// runTextAttack is lenspec attack on a text model.
func runTextAttack(c *cobra.Command, a *app, f *attackFlags) error {
	cfg, err := f.textConfig(c, a, f.method)
	if err != nil {
		return err
	}
	if err := experiment.CheckRead(c.Flags().Changed, []string{f.method}, experiment.TextMethods); err != nil {
		return err
	}
	var m *experiment.Model
	if cfg.Shard, m, err = f.textModel(c, a); err != nil {
		return err
	}
	cfg.Model = m
	if err := cfg.Validate(); err != nil {
		return usage(err)
	}
	if cfg.Data, cfg.Samples, err = f.textData(c, m); err != nil {
		return err
	}
	return runAttack(c, a, cfg)
}
