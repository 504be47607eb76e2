package main

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/internal/progress"
	"github.com/lenspec/lenspec/model"
	"github.com/spf13/cobra"
)

// runFlags are what attack and verify runs share: the model, the data, the
// samples, the radii, the output and the shard.
type runFlags struct {
	modelDir, split, out, shard string
	eps                         []float64
	images                      int
	indices                     []int
	seed, dataSeed              uint64
	maxLen, maxSteps            int
}

func (r *runFlags) register(c *cobra.Command, samples bool) {
	f := c.Flags()
	f.StringVar(&r.modelDir, "model", "", "model directory")
	if samples {
		f.Float64SliceVar(&r.eps, "eps", nil, "L∞ radius δ (repeatable or comma-separated)")
		f.IntVar(&r.images, "images", 0, "this many test images, drawn at random with --seed")
		f.IntSliceVar(&r.indices, "index", nil, "these canvas indices")
		f.StringVar(&r.out, "out", "", "results file (JSONL); rerunning with the same file skips finished records")
	}
	f.IntVar(&r.maxSteps, "max-steps", 0, fmt.Sprintf("decoding step cap, 1..%d (default: the model's max_steps)", model.MaxStepCap))
	f.Uint64Var(&r.seed, "seed", 1, "seed for image selection and every per-sample random choice (PCG(seed, sample))")
	f.Uint64Var(&r.dataSeed, "data-seed", defaultDataSeed, "Multi-MNIST generation seed")
	f.StringVar(&r.split, "split", "test", "train or test")
	f.StringVar(&r.shard, "shard", "", "k/n: run only the k-th of n interleaved parts, into its own file (default: from JOB_COMPLETION_INDEX/JOB_COMPLETIONS or SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT when set)")
}

// check validates the shared flags before any work.
func (r *runFlags) check(c *cobra.Command, a *app) (experiment.Shard, error) {
	if r.modelDir == "" {
		return experiment.Shard{}, usagef("--model is required")
	}
	if r.out == "" {
		return experiment.Shard{}, usagef("--out is required")
	}
	if len(r.eps) == 0 {
		return experiment.Shard{}, usagef("--eps is required")
	}
	for _, e := range r.eps {
		if !(e >= 0) || math.IsInf(e, 0) {
			return experiment.Shard{}, usagef("--eps %v: want a finite radius ≥ 0", e)
		}
	}
	if r.images < 0 {
		return experiment.Shard{}, usagef("--images %d: want a positive number", r.images)
	}
	if (r.images > 0) == (len(r.indices) > 0) {
		return experiment.Shard{}, usagef("give exactly one of --images N or --index I")
	}
	if err := checkSteps(c, r.maxSteps); err != nil {
		return experiment.Shard{}, err
	}
	if err := checkSplit(r.split); err != nil {
		return experiment.Shard{}, err
	}
	shard, err := r.parseShard(a)
	if err != nil {
		return experiment.Shard{}, err
	}
	// Refuse /dev/null, /dev/full or a FIFO before any work.
	if err := fileio.CheckRegular(shard.Path(r.out)); err != nil {
		return experiment.Shard{}, fmt.Errorf("--out: %w", err)
	}
	return shard, nil
}

// parseShard reads --shard, or the batch system's environment.
func (r *runFlags) parseShard(a *app) (experiment.Shard, error) {
	if r.shard != "" {
		s, err := experiment.ParseShard(r.shard)
		return s, usage(err)
	}
	s, _, err := experiment.ShardFromEnv(a.getenv)
	return s, usage(err)
}

// k is --max-len: −1 (the default of each command) unless set, then ≥ 0.
func (r *runFlags) k(c *cobra.Command) (int, error) {
	if !c.Flags().Changed("max-len") {
		return -1, nil
	}
	if r.maxLen < 0 {
		return 0, usagef("--max-len %d: want K̂ ≥ 0", r.maxLen)
	}
	return r.maxLen, nil
}

// loadModel checks the shared flags, then loads the model.
func (r *runFlags) loadModel(c *cobra.Command, a *app) (experiment.Shard, *experiment.Model, error) {
	shard, err := r.check(c, a)
	if err != nil {
		return experiment.Shard{}, nil, err
	}
	m, err := experiment.LoadModel(r.modelDir)
	return shard, m, err
}

// loadData loads the data for model m, and picks the samples.
func (r *runFlags) loadData(ctx context.Context, a *app, m *experiment.Model) (experiment.Data, []int, error) {
	data, err := a.modelData(ctx, m.D32.Input(), r.dataSeed, r.split)
	if err != nil {
		return experiment.Data{}, nil, err
	}
	samples, err := experiment.PickSamples(r.images, r.indices, data.Source.Len(), r.seed)
	if err != nil {
		return experiment.Data{}, nil, usage(err)
	}
	return data, samples, nil
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
	method, loss string
	budget       int
	batch        int
	pgd          attack.PGDOptions
	witnessDir   string
}

func (f *attackFlags) register(c *cobra.Command, samples bool) {
	f.runFlags.register(c, samples)
	fl := c.Flags()
	if samples {
		fl.StringVar(&f.method, "method", experiment.MethodPGD, "random or pgd")
		fl.StringVar(&f.witnessDir, "witness-dir", "", "where witnesses go (default: next to --out, in OUT.witnesses/)")
		fl.IntVar(&f.budget, "budget", 10000, "samples per image (random) or PGD iterations (pgd)")
	}
	fl.IntVar(&f.maxLen, "max-len", -1, "K̂: success means an output longer than this (default: the original output's length)")
	fl.IntVar(&f.batch, "batch", 50, "images per batched PGD run, or samples per decode batch ÷ 20 for random search (speed only: results do not depend on it)")
	fl.Float64Var(&f.pgd.LR, "lr", 0.0005, "PGD Adam learning rate")
	fl.Float64Var(&f.pgd.Eps, "clip", 1, "ε of the proxy J̃ (a step stops pushing once eos trails by ε)")
	fl.StringVar(&f.loss, "loss", string(attack.LossMargin), "PGD loss: margin (the paper's J̃) or eos-logprob (NICGSlowDown)")
	fl.IntVar(&f.pgd.Restarts, "restarts", 1, "PGD runs per image (the first from the image itself, the rest from random points)")
	fl.BoolVar(&f.pgd.EarlyStop, "early-stop", true, "stop a PGD run once its output reaches the step cap")
}

// config builds the experiment's configuration from the flags and checks
// it; the data and samples come later.
func (f *attackFlags) config(c *cobra.Command, a *app, shard experiment.Shard, m *experiment.Model) (experiment.AttackConfig, error) {
	k, err := f.k(c)
	if err != nil {
		return experiment.AttackConfig{}, err
	}
	cfg := experiment.AttackConfig{
		Model: m, Eps: f.eps, Method: f.method, Batch: f.batch,
		Settings: experiment.AttackSettings{MaxLen: k, MaxSteps: f.maxSteps, Budget: f.budget, Seed: f.seed,
			Loss: f.loss, LR: f.pgd.LR, Clip: f.pgd.Eps, Restarts: f.pgd.Restarts, EarlyStop: f.pgd.EarlyStop},
		Out: f.out, WitnessDir: f.witnessDir, Shard: shard, Logf: a.logf,
	}
	return cfg, usage(cfg.Validate())
}

func newAttackCmd(a *app) *cobra.Command {
	f := &attackFlags{}
	c := &cobra.Command{
		Use:   "attack",
		Short: "Search for inputs that lengthen the greedy output (random search or PGD on the proxy objective)",
		Long: `Attack images within S(x, δ) = {x' : ‖x' − x‖∞ ≤ δ} ∩ [min, max]ⁿ: random search
draws --budget uniform samples per image; PGD minimises the paper's proxy J̃ (or the
eos log-probability) with Adam for --budget iterations, all images batched together.
Every best input is replayed in float64; only replayed lengths are reported, with the
smallest top-2 logit margin of the path. One JSON line per (image, δ, method) goes to
--out, keyed by the model's content and every setting that changes a result; successful
witnesses are saved as safetensors (exact values) and PNG, named by their record's key.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if f.method != experiment.MethodRandom && f.method != experiment.MethodPGD {
				return usagef("--method %q: want random or pgd", f.method)
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
			progress, finish := a.bars()
			defer finish()
			cfg.Progress = progress
			return experiment.RunAttack(c.Context(), cfg, func(r experiment.AttackRecord) error {
				finish()
				return a.emit(r, func(w io.Writer) { fmt.Fprintln(w, attackLine(r)) })
			})
		},
	}
	f.register(c, true)
	return c
}

func attackLine(r experiment.AttackRecord) string {
	if r.Error != "" {
		return fmt.Sprintf("image %d eps %g %s: FAILED: %s", r.Sample, r.Eps, r.Method, r.Error)
	}
	adv := fmt.Sprint(r.AdvLength)
	if !r.Stopped {
		adv = fmt.Sprintf("≥%d (no eos)", r.AdvLength)
	}
	verdict := "not lengthened"
	if r.Success {
		verdict = "LENGTHENED"
	}
	return fmt.Sprintf("image %d eps %g %s: length %d → %s (K̂ %d) %s, margin %.2g, %d evals, %.1fs",
		r.Sample, r.Eps, r.Method, r.OrigLength, adv, r.K, verdict, r.MinRelMargin, r.Evals, r.Seconds)
}
