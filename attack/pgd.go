package attack

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
)

// PGDOptions configures projected gradient descent on the proxy objective,
// over any space's relaxation (Relaxable).
type PGDOptions struct {
	Steps int     // iterations per run (paper: 10,000 on images, 800 on text)
	LR    float64 // Adam learning rate (paper: 0.0005 on images, 0.005 on text)
	Eps   float64 // clip ε of J̃: a step stops pushing once eos trails by ε
	Loss  Loss
	// Restarts is the number of runs per target: the first starts at the
	// unperturbed input, the others at random points of the set drawn
	// from the target's own random source. A target's runs go side by
	// side in one batch of their own (NewPGDRun).
	Restarts int
	MaxSteps int // decoding step cap (≤ 0: the model's)
	// Horizon caps the steps the objective's unrolled decoding runs (≤ 0:
	// MaxSteps). Unrolling costs a forward and backward pass per output
	// token, so a row already past any length of interest would spend
	// most of the budget; replays still decode to MaxSteps.
	Horizon int
	// EarlyStop freezes a run once its output reaches the horizon without
	// stopping: it cannot get longer there.
	EarlyStop bool
	// Tau is the temperature of a relaxation that has one (token
	// substitutions' Gumbel-softmax); 0 elsewhere.
	Tau float64
	// Progress, if set, is called after each iteration with the iteration
	// count and the number of targets whose best float32 output so far is
	// longer than their K̂.
	Progress func(step, lengthened int)
}

// DefaultPGD returns the paper's settings on images (§5.2).
func DefaultPGD() PGDOptions {
	return PGDOptions{Steps: 10000, LR: 0.0005, Eps: 1, Loss: LossMargin, Restarts: 1, EarlyStop: true}
}

// DefaultGumbel returns the paper's settings on text (§5.2, NMT): 800
// iterations of Adam at 0.005, temperature 1.
func DefaultGumbel() PGDOptions {
	return PGDOptions{Steps: 800, LR: 0.005, Tau: 1, Eps: 1, Loss: LossMargin, Restarts: 1}
}

// Validate checks the options before any work; the errors name the
// setting.
func (o PGDOptions) Validate() error {
	var errs []error
	if o.Steps < 0 {
		errs = append(errs, fmt.Errorf("PGD steps %d must be non-negative", o.Steps))
	}
	if !(o.LR > 0) || math.IsInf(o.LR, 0) {
		errs = append(errs, fmt.Errorf("PGD learning rate %v must be positive and finite", o.LR))
	}
	if !(o.Eps > 0) || math.IsInf(o.Eps, 0) {
		errs = append(errs, fmt.Errorf("PGD clip ε %v must be positive and finite", o.Eps))
	}
	if o.Restarts < 1 {
		errs = append(errs, fmt.Errorf("PGD restarts %d must be at least 1", o.Restarts))
	}
	if !(o.Tau >= 0) || math.IsInf(o.Tau, 0) {
		errs = append(errs, fmt.Errorf("Gumbel-softmax temperature %v must be positive and finite", o.Tau))
	}
	if o.MaxSteps > model.MaxStepCap {
		errs = append(errs, fmt.Errorf("step cap %d exceeds the supported %d", o.MaxSteps, model.MaxStepCap))
	}
	if o.Horizon > model.MaxStepCap {
		errs = append(errs, fmt.Errorf("objective horizon %d exceeds the supported step cap %d", o.Horizon, model.MaxStepCap))
	}
	if _, err := ParseLoss(string(o.Loss)); o.Loss != "" && err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Relaxable is a space PGD can search: it gives each target a
// relaxation.
type Relaxable[E any] interface {
	Space[E]
	// Relax returns tg's relaxation for d32; rng is the target's own
	// source (PCG(Seed, Stream)), which the relaxation draws from first
	// and its runs' starts after.
	Relax(d32 model.Decoder[float32], tg Target[E], rng *rand.Rand, opt PGDOptions) (*Relaxation[E], error)
}

// Relaxation is a target's continuous stand-in for its set, which PGD
// optimises: a variable of Rows×Cols float32 values per run, the relaxed
// input it stands for, and the points of the set it gives back.
type Relaxation[E any] struct {
	Rows, Cols int
	// Init sets run k's starting variable (k = 0: the unperturbed input).
	Init func(k int, w []float32)
	// Project moves a variable back into its domain after every step
	// (nil: unconstrained).
	Project func(w []float32)
	// Input is the relaxed input of one run with variable v.
	Input func(tp *ad.Tape[float32], v *ad.Node[float32]) Relaxed
	// Candidates are the points of the set a run's variable gives back,
	// each named for Outcome.Pick.
	Candidates func(w []float32) ([]E, []string)
	// Direct says the variable is itself an input of the set, whose
	// float32 decoding is the relaxed input's: each run keeps its best
	// iterate (by float32 output), its last update is evaluated too, and
	// a target's Steps are the iterations any of its runs was going in.
	// Otherwise a run gives
	// back its last variable (a sample of a Gumbel relaxation decodes
	// another input each time), a target's Steps are its own iterations
	// and its Evals count the candidates replayed.
	Direct bool
	// Retire, if set, says a run whose relaxed input decoded to r has
	// nothing left to gain (an embedding run whose output reached the
	// horizon): it is frozen there, as EarlyStop freezes.
	Retire func(r model.Result) bool
}

// Relaxed is one run's relaxed input on a tape: a row of continuous input
// X [1, Dim], or a token sequence with its embedding rows [len, E].
type Relaxed struct {
	X        *ad.Node[float32]
	Tokens   []int
	Embedded *ad.Node[float32]
}

// batchInput joins runs' relaxed inputs into one batch.
func batchInput(tp *ad.Tape[float32], parts []Relaxed) model.Input[float32] {
	if parts[0].X != nil {
		xs := make([]*ad.Node[float32], len(parts))
		for i, p := range parts {
			xs[i] = p.X
		}
		if len(xs) == 1 {
			return model.Input[float32]{X: xs[0]}
		}
		return model.Input[float32]{X: tp.Concat(0, xs...)}
	}
	toks := make([][]int, len(parts))
	embs := make([]*ad.Node[float32], len(parts))
	for i, p := range parts {
		toks[i], embs[i] = p.Tokens, p.Embedded
	}
	if len(embs) == 1 {
		return model.Input[float32]{Tokens: toks, Embedded: embs[0]}
	}
	return model.Input[float32]{Tokens: toks, Embedded: tp.Concat(0, embs...)}
}

// runs are the PGD runs of a batch of targets: Restarts runs per target,
// each a variable (an ad.Param updated by one shared Adam), the best
// variable so far and its float32 output rank.
type runs[E any] struct {
	targets  []Target[E]
	rels     []*Relaxation[E] // per target
	restarts int
	x        []*ad.Param[float32]
	best     [][]float32
	bestLen  []int
	frozen   []bool
	iters    []int   // per run
	evals    []int64 // per target: its runs are batched
	steps    []int   // per target: the iterations it had a run going
}

func newRuns[E any](d32 model.Decoder[float32], targets []Target[E], opt PGDOptions) (*runs[E], error) {
	r := &runs[E]{targets: targets, restarts: opt.Restarts, evals: make([]int64, len(targets)), steps: make([]int, len(targets))}
	for _, tg := range targets {
		sp, ok := tg.Set.(Relaxable[E])
		if !ok {
			return nil, fmt.Errorf("attack: PGD needs a relaxation of %s", tg.Set.Describe())
		}
		rng := tg.rng()
		rel, err := sp.Relax(d32, tg, rng, opt)
		if err != nil {
			return nil, err
		}
		r.rels = append(r.rels, rel)
		for k := 0; k < opt.Restarts; k++ {
			p := ad.NewParam[float32](fmt.Sprintf("run%d", len(r.x)), rel.Rows, rel.Cols)
			rel.Init(k, p.W.Data)
			r.x = append(r.x, p)
			r.best = append(r.best, slices.Clone(p.W.Data))
			r.bestLen = append(r.bestLen, -1)
			r.frozen = append(r.frozen, false)
			r.iters = append(r.iters, 0)
		}
	}
	return r, nil
}

func (r *runs[E]) rel(i int) *Relaxation[E] { return r.rels[i/r.restarts] }

// active lists the runs among lo..hi-1 still going.
func (r *runs[E]) active(lo, hi int) []int {
	var idx []int
	for i := lo; i < hi; i++ {
		if !r.frozen[i] {
			idx = append(idx, i)
		}
	}
	return idx
}

// observe records the float32 outputs of the runs idx at their current
// variables, freezing runs that have nothing left to gain.
func (r *runs[E]) observe(idx []int, res []model.Result, horizon int, earlyStop bool) {
	for k, i := range idx {
		rel := r.rel(i)
		l := rank(res[k], horizon)
		if l > r.bestLen[i] {
			r.bestLen[i] = l
			copy(r.best[i], r.x[i].W.Data)
		}
		if earlyStop && l > horizon || rel.Retire != nil && rel.Retire(res[k]) {
			r.frozen[i] = true
		}
		r.iters[i]++
		r.evals[i/r.restarts]++
	}
}

// lengthened counts targets with a run longer than their K̂ so far.
func (r *runs[E]) lengthened() int {
	n := 0
	for j, tg := range r.targets {
		for k := 0; k < r.restarts; k++ {
			if r.bestLen[j*r.restarts+k] > tg.K {
				n++
				break
			}
		}
	}
	return n
}

// PGDRun is a batch of PGD runs in progress: PGD drives one from start to
// finish; benchmarks time its Step.
type PGDRun[E any] struct {
	d32               model.Decoder[float32]
	opt               PGDOptions
	maxSteps, horizon int
	r                 *runs[E]
	adam              *ad.Adam[float32]
	shards            []pgdShard
	steps             int
}

// pgdShard is one target's runs lo..hi-1, whose proxy loss and gradients
// are computed on a tape and memory of their own. A target is never
// batched with another: a GEMM's rounding of a row depends on the rows
// beside it (OpenBLAS picks kernels and blockings by the matrix's size),
// so a target batched with others would follow another path than alone,
// and its result would depend on the batch, the shard it fell in and the
// number of cores.
type pgdShard struct {
	lo, hi int
	arena  *ad.Arena[float32]
}

// NewPGDRun sets up the runs of PGD for targets (Restarts each). Steps
// use up to GOMAXPROCS cores, a target at a time on each; a target's runs
// are computed apart from every other target's, so its result does not
// depend on the batch it is in, its position there or the cores.
func NewPGDRun[E any](d32 model.Decoder[float32], targets []Target[E], opt PGDOptions) (*PGDRun[E], error) {
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("attack: %w", err)
	}
	if len(targets) == 0 {
		return nil, errors.New("attack: no targets")
	}
	if opt.Loss == "" {
		opt.Loss = LossMargin
	}
	r, err := newRuns(d32, targets, opt)
	if err != nil {
		return nil, err
	}
	p := &PGDRun[E]{d32: d32, opt: opt, maxSteps: capSteps(opt.MaxSteps, d32), r: r}
	p.horizon = p.maxSteps
	if opt.Horizon > 0 && opt.Horizon < p.maxSteps {
		p.horizon = opt.Horizon
	}
	for j := range targets {
		p.shards = append(p.shards, pgdShard{j * opt.Restarts, (j + 1) * opt.Restarts, ad.NewArena[float32]()})
	}
	p.adam = ad.NewAdam(r.x, opt.LR)
	return p, nil
}

// Step runs one iteration: the proxy loss and its gradient for every run
// still going, an Adam update and the projection. It reports false when
// every run has finished (early stop).
func (p *PGDRun[E]) Step() (bool, error) {
	r := p.r
	live := make([]bool, len(p.shards))
	errs := make([]error, len(p.shards))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(p.shards)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := int(next.Add(1)) - 1; s < len(p.shards); s = int(next.Add(1)) - 1 {
				live[s], errs[s] = shardStep(&p.shards[s], p)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return false, err
	}
	if !slices.Contains(live, true) {
		return false, nil
	}
	p.adam.StepWhere(func(i int) bool { return !r.frozen[i] })
	for i := range r.x {
		if proj := r.rel(i).Project; !r.frozen[i] && proj != nil {
			proj(r.x[i].W.Data)
		}
	}
	p.steps++
	return true, nil
}

// shardStep evaluates the shard's live runs and leaves their gradients in their
// parameters (Adam reads them); it reports whether any was live.
func shardStep[E any](sh *pgdShard, p *PGDRun[E]) (bool, error) {
	r := p.r
	idx := r.active(sh.lo, sh.hi)
	if len(idx) == 0 {
		return false, nil
	}
	r.steps[sh.lo/r.restarts]++
	sh.arena.Reset() // every iteration's tape reuses the same memory
	tp := ad.NewTape[float32](true).Use(sh.arena)
	vars := make([]*ad.Node[float32], len(idx))
	parts := make([]Relaxed, len(idx))
	var prefix [][]int
	for k, i := range idx {
		// The variables enter as the tape's leaves (an attack tape binds
		// parameters as constants); their gradients go to the Params Adam
		// updates.
		vars[k] = tp.Var(r.x[i].W)
		parts[k] = r.rel(i).Input(tp, vars[k])
		if pre := r.targets[i/r.restarts].Prefix; pre != nil {
			if prefix == nil {
				prefix = make([][]int, len(idx))
			}
			prefix[k] = pre
		}
	}
	loss, _, res, err := objectiveRows(tp, p.d32, batchInput(tp, parts), p.horizon, p.opt.Loss, p.opt.Eps, prefix)
	if err != nil {
		return false, err
	}
	if err := tp.Backward(loss); err != nil {
		return false, err
	}
	// A run frozen here is not updated: its gradient is never read.
	r.observe(idx, res, p.horizon, p.opt.EarlyStop)
	for k, i := range idx {
		if g := vars[k].Grad; g != nil {
			copy(r.x[i].G.Data, g.Data)
		} else {
			r.x[i].ZeroGrad()
		}
	}
	return true, nil
}

// PGD minimises the proxy loss over the relaxation of every target's set
// (paper §3.2: images; §3.3: text through a Gumbel-softmax relaxation;
// §5.2: the embedding attack) with Adam, projecting after every step, all
// targets and restarts batched together, and replays in float64 the
// points of the set each run gives back (Relaxation.Candidates); the best
// of each target's is returned.
func PGD[E any](ctx context.Context, d32 model.Decoder[float32], d64 model.Decoder[float64], targets []Target[E], opt PGDOptions) ([]Outcome[E], error) {
	if len(targets) == 0 {
		if err := opt.Validate(); err != nil {
			return nil, fmt.Errorf("attack: %w", err)
		}
		return nil, nil
	}
	p, err := NewPGDRun(d32, targets, opt)
	if err != nil {
		return nil, err
	}
	r := p.r
	for p.steps < opt.Steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		more, err := p.Step()
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		if opt.Progress != nil {
			opt.Progress(p.steps, r.lengthened())
		}
	}
	if err := p.evaluateLast(ctx); err != nil {
		return nil, err
	}
	out := make([]Outcome[E], len(targets))
	for j, tg := range targets {
		rel := r.rels[j]
		var chosen Outcome[E]
		replays, iters := 0, 0
		for k := 0; k < r.restarts; k++ {
			i := j*r.restarts + k
			w := r.x[i].W.Data
			if rel.Direct {
				w = r.best[i]
			}
			cands, picks := rel.Candidates(w)
			for c, cand := range cands {
				o, err := Replay(ctx, d64, tg, cand, p.maxSteps)
				if err != nil {
					return nil, err
				}
				o.Found32, o.Pick = r.bestLen[i], picks[c]
				if replays == 0 || better(o.Replayed, chosen.Replayed, p.maxSteps) {
					chosen = o
				}
				replays++
			}
			iters = max(iters, r.iters[i])
		}
		if rel.Direct {
			chosen.Evals, chosen.Steps = r.evals[j], r.steps[j]
		} else {
			chosen.Evals, chosen.Steps = r.evals[j]+int64(replays), iters
		}
		out[j] = chosen
	}
	return out, nil
}

// evaluateLast decodes the last update of every direct run still going,
// which no step has evaluated.
func (p *PGDRun[E]) evaluateLast(ctx context.Context) error {
	r := p.r
	for j, tg := range r.targets {
		if !r.rels[j].Direct {
			continue
		}
		idx := r.active(j*r.restarts, (j+1)*r.restarts)
		if len(idx) == 0 {
			continue
		}
		xs := make([]E, len(idx))
		for k, i := range idx {
			cands, _ := r.rels[j].Candidates(r.x[i].W.Data)
			xs[k] = cands[0]
		}
		res, err := tg.Set.Decode32(ctx, p.d32, xs, p.maxSteps)
		if err != nil {
			return err
		}
		r.observe(idx, res, p.maxSteps, p.opt.EarlyStop)
	}
	return nil
}
