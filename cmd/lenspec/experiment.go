package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/lenspec/lenspec/experiment"
	"github.com/spf13/cobra"
)

// paperAttackEps is the radius grid of the paper's Multi-MNIST attack
// experiment (§5.2).
var paperAttackEps = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5}

// paperVerifyEps spans all-robust to all-vulnerable on the shipped model
// and contains the attack experiment's grid.
var paperVerifyEps = []float64{0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5}

func newExperimentCmd(a *app) *cobra.Command {
	return group("experiment", "Reproduce the paper's experiments end to end (resumable)", newAttackExperimentCmd(a), newVerifyExperimentCmd(a), newNMTAttackExperimentCmd(a), newCaptionAttackCmd(a))
}

func newAttackExperimentCmd(a *app) *cobra.Command {
	f := &experiment.AttackFlags{}
	var outDir string
	var samples, steps int
	c := &cobra.Command{
		Use:   "mmnist-attack",
		Short: "The paper's Multi-MNIST attack experiment: random search vs PGD over a δ grid, figure and table",
		Long: `Attack --images random test images at every δ of --eps with random search
(--samples uniform samples per image) and PGD (--steps Adam iterations, lr 0.0005),
then draw the distribution of output lengths per δ (PNG and SVG) and a table of this
experiment's records. Results go to OUT/attacks.jsonl as they are produced (with
--shard k/n, to OUT/attacks.shard-k-of-n.jsonl); rerunning resumes.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if outDir == "" {
				return usagef("--out is required")
			}
			if err := experiment.CheckBudget("samples", samples); err != nil {
				return err
			}
			if err := experiment.CheckBudget("steps", steps); err != nil {
				return err
			}
			f.Out, f.WitnessDir = filepath.Join(outDir, "attacks.jsonl"), filepath.Join(outDir, "witnesses")
			shard, m, err := f.Load(a.env(c))
			if err != nil {
				return err
			}
			var cfgs []experiment.AttackConfig
			for i, method := range []string{experiment.MethodRandom, experiment.MethodPGD} {
				f.Method, f.Budget = method, []int{samples, steps}[i]
				cfg, err := f.Config(a.env(c), shard, m)
				if err != nil {
					return err
				}
				cfgs = append(cfgs, cfg)
			}
			data, picked, err := f.Data(c.Context(), a.env(c), m)
			if err != nil {
				return err
			}
			for i := range cfgs {
				cfgs[i].Data, cfgs[i].Samples = data, picked
			}
			return runExperiment(c, a, cfgs, f.Eps, outDir, "Multi-MNIST: output length under attack")
		},
	}
	f.RegisterFlags(c.Flags(), false)
	fl := c.Flags()
	fl.StringVar(&outDir, "out", "", "output directory (attacks.jsonl, witnesses/, figure, table)")
	fl.IntVar(&f.Images, "images", 100, "number of random test images")
	fl.Float64SliceVar(&f.Eps, "eps", paperAttackEps, "radius grid")
	fl.IntVar(&samples, "samples", 10000, "random-search samples per image")
	fl.IntVar(&steps, "steps", 10000, "PGD iterations")
	return c
}

func newVerifyExperimentCmd(a *app) *cobra.Command {
	f := &experiment.VerifyFlags{}
	var outDir string
	c := &cobra.Command{
		Use:   "mmnist-verify",
		Short: "The paper's verification experiment: robust / vulnerable / unknown per δ, figure and table",
		Long: `Verify --images random test images at every δ of --eps against K̂ = the length of
the ground-truth label ("longer than the ground truth"), with --timeout per sample.
Results go to OUT/verify.jsonl as they are produced (rerunning resumes); then the
stacked bar chart of verdict proportions per δ (PNG, SVG) and a table of this
experiment's records are written.

With --shard k/n (or a Kubernetes Indexed Job's or Slurm array's environment), n
processes share the list: each writes OUT/verify.shard-k-of-n.jsonl, and each
summary covers every shard file in OUT (docs/scale-out.md).`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if outDir == "" {
				return usagef("--out is required")
			}
			f.Out = filepath.Join(outDir, "verify.jsonl")
			cfg, err := f.Verification(c.Context(), a.env(c))
			if err != nil {
				return err
			}
			cfg.WitnessDir = filepath.Join(outDir, "witnesses")
			progress, finish := a.bars()
			defer finish()
			cfg.Progress = progress
			sum, err := experiment.RunVerifyExperiment(c.Context(), cfg, outDir, "Multi-MNIST: can an input within δ decode longer than the label?")
			finish()
			return a.summary(sum, func(w io.Writer) { fmt.Fprint(w, sum.Text()) }, err)
		},
	}
	f.RegisterFlags(c.Flags(), false)
	fl := c.Flags()
	fl.StringVar(&outDir, "out", "", "output directory (verify.jsonl, witnesses, figure, table)")
	fl.IntVar(&f.Images, "images", 100, "number of random test images")
	fl.Float64SliceVar(&f.Eps, "eps", paperVerifyEps, "radius grid")
	return c
}

// nMTAttackExperimentHelp is the command's long help.
const nMTAttackExperimentHelp = `Attack --sentences random sentences of the translator's corpus (--split) at every δ of
--eps with every method of --methods (random search, PGD through a Gumbel-softmax
relaxation, PGD on the embeddings, and lenspec's gradient-guided substitution),
then draw the output-length histograms per δ and method with a "> 100" bin (PNG
and SVG; the paper's figures 4 and 5) and a table: outputs longer than 100 tokens
per method, the longest output and its input, the largest output/input length
ratio, and (I, O, I', O') examples. Results go to OUT/nmt-attacks.jsonl as they are
produced; rerunning resumes.`

// runExperiment runs an attack experiment's methods over the radii eps, with progress bars, and prints its summary.
func runExperiment(c *cobra.Command, a *app, cfgs []experiment.AttackConfig, eps []float64, outDir, title string) error {
	progress, finish := a.bars()
	defer finish()
	for i := range cfgs {
		cfgs[i].Progress = progress
	}
	sum, err := experiment.RunAttackExperiment(c.Context(), cfgs, eps, outDir, title)
	finish()
	return a.summary(sum, func(w io.Writer) { fmt.Fprint(w, sum.Text()) }, err)
}

// summary prints an experiment's summary v as emit does, and returns
// err: an experiment whose only failure is units recorded as crashed
// (experiment.CrashedError) summarises what it has, and the command prints
// that before failing with the crashed units' names.
func (a *app) summary(v any, text func(io.Writer), err error) error {
	if err != nil && !errors.As(err, new(*experiment.CrashedError)) {
		return err
	}
	if perr := a.emit(v, text); perr != nil {
		return perr
	}
	return err
}

func newNMTAttackExperimentCmd(a *app) *cobra.Command {
	f := &experiment.AttackFlags{}
	var outDir string
	var methods []string
	var budgets experiment.Budgets
	c := &cobra.Command{
		Use:   "nmt-attack",
		Short: "The paper's NMT attack experiment: random search, Gumbel PGD, embedding PGD and flip over a δ grid",
		Long:  nMTAttackExperimentHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if outDir == "" {
				return usagef("--out is required")
			}
			f.Out, f.WitnessDir = filepath.Join(outDir, "nmt-attacks.jsonl"), filepath.Join(outDir, "witnesses")
			cfgs, err := f.TextAttacks(a.env(c), methods, budgets)
			if err != nil {
				return err
			}
			return runExperiment(c, a, cfgs, f.Eps, outDir, "NMT: output length under attack")
		},
	}
	f.RegisterFlags(c.Flags(), false)
	fl := c.Flags()
	fl.StringVar(&outDir, "out", "", "output directory (nmt-attacks.jsonl, witnesses/, figure, table)")
	fl.IntVar(&f.Sentences, "sentences", 100, "number of random sentences of --split")
	fl.Float64SliceVar(&f.Eps, "eps", []float64{0.3, 0.5, 1}, "δ grid: the fraction of a sentence's tokens that may change")
	fl.StringSliceVar(&methods, "methods", experiment.TextMethods, "methods to run")
	budgets = experiment.RegisterBudgetFlags(fl)
	f.Settings.RegisterTextFlags(fl, false)
	f.Corpus.RegisterFlags(fl)
	return c
}
