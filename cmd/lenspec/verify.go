package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lenspec/lenspec/internal/progress"
	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/mip/cbc"
	"github.com/lenspec/lenspec/mip/external"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/results"
	"github.com/lenspec/lenspec/spec"
	"github.com/lenspec/lenspec/verify"
	"github.com/spf13/cobra"
)

// verifyRecord is one line of a verification results file.
type verifyRecord struct {
	Model   string  `json:"model"`
	Split   string  `json:"split"`
	Image   int     `json:"image"`
	Eps     float64 `json:"eps"`
	K       int     `json:"k"`
	Label   []int   `json:"label"`
	Bounds  string  `json:"bounds"`
	Verdict string  `json:"verdict"`
	Stage   string  `json:"stage"`
	Seconds float64 `json:"seconds"`
	// BoundSeconds is the time spent computing bounds.
	BoundSeconds float64 `json:"bound_seconds"`
	// ProvenBound is a proven upper bound on the max-min margin
	// (null: nothing proven; eos provably wins somewhere: "-inf" as null with stage bounds).
	ProvenBound  *float64 `json:"proven_bound"`
	Incumbent    *float64 `json:"incumbent"`
	Nodes        int64    `json:"nodes"`
	Binaries     int      `json:"binaries"`
	ReLUBinaries int      `json:"relu_binaries"`
	// Unstable ReLUs (binaries of the exact MIP) under interval bounds and
	// under the bounds used.
	UnstableInterval int    `json:"unstable_interval"`
	Unstable         int    `json:"unstable"`
	Witness          string `json:"witness,omitempty"`
	WitnessLength    *int   `json:"witness_length,omitempty"`
	WitnessTokens    []int  `json:"witness_tokens,omitempty"`
	Reason           string `json:"reason,omitempty"`
	MPS              string `json:"mps,omitempty"`
	// Phases: each MIP solved (name, binaries, status, seconds, nodes, bound).
	Phases  []verify.Phase `json:"phases,omitempty"`
	Timeout float64        `json:"timeout"`
	Seed    uint64         `json:"seed"`
}

var verifyKey = results.KeyFields("model", "split", "image", "eps", "k", "bounds", "timeout", "seed")

type verifyConfig struct {
	modelDir, split, out string
	eps                  []float64
	k                    int
	images               int
	indices              []int
	seed, dataSeed       uint64
	opt                  verify.Options
	timeout              time.Duration
	bounds               string
	solver, solverBinary string
	noMIP, optimize      bool
	tokens               bool
	witnessDir           string
	// shard "k/n" runs the k-th of n interleaved parts of the (δ, image)
	// list, so that n processes can share a machine.
	shard          string
	shardK, shardN int
}

func (cfg *verifyConfig) flags(c *cobra.Command, sample bool) {
	f := c.Flags()
	cfg.opt = verify.DefaultOptions()
	f.StringVar(&cfg.modelDir, "model", "", "model directory")
	if sample {
		f.Float64SliceVar(&cfg.eps, "eps", nil, "L∞ radius δ (repeatable or comma-separated)")
		f.IntVar(&cfg.images, "images", 0, "verify this many test images drawn at random with --seed")
		f.IntSliceVar(&cfg.indices, "index", nil, "verify these canvas indices")
		f.StringVar(&cfg.out, "out", "", "results file (JSONL); rerunning with the same file skips finished records")
	}
	f.IntVar(&cfg.k, "max-len", -1, "K̂: prove no output is longer than this (default: the length of the image's ground-truth label)")
	f.DurationVar(&cfg.timeout, "timeout", 60*time.Second, "time limit per sample (attack + bounds + MIP)")
	f.IntVar(&cfg.opt.Threads, "threads", 1, "MIP solver threads")
	f.StringVar(&cfg.bounds, "bounds", string(verify.BoundCROWN), "bound method: interval or crown")
	f.BoolVar(&cfg.noMIP, "no-mip", false, "bounds and attack only (robust only if the bounds prove it)")
	f.BoolVar(&cfg.optimize, "optimize", false, "optimise the MIP (report the max-min margin) instead of deciding")
	f.IntVar(&cfg.opt.AttackSteps, "attack-steps", cfg.opt.AttackSteps, "PGD warm-start iterations (0: none)")
	f.Float64Var(&cfg.opt.RelaxGap, "relax-gap", cfg.opt.RelaxGap, "first solve a MIP where unstable ReLUs with a triangle-relaxation gap below this get no binary (0: exact MIP only)")
	f.BoolVar(&cfg.tokens, "tokens", true, "branch and bound over the emitted tokens with LP bounds before the big MIPs")
	f.BoolVar(&cfg.opt.Abstract, "abstract", cfg.opt.Abstract, "solve the small abstracted MIPs (encoder replaced by bounds) before the exact one")
	f.Float64Var(&cfg.opt.Safety, "safety", cfg.opt.Safety, "robust needs the proven margin bound ≤ −safety")
	f.StringVar(&cfg.opt.WriteMPS, "write-mps", "", "write each sample's MIP to this directory (MPS, for SCIP, Gurobi, HiGHS…)")
	f.StringArrayVar(&cfg.opt.Params, "solver-param", nil, "parameter passed to the solver verbatim, repeatable (CBC: --solver-param=-cuts --solver-param=off)")
	f.StringVar(&cfg.solver, "solver", "cbc", "cbc (in process) or external (a solver binary on an MPS file)")
	f.StringVar(&cfg.solverBinary, "solver-binary", "cbc", "binary for --solver external")
	f.Uint64Var(&cfg.seed, "seed", 1, "seed for image selection and the warm-start attack")
	f.Uint64Var(&cfg.dataSeed, "data-seed", defaultDataSeed, "Multi-MNIST generation seed")
	f.StringVar(&cfg.split, "split", "test", "train or test")
	f.StringVar(&cfg.shard, "shard", "", "k/n: run only the k-th of n interleaved parts of the (δ, image) list (one process per core)")
}

// parseShard parses "k/n" with 1 ≤ k ≤ n; "" is the whole list (1/1).
func parseShard(s string) (k, n int, err error) {
	if s == "" {
		return 1, 1, nil
	}
	if _, err := fmt.Sscanf(s, "%d/%d", &k, &n); err != nil || n < 1 || k < 1 || k > n || fmt.Sprintf("%d/%d", k, n) != s {
		return 0, 0, usagef("--shard %q: want k/n with 1 ≤ k ≤ n", s)
	}
	return k, n, nil
}

func (cfg *verifyConfig) validate() error {
	if cfg.modelDir == "" {
		return usagef("--model is required")
	}
	if err := checkRun(cfg.out, cfg.eps, cfg.images, cfg.indices); err != nil {
		return err
	}
	var err error
	if cfg.shardK, cfg.shardN, err = parseShard(cfg.shard); err != nil {
		return err
	}
	if cfg.timeout <= 0 || cfg.opt.Threads < 1 || cfg.opt.AttackSteps < 0 || !(cfg.opt.Safety > 0) {
		return usagef("--timeout, --threads and --safety must be positive, --attack-steps non-negative")
	}
	switch verify.BoundMethod(cfg.bounds) {
	case verify.BoundInterval, verify.BoundCROWN:
		cfg.opt.Bounds = verify.BoundMethod(cfg.bounds)
	default:
		return usagef("--bounds %q: want interval or crown", cfg.bounds)
	}
	switch {
	case cfg.noMIP:
		cfg.opt.Solver = nil
	case cfg.solver == "cbc":
		cfg.opt.Solver = cbc.Solver{}
	case cfg.solver == "external":
		cfg.opt.Solver = &external.Solver{Binary: cfg.solverBinary}
	default:
		return usagef("--solver %q: want cbc or external", cfg.solver)
	}
	if cfg.tokens && cfg.opt.Solver != nil {
		cfg.opt.NewLP = func(m *mip.Model) (verify.LPRelaxation, error) {
			lp, err := cbc.NewLP(m)
			if err != nil {
				return nil, err
			}
			return lp, nil
		}
	}
	cfg.opt.TimeLimit = cfg.timeout
	cfg.opt.Decision = !cfg.optimize
	cfg.witnessDir = strings.TrimSuffix(cfg.out, filepath.Ext(cfg.out)) + ".witnesses"
	return nil
}

func newVerifyCmd(a *app) *cobra.Command {
	cfg := &verifyConfig{}
	c := &cobra.Command{
		Use:   "verify",
		Short: "Prove that no input within δ makes the output longer than K̂, or find one that does",
		Long: `For each image and radius δ, decide whether some x' in S(x, δ) = {‖x' − x‖∞ ≤ δ} ∩ [-1, 1]ⁿ
decodes more than K̂ tokens: a short PGD attack first, then sound bounds (interval or
CROWN), then a MIP of the unrolled greedy decoder (docs/verification.md) solved by CBC
in decision mode. Verdicts: robust (proven, with a margin covering solver tolerances),
vulnerable (a witness that replays in float64 with no tie), unknown (time limit or doubt).
One word per sample on stdout; one JSON line per (image, δ) in --out.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cfg.validate(); err != nil {
				return err
			}
			return runVerify(c.Context(), a, cfg, func(r verifyRecord) error {
				return a.emit(r, func(w io.Writer) { fmt.Fprintln(w, r.Verdict) })
			})
		},
	}
	cfg.flags(c, true)
	return c
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// runVerify verifies every (image, eps) not yet in the results file,
// calling emit for each new record.
func runVerify(ctx context.Context, a *app, cfg *verifyConfig, emit func(verifyRecord) error) error {
	m32, err := model.Load[float32](cfg.modelDir)
	if err != nil {
		return err
	}
	m64 := model.Cast[float64](m32)
	net, err := verify.Lower(m64)
	if err != nil {
		return err
	}
	_, ds, err := a.dataset(ctx, cfg.dataSeed, cfg.split)
	if err != nil {
		return err
	}
	imgs, err := pickImages(cfg.images, cfg.indices, ds.N, cfg.seed)
	if err != nil {
		return err
	}
	if dir := filepath.Dir(cfg.out); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := results.Open(cfg.out, verifyKey)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Len() > 0 {
		a.logf("%s: %d records already done; resuming", cfg.out, f.Len())
	}
	base := verifyRecord{Model: cfg.modelDir, Split: cfg.split, Bounds: cfg.bounds, Timeout: cfg.timeout.Seconds(), Seed: cfg.seed}
	kOf := func(img int) int {
		if cfg.k >= 0 {
			return cfg.k
		}
		return len(ds.Labels[img])
	}
	keyOf := func(img int, eps float64) string {
		r := base
		r.Image, r.Eps, r.K = img, eps, kOf(img)
		k, _ := verifyKey(mustJSON(r))
		return k
	}
	total := (len(imgs)*len(cfg.eps) + cfg.shardN - cfg.shardK) / cfg.shardN
	rep := progress.New("verify", total, a.quiet)
	defer rep.Finish()
	counts := map[verify.Verdict]int{}
	done, ordinal := 0, 0
	size := m32.InputSize()
	for _, eps := range cfg.eps {
		for _, img := range imgs {
			ordinal++
			if (ordinal-1)%cfg.shardN != cfg.shardK-1 {
				continue
			}
			done++
			key := keyOf(img, eps)
			if f.Done(key) {
				continue
			}
			x0 := make([]float64, size)
			multimnist.Normalize(x0, ds, []int{img})
			ball, err := spec.NewBall(x0, eps, m32.Cfg.Input.Min, m32.Cfg.Input.Max)
			if err != nil {
				return err
			}
			opt := cfg.opt
			opt.Seed = cfg.seed ^ uint64(img)
			opt.MaxSteps = m32.Cfg.MaxSteps
			name := fmt.Sprintf("%s-%d-eps%g-k%d", cfg.split, img, eps, kOf(img))
			res, err := verify.Verify(ctx, net, m32, m64, verify.Sample{Name: name, Ball: ball, K: kOf(img)}, opt)
			if err != nil {
				return fmt.Errorf("verify image %d eps %g: %w", img, eps, err)
			}
			if ctx.Err() != nil {
				return ctx.Err() // interrupted: do not record a spurious unknown
			}
			r := base
			r.Image, r.Eps, r.K, r.Label = img, eps, res.K, ds.Labels[img]
			r.Verdict, r.Stage, r.Seconds, r.BoundSeconds = string(res.Verdict), res.Stage, res.Seconds, res.BoundSeconds
			r.ProvenBound, r.Incumbent = finite(res.Bound), finite(res.Incumbent)
			r.Nodes, r.Binaries, r.ReLUBinaries, r.Reason, r.MPS, r.Phases = res.Nodes, res.Binaries, res.ReLUBinaries, res.Reason, res.MPS, res.Phases
			r.UnstableInterval, r.Unstable = res.UnstableInterval, res.Unstable
			if res.Verdict == verify.Vulnerable {
				l := len(res.WitnessResult.Tokens)
				r.WitnessLength, r.WitnessTokens = &l, nonNil(res.WitnessResult.Tokens)
				ar := attackRecord{Model: r.Model, Split: r.Split, Image: img, Eps: eps, Method: "verify-" + res.Stage,
					AdvLength: l, AdvTokens: r.WitnessTokens, Stopped: res.WitnessResult.Stopped, Seed: cfg.seed}
				if r.Witness, _, err = saveWitness(cfg.witnessDir, ar, res.Witness, m32.Cfg); err != nil {
					return err
				}
			}
			if err := f.Append(key, r); err != nil {
				return err
			}
			counts[res.Verdict]++
			rep.Set(done, fmt.Sprintf("robust %d vulnerable %d unknown %d", counts[verify.Robust], counts[verify.Vulnerable], counts[verify.Unknown]))
			if err := emit(r); err != nil {
				return err
			}
		}
	}
	return nil
}

var _ mip.Solver = cbc.Solver{}
