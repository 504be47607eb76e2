package verify

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// Verdict is the answer for one (input, radius, K̂).
type Verdict string

const (
	// Robust: no input of the ball decodes more than K̂ tokens (proven).
	Robust Verdict = "robust"
	// Vulnerable: a witness input of the ball decodes, replayed in float64
	// with no tie on its path, more than K̂ tokens.
	Vulnerable Verdict = "vulnerable"
	// Unknown: neither was settled (time limit, or numerical doubt).
	Unknown Verdict = "unknown"
)

// Options configures Verify.
type Options struct {
	Bounds BoundMethod
	// Solver solves the MIP; nil means no MIP: bounds and attacks only.
	Solver    mip.Solver
	TimeLimit time.Duration // for the whole sample
	Threads   int
	// Safety is how far below 0 the proven bound on the margin must be to
	// claim robustness: it covers the solver's tolerances (feasibility
	// 1e-7 relative, integrality 1e-6 times big-M coefficients of order
	// 10²) and float64 evaluation of the network.
	Safety float64
	// Decision mode prunes everything with margin ≤ −Safety (a cutoff)
	// and stops at the first incumbent with margin ≥ Safety: a strict
	// counterexample candidate. Incumbents in between are near-ties and do
	// not stop the search. Without it the MIP is optimised: the proven
	// bound and incumbent are then the max-min margin.
	Decision bool
	// AttackSteps and AttackRestarts size the PGD warm start; 0 skips it.
	AttackSteps, AttackRestarts int
	AttackLR                    float64
	Seed                        uint64
	// RelaxGap: unstable ReLUs whose triangle relaxation is within this
	// of the ReLU get no binary in a first, relaxed MIP (sound for
	// robustness; its candidates are replayed). If that MIP is
	// inconclusive, the exact MIP runs with the remaining time. 0: exact
	// MIP only.
	RelaxGap float64
	// Abstract first solves a MIP in which the encoder is replaced by
	// CROWN's linear bounds of i₀ in terms of the input (exact decoder):
	// small and fast, sound for robustness, candidates replayed.
	Abstract bool
	// NewLP, if set, enables the token search (after the box phase):
	// branch and bound over the emitted tokens, bounded by this LP
	// relaxation of the exact MIP, then MIPs on the open token sequences.
	NewLP func(*mip.Model) (LPRelaxation, error)
	// Params are passed to the MIP solver (for CBC, e.g. "-cuts", "off").
	Params []string
	// WriteMPS, if set, is a directory where each sample's MIP is written.
	WriteMPS string
	MaxSteps int // decoder step cap for replay
}

// DefaultOptions: CROWN bounds, decision mode, a 300-step PGD warm start.
func DefaultOptions() Options {
	return Options{Bounds: BoundCROWN, TimeLimit: 60 * time.Second, Threads: 1, Safety: 1e-3, Decision: true,
		AttackSteps: 300, AttackRestarts: 2, AttackLR: 0.01, MaxSteps: 20, Abstract: true}
}

// Result is the outcome for one sample.
type Result struct {
	Verdict Verdict
	K       int
	// Stage that settled it: "attack", "bounds", "mip", or "" for unknown.
	Stage string
	// Bound is a proven upper bound on max over the ball of
	// min_{t≤K} (max_{z≠eos} o_t[z] − o_t[eos]); robust needs Bound ≤ −Safety.
	// +Inf when nothing was proven.
	Bound float64
	// Incumbent is the best margin the last MIP solved found (NaN if
	// none); in a relaxed or abstract MIP it may be spurious.
	Incumbent float64
	Nodes     int64
	// Binaries in the MIP (ReLU + argmax); ReLUBinaries alone; Unstable
	// counts unstable ReLUs under the bounds used.
	Binaries, ReLUBinaries int
	// Unstable counts unstable ReLUs of the unrolled network under the
	// bounds used, UnstableInterval under interval bounds (over the layers
	// bounded before a step proved eos wins, if one did).
	Unstable, UnstableInterval int
	// Relaxed counts unstable ReLUs given the triangle relaxation in the
	// last MIP built.
	Relaxed       int
	Seconds       float64
	BoundSeconds  float64
	Witness       []float64
	WitnessResult model.Result
	Reason        string
	MPS           string
	// Phases logs each MIP solved, in order: where the time went.
	Phases []Phase
}

// Phase is one MIP solve of a sample.
type Phase struct {
	// Name: "box-i0" (encoder replaced by a box around i₀),
	// "abstract-i0" or "abstract-fc1" (by linear bounds in the input up to
	// that layer's pre-activations), "relaxed", or "exact".
	Name     string  `json:"name"`
	Binaries int     `json:"binaries"`
	Status   string  `json:"status"`
	Seconds  float64 `json:"seconds"`
	Nodes    int64   `json:"nodes"`
	// Bound is the proven upper bound on the margin (null: none).
	Bound *float64 `json:"bound,omitempty"`
}

// Sample is one verification problem.
type Sample struct {
	Name string
	Ball spec.Ball
	K    int
}

// Verify decides whether any input of the ball decodes more than K tokens:
// a short PGD attack first (a replayed success is a witness), then sound
// bounds (which may prove eos wins at some step), then the MIP in
// decision mode. Every vulnerable verdict carries a float64-replayed
// witness; every robust verdict a proven bound below −Safety.
func Verify(ctx context.Context, net *Net, m32 attack.Model[float32], m64 attack.Model[float64], sm Sample, opt Options) (*Result, error) {
	start := time.Now()
	if opt.TimeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opt.TimeLimit)
		defer cancel()
	}
	res := &Result{Verdict: Unknown, K: sm.K, Bound: math.Inf(1), Incumbent: math.NaN()}
	defer func() { res.Seconds = time.Since(start).Seconds() }()
	maxSteps := opt.MaxSteps
	if maxSteps <= sm.K {
		maxSteps = sm.K + 1
	}
	tg := attack.Target{Spec: spec.Spec{Ball: sm.Ball, K: sm.K}}
	var best []float64
	if opt.AttackSteps > 0 {
		pgd := attack.DefaultPGD()
		pgd.Steps, pgd.Restarts, pgd.LR, pgd.Seed, pgd.MaxSteps = opt.AttackSteps, max(1, opt.AttackRestarts), opt.AttackLR, opt.Seed, maxSteps
		outs, err := attack.PGD(ctx, m32, m64, []attack.Target{tg}, pgd)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		if err == nil {
			best = outs[0].Input
			if outs[0].Success {
				res.Verdict, res.Stage = Vulnerable, "attack"
				res.Witness, res.WitnessResult = outs[0].Input, outs[0].Result
				return res, nil
			}
		}
	}
	bstart := time.Now()
	s := newSpine(net, sm.K)
	lo, hi := sm.Ball.Box()
	b := computeBounds(s, lo, hi, opt.Bounds)
	res.BoundSeconds = time.Since(bstart).Seconds()
	res.Unstable = b.NumUnstable
	res.UnstableInterval = b.NumUnstable
	if opt.Bounds != BoundInterval { // for comparison: intervals are cheap
		res.UnstableInterval = computeBounds(s, lo, hi, BoundInterval).NumUnstable
	}
	if b.Proven {
		res.Verdict, res.Stage = Robust, "bounds"
		res.Bound = math.Inf(-1) // eos provably wins at b.ProvenAt: no margin to report
		res.Reason = fmt.Sprintf("bounds show eos wins at step %d", b.ProvenAt)
		return res, nil
	}
	if opt.Solver == nil {
		res.Reason = "bounds inconclusive and no MIP solver"
		return res, nil
	}
	var phases []encodeOptions
	if opt.Abstract {
		// The decoder alone on a box around i₀ (no input variables,
		// milliseconds), then on linear bounds of i₀, then from the first
		// fully connected layer on.
		phases = append(phases, encodeOptions{abstract: true, abstractAt: s.enc, box: true},
			encodeOptions{abstract: true, abstractAt: s.enc}, encodeOptions{abstract: true, abstractAt: s.enc - 1})
	}
	if opt.RelaxGap > 0 {
		phases = append(phases, encodeOptions{relaxGap: opt.RelaxGap})
	}
	phases = append(phases, encodeOptions{})
	replay := func(x []float64, stage string) (bool, error) {
		return replayCandidate(x, stage, sm, m64, maxSteps, res)
	}
	for i, eo := range phases {
		if opt.NewLP != nil && (i == 1 || !opt.Abstract && i == 0) {
			// The token search gets two thirds of the time left.
			tctx, cancel := ctx, context.CancelFunc(func() {})
			if dl, ok := ctx.Deadline(); ok {
				tctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(dl)*2/3))
			}
			done, err := tokenPhase(tctx, s, b, sm, opt, res, replay)
			cancel()
			if err != nil || done {
				return res, err
			}
		}
		done, err := solvePhase(ctx, s, b, sm, opt, eo, best, replay, res)
		if err != nil || done {
			return res, err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if res.Reason == "" {
		res.Reason = "time limit"
	}
	return res, nil
}

// solvePhase builds the MIP with the given relaxation gap and solves it,
// recording into res. done reports a final verdict.
func solvePhase(ctx context.Context, s *spine, b *Bounds, sm Sample, opt Options, eo encodeOptions, best []float64, replay func([]float64, string) (bool, error), res *Result) (done bool, err error) {
	enc, err := encode(s, b, sm.K, eo)
	exact := !eo.abstract && eo.relaxGap == 0
	if err != nil {
		return false, err
	}
	res.Binaries, res.ReLUBinaries, res.Relaxed = enc.Binaries, enc.ReLUBinaries, enc.Relaxed
	ph := Phase{Name: "exact", Binaries: enc.Binaries, Status: "not started"}
	at := "i0"
	if eo.abstractAt != s.enc {
		at = s.layers[eo.abstractAt].Name
	}
	switch {
	case eo.box:
		ph.Name = "box-" + at
	case eo.abstract:
		ph.Name = "abstract-" + at
	case eo.relaxGap > 0:
		ph.Name = "relaxed"
	}
	pstart := time.Now()
	defer func() {
		ph.Seconds = time.Since(pstart).Seconds()
		res.Phases = append(res.Phases, ph)
	}()
	res.Incumbent = math.NaN() // only the last phase's incumbent is reported
	if opt.WriteMPS != "" && exact {
		if err := writeMPS(opt.WriteMPS, sm.Name, enc, res); err != nil {
			return false, err
		}
	}
	mo := mip.Options{Threads: opt.Threads, Params: opt.Params}
	if dl, ok := ctx.Deadline(); ok {
		mo.TimeLimit = time.Until(dl)
		if mo.TimeLimit <= 0 {
			res.Reason = "time limit"
			return false, nil
		}
	}
	// A MIP start only helps an optimising solve (in decision mode its
	// margin is below the cutoff and CBC ignores it), and CBC 2.10.8 was
	// seen to crash (SIGSEGV inside CbcMain1) on starts for the abstract
	// model: pass one only when optimising the exact model.
	if best != nil && !opt.Decision && !eo.abstract {
		if v, ok := enc.assignment(best); ok && enc.m.Check(v, 1e-6) == nil {
			mo.Start = v
		}
	}
	var r *mip.Result
	if opt.Decision {
		r, err = decide(ctx, opt, enc.m, mo)
	} else {
		r, err = opt.Solver.Solve(ctx, enc.m, mo)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			res.Reason, ph.Status = "time limit", "time limit"
			return false, nil
		}
		return false, err
	}
	res.Nodes += r.Nodes
	ph.Status, ph.Nodes = r.Status.String(), r.Nodes
	phaseBound := -r.Bound // minimised −m: −Bound bounds m from above
	if !math.IsInf(r.Bound, -1) {
		res.Bound = math.Min(res.Bound, phaseBound)
		ph.Bound = &phaseBound
	}
	if r.HasSolution {
		res.Incumbent = -r.Objective
		if x := enc.input(r.Solution); x == nil {
			// No input variables: nothing to replay, only a sign that
			// the box is too coarse to prove the property.
			res.Reason = fmt.Sprintf("box abstraction admits margin %.3g", res.Incumbent)
		} else if ok, err := replay(x, "mip"); ok || err != nil {
			return ok, err
		}
	}
	if !math.IsInf(r.Bound, -1) && phaseBound <= -opt.Safety {
		res.Verdict, res.Stage = Robust, "mip"
		switch {
		case eo.abstract:
			res.Stage = "abstract-mip"
		case !exact:
			res.Stage = "relaxed-mip"
		}
		res.Reason = ""
		return true, nil
	}
	if res.Reason == "" || !r.HasSolution {
		res.Reason = fmt.Sprintf("solver stopped: %v, proven margin ≤ %.3g", r.Status, phaseBound)
	}
	return false, nil
}

// decide solves m in decision mode: a cutoff prunes every node whose
// margin is ≤ −Safety, and the solve stops at the first incumbent with
// margin ≥ Safety, a strict counterexample candidate to replay.
func decide(ctx context.Context, opt Options, m *mip.Model, mo mip.Options) (*mip.Result, error) {
	mo.UseCutoff, mo.Cutoff = true, opt.Safety
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	mo.OnEvent = func(ev mip.Event) {
		if ev.Kind == mip.IncumbentFound && ev.Objective <= -opt.Safety {
			stop()
		}
	}
	return opt.Solver.Solve(ctx, m, mo)
}

// replayCandidate projects a MIP candidate onto the ball and decodes it
// in float64: a replay longer than K̂ with no tie on its path makes res
// vulnerable (stage names who found it); otherwise res.Reason says why not.
func replayCandidate(x []float64, stage string, sm Sample, m64 attack.Model[float64], maxSteps int, res *Result) (bool, error) {
	spec.Project(sm.Ball, x)
	out, err := m64.Decode(context.Background(), x, 1, maxSteps)
	if err != nil {
		return false, err
	}
	if spec.Exceeds(out[0], sm.K) && out[0].MinRelMargin >= model.RelTieMargin {
		res.Verdict, res.Stage = Vulnerable, stage
		res.Witness, res.WitnessResult = x, out[0]
		res.Reason = ""
		return true, nil
	}
	res.Reason = fmt.Sprintf("%s candidate does not replay: decodes %d tokens, tie margin %.2g", stage, len(out[0].Tokens), out[0].MinRelMargin)
	return false, nil
}

func writeMPS(dir, name string, enc *encoding, res *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	res.MPS = filepath.Join(dir, name+".mps")
	f, err := os.Create(res.MPS)
	if err != nil {
		return err
	}
	err = enc.m.WriteMPS(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", res.MPS, err)
	}
	return nil
}
