package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/internal/progress"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/results"
	"github.com/lenspec/lenspec/safetensors"
	"github.com/spf13/cobra"
)

// attackRecord is one line of an attack results file: one (image, eps,
// method) unit of work. Lengths are float64 replays.
type attackRecord struct {
	Model      string  `json:"model"`
	Split      string  `json:"split"`
	Image      int     `json:"image"`
	Eps        float64 `json:"eps"`
	Method     string  `json:"method"`
	Loss       string  `json:"loss"`
	Label      []int   `json:"label"`
	K          int     `json:"k"`
	OrigLength int     `json:"orig_length"`
	OrigTokens []int   `json:"orig_tokens"`
	// AdvLength is the replayed output length; with Stopped false the output
	// had no eos within MaxSteps and AdvLength is the cap (ℓ ≥ cap).
	AdvLength    int     `json:"adv_length"`
	AdvTokens    []int   `json:"adv_tokens"`
	Stopped      bool    `json:"stopped"`
	MaxSteps     int     `json:"max_steps"`
	Success      bool    `json:"success"` // replayed ℓ > K, no tie on the path
	MinRelMargin float64 `json:"min_rel_margin"`
	Found32      int     `json:"found_float32_length"`
	Evals        int64   `json:"evals"`
	Steps        int     `json:"pgd_steps,omitempty"`
	Restarts     int     `json:"restarts,omitempty"`
	Budget       int     `json:"budget"`
	Seed         uint64  `json:"seed"`
	Seconds      float64 `json:"seconds"`
	Witness      string  `json:"witness,omitempty"`
	WitnessPNG   string  `json:"witness_png,omitempty"`
	// LengthCounts[ℓ] counts random samples by float32 output length; the
	// last entry counts samples that did not stop.
	LengthCounts []int64 `json:"length_counts,omitempty"`
}

var attackKey = results.KeyFields("model", "split", "image", "eps", "method", "loss", "budget", "seed")

// attackConfig is everything one attack run needs.
type attackConfig struct {
	modelDir, split, out, witnessDir string
	method                           string
	eps                              []float64
	k, maxSteps                      int
	images                           int
	indices                          []int
	budget                           int
	seed                             uint64
	dataSeed                         uint64
	batch                            int
	pgd                              attack.PGDOptions
	loss                             string
}

func (cfg *attackConfig) flags(c *cobra.Command, method bool) {
	f := c.Flags()
	f.StringVar(&cfg.modelDir, "model", "", "model directory")
	if method {
		f.StringVar(&cfg.method, "method", "pgd", "random or pgd")
		f.Float64SliceVar(&cfg.eps, "eps", nil, "L∞ radius δ (repeatable or comma-separated)")
		f.IntVar(&cfg.images, "images", 0, "attack this many test images, drawn at random with --seed")
		f.IntSliceVar(&cfg.indices, "index", nil, "attack these canvas indices")
		f.StringVar(&cfg.out, "out", "", "results file (JSONL); rerunning with the same file skips finished records")
	}
	f.IntVar(&cfg.k, "max-len", -1, "K̂: success means an output longer than this (default: the original output's length)")
	f.IntVar(&cfg.maxSteps, "max-steps", 0, "decoding step cap (default: the model's max_steps)")
	f.IntVar(&cfg.budget, "budget", 10000, "samples per image (random) or PGD iterations (pgd)")
	f.Uint64Var(&cfg.seed, "seed", 1, "seed for image selection, sampling and restarts")
	f.Uint64Var(&cfg.dataSeed, "data-seed", defaultDataSeed, "Multi-MNIST generation seed")
	f.StringVar(&cfg.split, "split", "test", "train or test")
	f.IntVar(&cfg.batch, "batch", 50, "images per batched PGD run (results are written after each), or samples per decode batch for random search ×20")
	f.Float64Var(&cfg.pgd.LR, "lr", 0.0005, "PGD Adam learning rate")
	f.Float64Var(&cfg.pgd.Eps, "clip", 1, "ε of the proxy J̃ (a step stops pushing once eos trails by ε)")
	f.StringVar(&cfg.loss, "loss", string(attack.LossMargin), "PGD loss: margin (the paper's J̃) or eos-logprob (NICGSlowDown)")
	f.IntVar(&cfg.pgd.Restarts, "restarts", 1, "PGD runs per image (the first from the image itself, the rest from random points)")
	f.BoolVar(&cfg.pgd.EarlyStop, "early-stop", true, "stop a PGD run once its output reaches the step cap")
	f.StringVar(&cfg.witnessDir, "witness-dir", "", "where witnesses go (default: next to --out, in OUT.witnesses/)")
}

func (cfg *attackConfig) validate() error {
	if cfg.modelDir == "" {
		return usagef("--model is required")
	}
	if cfg.method != "random" && cfg.method != "pgd" {
		return usagef("--method %q: want random or pgd", cfg.method)
	}
	if err := checkRun(cfg.out, cfg.eps, cfg.images, cfg.indices); err != nil {
		return err
	}
	if cfg.budget < 0 || cfg.batch <= 0 || cfg.pgd.Restarts < 1 || !(cfg.pgd.LR > 0) || !(cfg.pgd.Eps > 0) {
		return usagef("--budget must be ≥ 0; --batch, --restarts, --lr and --clip positive")
	}
	l, err := attack.ParseLoss(cfg.loss)
	if err != nil {
		return usageError{err}
	}
	cfg.pgd.Loss = l
	if cfg.witnessDir == "" {
		cfg.witnessDir = strings.TrimSuffix(cfg.out, filepath.Ext(cfg.out)) + ".witnesses"
	}
	return nil
}

// checkRun validates what attack and verify runs share: an output file, a
// radius grid and one way of choosing images.
func checkRun(out string, eps []float64, images int, indices []int) error {
	if out == "" {
		return usagef("--out is required")
	}
	if len(eps) == 0 {
		return usagef("--eps is required")
	}
	for _, e := range eps {
		if !(e >= 0) || e > 2 {
			return usagef("--eps %v: want a radius in [0, 2]", e)
		}
	}
	if (images > 0) == (len(indices) > 0) {
		return usagef("give exactly one of --images N or --index I")
	}
	return nil
}

// pickImages returns the canvas indices to attack: explicit ones, or n
// drawn without replacement with the seed (the paper's "100 random inputs").
func pickImages(n int, indices []int, total int, seed uint64) ([]int, error) {
	if len(indices) > 0 {
		for _, i := range indices {
			if i < 0 || i >= total {
				return nil, usagef("--index %d outside the split of %d", i, total)
			}
		}
		return indices, nil
	}
	if n > total {
		return nil, usagef("--images %d: the split has only %d", n, total)
	}
	return rand.New(rand.NewPCG(seed, 0x696d67)).Perm(total)[:n], nil
}

func newAttackCmd(a *app) *cobra.Command {
	cfg := &attackConfig{}
	c := &cobra.Command{
		Use:   "attack",
		Short: "Search for inputs that lengthen the greedy output (random search or PGD on the proxy objective)",
		Long: `Attack images within S(x, δ) = {x' : ‖x' − x‖∞ ≤ δ} ∩ [-1, 1]ⁿ: random search
draws --budget uniform samples per image; PGD minimises the paper's proxy J̃ (or the
eos log-probability) with Adam for --budget iterations, all images batched together.
Every best input is replayed in float64; only replayed lengths are reported, with the
smallest top-2 logit margin of the path. One JSON line per (image, eps, method) goes to
--out; successful witnesses are saved as safetensors (exact values) and PNG.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cfg.validate(); err != nil {
				return err
			}
			recs, err := runAttacks(c.Context(), a, cfg)
			if err != nil {
				return err
			}
			for _, r := range recs {
				if err := a.emit(r, func(w io.Writer) { fmt.Fprintln(w, r.line()) }); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cfg.flags(c, true)
	return c
}

func (r attackRecord) line() string {
	adv := fmt.Sprint(r.AdvLength)
	if !r.Stopped {
		adv = fmt.Sprintf("≥%d (no eos)", r.AdvLength)
	}
	verdict := "not lengthened"
	if r.Success {
		verdict = "LENGTHENED"
	}
	return fmt.Sprintf("image %d eps %g %s: length %d → %s (K̂ %d) %s, margin %.2g, %d evals, %.1fs",
		r.Image, r.Eps, r.Method, r.OrigLength, adv, r.K, verdict, r.MinRelMargin, r.Evals, r.Seconds)
}

// runAttacks runs every (image, eps) not yet in the results file and
// returns the new records.
func runAttacks(ctx context.Context, a *app, cfg *attackConfig) ([]attackRecord, error) {
	m32, err := model.Load[float32](cfg.modelDir)
	if err != nil {
		return nil, err
	}
	m64 := model.Cast[float64](m32)
	maxSteps := cfg.maxSteps
	if maxSteps <= 0 {
		maxSteps = m32.Cfg.MaxSteps
	}
	_, ds, err := a.dataset(ctx, cfg.dataSeed, cfg.split)
	if err != nil {
		return nil, err
	}
	imgs, err := pickImages(cfg.images, cfg.indices, ds.N, cfg.seed)
	if err != nil {
		return nil, err
	}
	if dir := filepath.Dir(cfg.out); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	f, err := results.Open(cfg.out, attackKey)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Len() > 0 {
		a.logf("%s: %d records already done; resuming", cfg.out, f.Len())
	}
	loss := ""
	if cfg.method == "pgd" {
		loss = string(cfg.pgd.Loss)
	}
	base := attackRecord{Model: cfg.modelDir, Split: cfg.split, Method: cfg.method, Loss: loss, MaxSteps: maxSteps, Budget: cfg.budget, Seed: cfg.seed}
	keyOf := func(img int, eps float64) string {
		r := base
		r.Image, r.Eps = img, eps
		k, _ := attackKey(mustJSON(r))
		return k
	}
	size := m32.InputSize()
	var out []attackRecord
	for _, eps := range cfg.eps {
		var todo []int
		for _, img := range imgs {
			if !f.Done(keyOf(img, eps)) {
				todo = append(todo, img)
			}
		}
		if len(todo) == 0 {
			continue
		}
		targets := make([]attack.Target, len(todo))
		for i, img := range todo {
			x0 := make([]float64, size)
			multimnist.Normalize(x0, ds, []int{img})
			if targets[i], err = attack.NewTarget(ctx, m64, x0, eps, cfg.k, maxSteps, m32.Cfg.Input.Min, m32.Cfg.Input.Max); err != nil {
				return nil, err
			}
		}
		finish := func(i int, o attack.Outcome, secs float64) error {
			img := todo[i]
			tg := targets[i]
			r := base
			r.Image, r.Eps, r.Label, r.K = img, eps, ds.Labels[img], tg.Spec.K
			r.OrigLength, r.OrigTokens = len(tg.Original.Tokens), nonNil(tg.Original.Tokens)
			r.AdvLength, r.AdvTokens, r.Stopped = len(o.Result.Tokens), nonNil(o.Result.Tokens), o.Result.Stopped
			r.Success, r.MinRelMargin, r.Found32 = o.Success, o.Result.MinRelMargin, o.Found32
			r.Evals, r.Steps, r.Seconds, r.LengthCounts = o.Evals, o.Steps, secs, o.LengthCounts
			if cfg.method == "pgd" {
				r.Restarts = cfg.pgd.Restarts
			}
			if o.Success {
				if r.Witness, r.WitnessPNG, err = saveWitness(cfg.witnessDir, r, o.Input, m32.Cfg); err != nil {
					return err
				}
			}
			if err := f.Append(keyOf(img, eps), r); err != nil {
				return err
			}
			out = append(out, r)
			return nil
		}
		switch cfg.method {
		case "random":
			rep := progress.New(fmt.Sprintf("random δ=%g", eps), len(todo)*cfg.budget, a.quiet)
			best := 0
			for i, tg := range targets {
				start := time.Now()
				done0 := i * cfg.budget
				o, err := attack.RandomSearch(ctx, m32, m64, tg, attack.RandomOptions{
					Samples: cfg.budget, Batch: cfg.batch * 20, MaxSteps: maxSteps, Seed: cfg.seed ^ uint64(todo[i])*0x9e3779b97f4a7c15,
					Progress: func(done, b int) { best = max(best, b); rep.Set(done0+done, fmt.Sprintf("longest %d", best)) },
				})
				if err != nil {
					rep.Finish()
					return nil, err
				}
				if err := finish(i, o, time.Since(start).Seconds()); err != nil {
					rep.Finish()
					return nil, err
				}
			}
			rep.Finish()
		case "pgd":
			for lo := 0; lo < len(targets); lo += cfg.batch {
				hi := min(len(targets), lo+cfg.batch)
				opt := cfg.pgd
				opt.Steps, opt.MaxSteps, opt.Seed = cfg.budget, maxSteps, cfg.seed^uint64(lo)
				rep := progress.New(fmt.Sprintf("pgd δ=%g images %d-%d/%d", eps, lo+1, hi, len(targets)), cfg.budget, a.quiet)
				opt.Progress = func(step, n int) { rep.Set(step, fmt.Sprintf("lengthened %d/%d", n, hi-lo)) }
				start := time.Now()
				outs, err := attack.PGD(ctx, m32, m64, targets[lo:hi], opt)
				rep.Finish()
				if err != nil {
					return nil, err
				}
				secs := time.Since(start).Seconds() / float64(hi-lo)
				for i, o := range outs {
					if err := finish(lo+i, o, secs); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return out, nil
}

func nonNil(x []int) []int {
	if x == nil {
		return []int{}
	}
	return x
}

// saveWitness writes the exact input (safetensors, float64) and a PNG for
// people.
func saveWitness(dir string, r attackRecord, x []float64, cfg model.Config) (st, png string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	name := fmt.Sprintf("%s-%d-eps%g-%s", r.Split, r.Image, r.Eps, r.Method)
	st = filepath.Join(dir, name+".safetensors")
	png = filepath.Join(dir, name+".png")
	in := cfg.Input
	f := &safetensors.File{
		Metadata: map[string]string{
			"model": r.Model, "split": r.Split, "image": fmt.Sprint(r.Image), "eps": fmt.Sprint(r.Eps),
			"method": r.Method, "length": fmt.Sprint(r.AdvLength), "stopped": fmt.Sprint(r.Stopped),
			"tokens": fmt.Sprint(r.AdvTokens), "seed": fmt.Sprint(r.Seed),
		},
		Tensors: []safetensors.Tensor{safetensors.F64("input", []int{in.Channels, in.Height, in.Width}, x)},
	}
	if err := safetensors.WriteFile(st, f); err != nil {
		return "", "", err
	}
	if err := multimnist.WriteFloatPNG(png, x, in.Height, in.Width, 4); err != nil {
		return "", "", err
	}
	return st, png, nil
}
