package verify

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

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
	// Falsifier, if set, searches the ball first (a short PGD attack, say):
	// a candidate that replays is a witness, and the best candidate seeds
	// an optimising MIP.
	Falsifier Falsifier
	// Search, if set, is a wider falsifier run as the first stage once
	// the bounds have not proven the property (PGD with many random
	// restarts, say): samples the bounds prove in a second do not pay
	// for it, and on models/mmnist-rnn at δ = 0.05, 300 steps × 32
	// restarts found witnesses for 15 of the 74 samples the warm start's
	// 2 restarts left unknown (docs/results.md). Its candidate is
	// replayed like any other.
	Search Falsifier
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
	// relaxation of the exact MIP, then branch and bound over ReLU splits
	// on the open token sequences.
	NewLP func(*mip.Model) (LPRelaxation, error)
	// BaB runs branch and bound over ReLU splits and tokens (bab.go)
	// straight after the bounds, with a quarter of the time when MIPs
	// follow, and again after the token search, resumed, with half of what
	// is left then.
	BaB bool
	// Cuts learns nogoods from branch and bound's closed leaves (cuts.go)
	// and closes the domains they cover unbounded.
	Cuts bool
	// CutMultipliers learns the nogoods as Cuts does and also carries them into
	// every domain's bound as constraints on its ReLU indicators, one
	// multiplier per cut optimised with α and β (cutdual.go), and closes
	// the domains whose bounds put them inside a nogood's region.
	CutMultipliers bool
	// Clip cuts each branch-and-bound child's input box by the half-space
	// its new split gives through CROWN's linear bound (clip.go).
	Clip bool
	// Params are passed to the MIP solver (for CBC, e.g. "-cuts", "off").
	Params []string
	// WriteMPS, if set, is a directory where each sample's MIP is written.
	WriteMPS string
	MaxSteps int // decoder step cap for replay
}

// Falsifier searches a sample's set for an input that decodes more than k
// tokens within maxSteps steps, returning its best candidate (nil for
// none). Verify replays the candidate in float64 and claims nothing on the
// falsifier's word; stream seeds its random choices (the sample's index).
type Falsifier interface {
	Falsify(ctx context.Context, set spec.Region, k, maxSteps int, stream uint64) ([]float64, error)
}

// DefaultOptions are lenspec verify's defaults for everything this package
// holds: CROWN bounds, branch and bound (α,β-CROWN), decision mode, the
// abstraction phases, 60 s per sample. What lives in packages verify does
// not import is left unset: no MIP solver (Solver, NewLP: mip/cbc) and no
// falsifier (Falsifier, Search: attack), so alone these options bound and
// run branch and bound only. experiment.DefaultVerifyOptions adds them —
// CBC, its LP for the token search, the PGD warm start and the wide
// falsifier — and is exactly what lenspec verify runs when given no flags.
func DefaultOptions() Options {
	return Options{Bounds: BoundCROWN, TimeLimit: 60 * time.Second, Threads: 1, Safety: 1e-3, Decision: true, Abstract: true, BaB: true}
}

// Validate checks the options before any work.
func (o Options) Validate() error {
	var errs []error
	if !slices.Contains(boundMethods, o.Bounds) {
		errs = append(errs, fmt.Errorf("bound method %q: want one of %q", o.Bounds, boundMethods))
	}
	if o.TimeLimit < 0 {
		errs = append(errs, fmt.Errorf("time limit %v must be non-negative (0: none)", o.TimeLimit))
	}
	if o.Threads < 1 || o.Threads > 256 {
		errs = append(errs, fmt.Errorf("threads %d must be in 1..256", o.Threads))
	}
	if !(o.Safety > 0) || math.IsInf(o.Safety, 0) {
		errs = append(errs, fmt.Errorf("safety %v must be positive and finite", o.Safety))
	}
	if !(o.RelaxGap >= 0) || math.IsInf(o.RelaxGap, 0) {
		errs = append(errs, fmt.Errorf("relaxation gap %v must be non-negative and finite", o.RelaxGap))
	}
	if o.MaxSteps < 0 || o.MaxSteps > model.MaxStepCap {
		errs = append(errs, fmt.Errorf("step cap %d must be in 0..%d", o.MaxSteps, model.MaxStepCap))
	}
	return errors.Join(errs...)
}

// MaxK is the largest K̂ the verifier unrolls: the MIP grows with every
// step, and beyond a few dozen steps no solve finishes in any budget.
const MaxK = 200

// Result is the outcome for one sample.
type Result struct {
	Verdict Verdict
	K       int
	// Stage that settled it: "attack", "bounds", "mip", or "" for unknown.
	Stage string
	// Bound is a proven upper bound on max over the ball of
	// min_{t≤K} (max_{z≠eos} o_t[z] − o_t[eos]); robust needs Bound ≤ −Safety.
	// The bounds give the first (Bounds.MarginBound), every MIP phase that
	// proves a smaller one lowers it; +Inf before the bounds ran.
	Bound float64
	// Incumbent is the best margin the last MIP solved found (NaN if
	// none); in a relaxed or abstract MIP it may be spurious.
	Incumbent float64
	Nodes     int64
	// Binaries in the MIP (activations + argmax); ReLUBinaries those of
	// activations (ReLUs: the only activation with an exact encoding).
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

// Phase is one stage of a sample's pipeline after the bounds.
type Phase struct {
	// Name: "falsify" (the wide falsifier; Status "witness", "no
	// witness" or "time limit"), "bab" (branch and bound), "tokens" (the
	// token search),
	// "box-i0" (encoder replaced by a box around i₀),
	// "abstract-i0" or "abstract-fc1" (by linear bounds in the input up to
	// that layer's pre-activations), "relaxed", or "exact".
	Name     string  `json:"name"`
	Binaries int     `json:"binaries"`
	Status   string  `json:"status"`
	Seconds  float64 `json:"seconds"`
	Nodes    int64   `json:"nodes"`
	// Bound is the proven upper bound on the margin (null: none).
	Bound *float64 `json:"bound,omitempty"`
	// Leaves and LeavesOpen count the token search's full token sequences
	// and those its per-leaf bounds left to branch and bound.
	Leaves     int `json:"leaves,omitempty"`
	LeavesOpen int `json:"leaves_open,omitempty"`
	// Cuts, Strengthened and Pruned count, for branch and bound with
	// Options.Cuts, the nogoods its search has learned so far, those
	// proved with fewer splits than their leaf, and the domains they
	// closed unbounded.
	Cuts         int64 `json:"cuts,omitempty"`
	Strengthened int64 `json:"strengthened,omitempty"`
	Pruned       int64 `json:"pruned,omitempty"`
	// CutRows counts, with Options.CutMultipliers, the rows (a domain's
	// token at its worst step) bounded with at least one cut's multiplier.
	CutRows int64 `json:"cut_rows,omitempty"`
	// Clipped counts, with Options.Clip, the domains whose input box
	// branch and bound's search has cut so far.
	Clipped int64 `json:"clipped,omitempty"`
}

// Sample is one verification problem: does some input of Set decode more
// than K tokens? Stream seeds the falsifier (the sample's index).
type Sample struct {
	Name   string
	Set    spec.Region
	K      int
	Stream uint64
}

// Verify decides whether any input of the ball decodes more than K tokens:
// a short PGD attack first (a replayed success is a witness), then sound
// bounds (which may prove eos wins at some step; at most half of the time
// left, then intervals), then the stages (falsifier, branch and bound,
// token search, MIPs in decision mode). Every vulnerable verdict carries a
// float64-replayed witness; every robust verdict a proven bound below
// −Safety.
func Verify(ctx context.Context, net *Net, d64 model.Decoder[float64], sm Sample, opt Options) (*Result, error) {
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	if sm.K < 0 || sm.K > MaxK {
		return nil, fmt.Errorf("verify: K̂ %d must be in 0..%d", sm.K, MaxK)
	}
	if _, err := net.stepTemplate(max(sm.K, 1)); err != nil {
		return nil, err // a state that grows, described wrongly at a later step
	}
	if sm.Set.Dim() != net.InputSize {
		return nil, fmt.Errorf("verify: the set has %d coordinates, the model reads %d", sm.Set.Dim(), net.InputSize)
	}
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
	replay := func(x []float64, stage string) (bool, error) {
		return replayCandidate(ctx, x, stage, sm, d64, maxSteps, res)
	}
	// falsify runs f and replays its candidate as stage's witness; a
	// search cut by its deadline has found nothing.
	falsify := func(ctx context.Context, f Falsifier, stage string, stream uint64) (x []float64, done bool, err error) {
		x, err = f.Falsify(ctx, sm.Set, sm.K, maxSteps, stream)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return nil, false, nil
		case err != nil:
			return nil, false, err
		case x == nil:
			return nil, false, nil
		}
		done, err = replay(append([]float64(nil), x...), stage)
		return x, done, err
	}
	var best []float64
	if opt.Falsifier != nil {
		x, done, err := falsify(ctx, opt.Falsifier, "attack", sm.Stream)
		if err != nil {
			return nil, err
		}
		best = x
		if done {
			return res, nil
		}
	}
	bstart := time.Now()
	// The bounds get at most half of the time left: on a wide ball one CROWN
	// pass over the convolutions can take a short limit whole, and the
	// falsifier stage after it would never run. Cut, they end in intervals.
	bctx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		bctx, cancel = context.WithDeadline(ctx, bstart.Add(dl.Sub(bstart)/2))
		defer cancel()
	}
	g := newGraph(net, sm.K)
	lo, hi := sm.Set.Box()
	b := computeBounds(bctx, g, lo, hi, opt.Bounds)
	res.BoundSeconds = time.Since(bstart).Seconds()
	res.Unstable = b.NumUnstable
	res.UnstableInterval = b.NumUnstable
	if opt.Bounds != BoundInterval { // for comparison: intervals are cheap
		res.UnstableInterval = computeBounds(ctx, g, lo, hi, BoundInterval).NumUnstable
	}
	if opt.BaB && !b.Proven && (opt.Bounds == BoundCROWN || opt.Bounds == BoundAlphaCROWN) {
		// Branch and bound starts from a root whose intermediate bounds α-CROWN
		// tightened (every domain inherits them); the stages after it encode
		// and bound with the same, tighter, bounds.
		b = computeSplitBounds(bctx, g, lo, hi, BoundAlphaCROWNFull, nil, nil, b, g.alphaStart(b), false)
		res.BoundSeconds = time.Since(bstart).Seconds()
	}
	if b.Proven {
		res.Verdict, res.Stage = Robust, "bounds"
		res.Bound = math.Inf(-1) // eos provably wins at b.ProvenAt: no margin to report
		res.Reason = fmt.Sprintf("bounds show eos wins at step %d", b.ProvenAt)
		return res, nil
	}
	// The bounds' own bound on M*: min over steps of the largest margin a
	// token allowed there can reach.
	res.Bound = b.MarginBound()
	// The falsifier's best candidate, decoded along its path, starts an
	// optimising MIP when it is a feasible point of the encoding.
	mipStart := func(enc *encoding) []float64 {
		if best == nil {
			return nil
		}
		v, ok, err := enc.assignment(d64, best)
		if err != nil || !ok || enc.m.Check(v, 1e-6) != nil {
			return nil
		}
		return v
	}
	// A falsifier round: round 0 draws the sample's own restarts, each
	// later round fresh ones (a stream of its own).
	falsifyStage := func(ctx context.Context, round int) (bool, error) {
		ph := Phase{Name: "falsify", Status: "no witness"}
		t0 := time.Now()
		x, done, err := falsify(ctx, opt.Search, "falsify", roundStream(sm.Stream, round))
		if done {
			ph.Status = "witness"
		} else if ctx.Err() != nil {
			ph.Status = "time limit"
		}
		if x != nil && best == nil {
			best = x
		}
		ph.Seconds = time.Since(t0).Seconds()
		res.Phases = append(res.Phases, ph)
		return done, err
	}
	pipeline := stages(ctx, g, sm, opt, b, mipStart, replay, falsifyStage, res)
	if len(pipeline) == 0 {
		res.Reason = fmt.Sprintf("bounds inconclusive (margin ≤ %.3g) and no MIP solver", res.Bound)
		return res, nil
	}
	for _, st := range pipeline {
		if ctx.Err() != nil {
			if res.Reason == "" {
				res.Reason = "time limit before phase " + st.name
			}
			break
		}
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ok && st.share < 1 {
			sctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Duration(float64(time.Until(dl))*st.share)))
		}
		done, err := st.run(sctx)
		cancel()
		if err != nil || done {
			return res, err
		}
	}
	if res.Reason == "" {
		res.Reason = "time limit"
		if opt.Solver == nil && !opt.BaB && ctx.Err() == nil { // the wide falsifier alone
			res.Reason = fmt.Sprintf("bounds inconclusive (margin ≤ %.3g), no witness and no MIP solver", res.Bound)
		}
	}
	return res, nil
}

// stopped reports whether err is a context's: the sample's time limit or
// a cancellation, which a phase reports as its time limit, not as a
// failure.
func stopped(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// stage is one step of the pipeline after the bounds. Each gets share of
// the time left when it starts (1: all of it).
type stage struct {
	name  string
	share float64
	run   func(ctx context.Context) (done bool, err error)
}

// Shares of the time left. Branch and bound, when asked for, goes first
// with a quarter: its proofs at δ = 0.05 took at most 8.6 s, and with half
// the token search lost 3 proofs it makes in time with three quarters
// (docs/results.md). The box MIP gets all it needs: its proofs at
// δ = 0.05 took up to 50 s of a 60 s budget, and capping it at 15 % lost 3
// of them on models/mmnist-rnn-rs while the later stages, given the time,
// proved none of the samples it ran out on (docs/BENCHMARKS.md). The token
// search gets two thirds of what the box leaves, branch and bound (resumed)
// half of what is left then, the abstractions a third each, the exact MIP
// the rest. The wide falsifier goes first with at most a quarter (one
// round: 1 s on an AVX-512 machine, 3–5 s on an AVX2 one), and its further
// rounds share the resumed branch and bound's half.
const (
	shareFalsify   = 1.0 / 4
	shareBox       = 1.0
	shareTokens    = 2.0 / 3
	shareAbstract  = 1.0 / 3
	shareRelaxed   = 1.0 / 2
	shareBaB       = 1.0 / 4
	shareBaBResume = 1.0 / 2
)

// stages lists the phases the options enable: the wide falsifier, then,
// coarse to exact, branch and bound (the only ones without a MIP solver),
// the box MIP around i₀, the token search, branch and bound resumed, the
// MIPs with the encoder abstracted at i₀ and at fc1, the relaxed MIP, and
// the exact MIP. ctx is the sample's: its time limit stops branch and
// bound inside a batch.
func stages(ctx context.Context, g *graph, sm Sample, opt Options, b *Bounds, mipStart func(*encoding) []float64, replay func([]float64, string) (bool, error), falsify func(context.Context, int) (bool, error), res *Result) []stage {
	solve := func(eo encodeOptions) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			return solvePhase(ctx, g, b, sm, opt, eo, mipStart, replay, res)
		}
	}
	var st []stage
	var search *babSearch
	if opt.BaB {
		lo, hi := sm.Set.Box()
		search = g.newBaB(ctx, lo, hi, opt, []*domain{{splits: splitSet{}, b: b}}, func(x []float64) (bool, error) { return replay(x, "bab") })
	}
	// adaptive(first) is the adaptive search from falsifier round first:
	// 0 where no stage before it ran the falsifier.
	adaptive := func(first int) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			return adaptiveSearch(ctx, search, falsify, res, first, opt.Solver == nil)
		}
	}
	bab := func(ctx context.Context) (bool, error) {
		done, _, err := babPhase(ctx, search, res)
		return done, err
	}
	if opt.Search != nil && (search == nil || opt.Solver != nil) {
		st = append(st, stage{"falsify", shareFalsify, func(ctx context.Context) (bool, error) { return falsify(ctx, 0) }})
	}
	switch {
	case search != nil && opt.Solver == nil && opt.Search != nil:
		st = append(st, stage{"search", 1, adaptive(0)})
	case search != nil && opt.Solver == nil:
		st = append(st, stage{"bab", 1, bab})
	case search != nil:
		// The falsifier's further rounds wait for the resumed turn, after
		// the token search: on models/mmnist-rnn-rs at δ = 0.05 and
		// models/mmnist-rnn at δ = 0.02 they found no witness and, at 3–5 s
		// a round on an AVX2 machine, took the time the token search's
		// proofs need (docs/results.md).
		st = append(st, stage{"bab", shareBaB, func(ctx context.Context) (bool, error) {
			return firstTurn(ctx, res, func(ctx context.Context) (bool, float64, error) { return babPhase(ctx, search, res) },
				func() bool { return search.final != nil })
		}})
	}
	if opt.Solver == nil {
		return st // every later stage solves a MIP or its LP
	}
	if opt.Abstract {
		st = append(st, stage{"box-i0", shareBox, solve(encodeOptions{abstract: true, abstractAt: g.enc, box: true})})
	}
	if opt.NewLP != nil {
		st = append(st, stage{"tokens", shareTokens, func(ctx context.Context) (bool, error) {
			return tokenPhase(ctx, g, b, sm, opt, res, replay)
		}})
	}
	if search != nil {
		// Branch and bound again, from the frontier its first turn left
		// (at δ = 0.1 a proof that needed 19 s came in the first 0.4 s of
		// this second turn): the stages after it have not decided a sample
		// of models/mmnist-rnn-rs in the shipped records. With the
		// falsifier, this turn is adaptive: where the proof stays out of
		// reach, fresh falsifier rounds.
		resume := bab
		if opt.Search != nil {
			resume = adaptive(1) // the falsify stage ran round 0
		}
		st = append(st, stage{"bab", shareBaBResume, resume})
	}
	if opt.Abstract {
		// The last encoder layer gives i₀, the one before it fc1's output.
		st = append(st, stage{"abstract-i0", shareAbstract, solve(encodeOptions{abstract: true, abstractAt: g.enc})},
			stage{"abstract-fc1", shareAbstract, solve(encodeOptions{abstract: true, abstractAt: g.enc - 1})})
	}
	if opt.RelaxGap > 0 {
		st = append(st, stage{"relaxed", shareRelaxed, solve(encodeOptions{relaxGap: opt.RelaxGap})})
	}
	return append(st, stage{"exact", 1, solve(encodeOptions{})})
}

// solvePhase builds the MIP with the given relaxation gap and solves it,
// recording into res. done reports a final verdict.
func solvePhase(ctx context.Context, g *graph, b *Bounds, sm Sample, opt Options, eo encodeOptions, mipStart func(*encoding) []float64, replay func([]float64, string) (bool, error), res *Result) (done bool, err error) {
	ph := Phase{Name: "exact", Status: "not started"}
	at := "i0"
	if eo.abstractAt != g.enc {
		at = g.nodes[eo.abstractAt].name
	}
	switch {
	case eo.box:
		ph.Name = "box-" + at
	case eo.abstract:
		ph.Name = "abstract-" + at
	case eo.relaxGap > 0:
		ph.Name = "relaxed"
	}
	// The phase's time includes building its MIP (seconds on Show-and-Tell).
	pstart := time.Now()
	defer func() {
		ph.Seconds = time.Since(pstart).Seconds()
		res.Phases = append(res.Phases, ph)
	}()
	enc, err := encode(ctx, g, b, sm.K, eo)
	exact := !eo.abstract && eo.relaxGap == 0
	if stopped(err) {
		res.Reason, ph.Status = "time limit", "time limit"
		return false, nil
	}
	if err != nil {
		return false, err
	}
	res.Binaries, res.ReLUBinaries, res.Relaxed = enc.Binaries, enc.ActBinaries, enc.Relaxed
	ph.Binaries = enc.Binaries
	res.Incumbent = math.NaN() // only the last phase's incumbent is reported
	if opt.WriteMPS != "" && exact {
		if err := writeMPS(opt.WriteMPS, sm.Name, enc, res); err != nil {
			return false, err
		}
	}
	// The solve itself must end within half the verifier's grace of its
	// deadline: a solve abandoned after the grace (solveInTime) runs on,
	// taking the CPU and holding its files, and an external solver's
	// temporary directory outlives a lenspec that exits straight after the
	// sample.
	mo := mip.Options{Threads: opt.Threads, Params: opt.Params, Grace: solverGrace(opt.TimeLimit) / 2}
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
	if !opt.Decision && !eo.abstract {
		mo.Start = mipStart(enc)
	}
	r, err := solveInTime(ctx, solverGrace(opt.TimeLimit), func() (*mip.Result, error) {
		if opt.Decision {
			return decide(ctx, opt, enc.m, mo)
		}
		return opt.Solver.Solve(ctx, enc.m, mo)
	})
	if err != nil {
		if stopped(err) {
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
		// The sample's bound, not this solve's: a solve stopped before its
		// root has none (+Inf), and the reason would hide what the earlier
		// stages proved and the record's proven_bound says.
		res.Reason = fmt.Sprintf("solver stopped: %v, proven margin ≤ %.3g", r.Status, res.Bound)
		if r.Message != "" {
			res.Reason += " (" + r.Message + ")"
		}
	}
	return false, nil
}

// decide solves m in decision mode: a cutoff prunes every node whose
// margin is ≤ −Safety, and the solve stops at the first incumbent with
// margin ≥ Safety, a strict counterexample candidate to replay.
// solverGrace is how long past its context a solve may take to stop:
// 1 % of the sample's limit, between 50 ms and 1 s, so the limit holds
// within 5 % whatever the solver does.
func solverGrace(limit time.Duration) time.Duration {
	return min(max(limit/100, 50*time.Millisecond), time.Second)
}

// solveInTime runs solve and returns its result, or, once ctx is done and
// grace has passed without one, an error wrapping ctx's: the solve is
// abandoned to finish on its own. A solver asked to stop can still spend
// seconds on a large model before it looks at its clock (CBC inside
// preprocessing: 5 s past a 60 s limit at load 10), and the time limit
// must hold; what it would return then could only be "time limit" or a
// late incumbent, which may cost a witness but never a wrong verdict.
// solve must not share mutable state with the caller (a solve's events
// only cancel its own context).
func solveInTime(ctx context.Context, grace time.Duration, solve func() (*mip.Result, error)) (*mip.Result, error) {
	type outcome struct {
		r     *mip.Result
		err   error
		panic any
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				o.panic = p
			}
			done <- o
		}()
		o.r, o.err = solve()
	}()
	wait := func(o outcome) (*mip.Result, error) {
		if o.panic != nil {
			panic(o.panic) // the caller's recovery records the sample as failed
		}
		return o.r, o.err
	}
	select {
	case o := <-done:
		return wait(o)
	case <-ctx.Done():
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case o := <-done:
		return wait(o)
	case <-t.C:
		return nil, fmt.Errorf("verify: the solver did not stop within %v of its context: %w", grace, ctx.Err())
	}
}

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

// replayCandidate projects a candidate onto the set and decodes it in
// float64. ℓ(x′) > K̂ is settled by steps 0..K̂ alone, so the judgement
// decodes only those: a path with no eos and no tie there makes res
// vulnerable (stage names who found it), whatever a later step does; the
// recorded result is the full decoding. Otherwise res.Reason says why not.
func replayCandidate(ctx context.Context, x []float64, stage string, sm Sample, d64 model.Decoder[float64], maxSteps int, res *Result) (bool, error) {
	sm.Set.Project(x)
	if !sm.Set.Contains(x) {
		res.Reason = fmt.Sprintf("%s candidate lies outside the set after projection", stage)
		return false, nil
	}
	// Replay must finish even when the time limit has just passed: a
	// witness in hand is worth the milliseconds.
	ctx = context.WithoutCancel(ctx)
	judge := min(maxSteps, sm.K+1)
	head, err := model.Decode(ctx, d64, model.Batch[float64]{X: x}, judge)
	if err != nil {
		return false, err
	}
	if !spec.Exceeds(head[0], sm.K) || head[0].Tie() {
		res.Reason = fmt.Sprintf("%s candidate does not replay: decodes %d of the first %d tokens, tie margin %.2g there", stage, len(head[0].Tokens), judge, head[0].MinRelMargin)
		return false, nil
	}
	out, err := model.Decode(ctx, d64, model.Batch[float64]{X: x}, maxSteps)
	if err != nil {
		return false, err
	}
	res.Verdict, res.Stage = Vulnerable, stage
	res.Witness, res.WitnessResult = x, out[0]
	res.Reason = ""
	return true, nil
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

// roundStream is the falsifier stream of round r of a sample's search:
// round 0 the sample's own, later rounds distinct ones.
func roundStream(stream uint64, round int) uint64 {
	if round == 0 {
		return stream
	}
	return stream ^ uint64(round)*0x9e3779b97f4a7c15
}

// babSlice is how long branch and bound runs between the adaptive
// search's looks at its progress: an eighth of the time left, at least
// a second.
func babSlice(left time.Duration) time.Duration { return max(left/8, time.Second) }

// adaptiveSearch spends its time between branch and bound and the wide
// falsifier by how a proof is going: falsifier round 0 first (unless round,
// the first round to run, says an earlier stage ran it), then slices of
// branch and bound; after a slice whose rate of progress (the largest open
// margin bound's fall) would not bring the bound below 0 in the time left,
// another falsifier round with fresh restarts. A sample whose bound falls
// fast gets all the time for the proof; one whose margins stay open, which
// more often has a witness the first restarts missed (docs/results.md),
// gets round after round, and so does one whose branch and bound has
// ended without a verdict when this search is the last stage (last).
func adaptiveSearch(ctx context.Context, search *babSearch, falsify func(context.Context, int) (bool, error), res *Result, round int, last bool) (bool, error) {
	if round == 0 {
		if done, err := falsify(ctx, 0); done || err != nil {
			return done, err
		}
		round = 1
	}
	for ctx.Err() == nil {
		done, outOfReach, err := babRunSlice(ctx, res, func(ctx context.Context) (bool, float64, error) { return babPhase(ctx, search, res) })
		if done || err != nil {
			return done, err
		}
		if search.final != nil {
			// Branch and bound ended for good without a verdict. With
			// MIP stages after this one, they get the time (the exact
			// MIP decides what branch and bound could not); as the last
			// stage, the falsifier gets it: near-threshold models have
			// witnesses its first rounds missed.
			for last && ctx.Err() == nil {
				if done, err := falsify(ctx, round); done || err != nil {
					return done, err
				}
				round++
			}
			return false, nil
		}
		if outOfReach {
			if done, err := falsify(ctx, round); done || err != nil {
				return done, err
			}
			round++
		}
	}
	return false, nil
}

// firstTurn is branch and bound's first turn before the MIP stages: slices
// of its share (run: babPhase on the sample's search), ended early once a
// slice's progress says the proof is out of reach in the share
// (proofOutOfReach), or when the search has ended for good (ended), so
// that the token search gets the rest. The search is resumed after the
// token search, from where this turn left it. On
// models/mmnist-rnn-crown-e12 at δ = 0.1 three samples the token search
// proves spent the whole first turn (14 s) with their bound standing still
// and, ended early, were proved 11–14 s sooner (docs/results.md).
func firstTurn(ctx context.Context, res *Result, run func(context.Context) (done bool, bound float64, err error), ended func() bool) (bool, error) {
	for ctx.Err() == nil {
		done, outOfReach, err := babRunSlice(ctx, res, run)
		if done || err != nil || ended() || outOfReach {
			return done, err
		}
	}
	return false, nil
}

// babRunSlice runs branch and bound (run) for one slice of the time ctx has
// left and reports whether, at the rate its bound fell, the proof is out
// of reach in the time left after it (proofOutOfReach).
func babRunSlice(ctx context.Context, res *Result, run func(context.Context) (done bool, bound float64, err error)) (done, outOfReach bool, err error) {
	left := time.Duration(math.MaxInt64)
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	before := res.Bound
	t0 := time.Now()
	sctx, cancel := context.WithTimeout(ctx, babSlice(left))
	done, bound, err := run(sctx)
	cancel()
	if done || err != nil {
		return done, false, err
	}
	took := time.Since(t0)
	return false, proofOutOfReach(before, bound, took, left-took), nil
}

// proofOutOfReach reports whether branch and bound, whose open margin
// bound fell from before to after in the slice it just ran, would not
// bring it below 0 in the time left at that rate.
func proofOutOfReach(before, after float64, slice, left time.Duration) bool {
	if after <= 0 {
		return false
	}
	rate := (before - after) / slice.Seconds()
	return rate <= 0 || math.IsInf(before, 1) || after/rate > left.Seconds()
}
