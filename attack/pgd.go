package attack

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// PGDOptions configures projected gradient descent on the proxy objective.
type PGDOptions struct {
	Steps int     // iterations per run (paper: 10,000)
	LR    float64 // Adam learning rate (paper: 0.0005)
	Eps   float64 // clip ε of J̃: a step stops pushing once eos trails by ε
	Loss  Loss
	// Restarts is the number of runs per target: the first starts at the
	// unperturbed input, the others at uniform points of the set drawn
	// from the target's own random source. All run side by side in one
	// batch.
	Restarts int
	MaxSteps int // decoding step cap (≤ 0: the model's)
	// EarlyStop freezes a run once its output reaches the step cap: it
	// cannot get longer.
	EarlyStop bool
	// Progress, if set, is called after each iteration with the iteration
	// count and the number of targets whose best float32 output so far is
	// longer than their K̂.
	Progress func(step, lengthened int)
}

// DefaultPGD returns the paper's settings (§5.2).
func DefaultPGD() PGDOptions {
	return PGDOptions{Steps: 10000, LR: 0.0005, Eps: 1, Loss: LossMargin, Restarts: 1, EarlyStop: true}
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
	if o.MaxSteps > model.MaxStepCap {
		errs = append(errs, fmt.Errorf("step cap %d exceeds the supported %d", o.MaxSteps, model.MaxStepCap))
	}
	if _, err := ParseLoss(string(o.Loss)); o.Loss != "" && err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// runs are the PGD runs of a batch of targets: Restarts runs per target,
// each an iterate (an ad.Param updated by one shared Adam), the best
// iterate so far and its float32 output length.
type runs struct {
	targets  []Target
	restarts int
	size     int
	sets     []spec.Set[[]float32]
	x        []*ad.Param[float32]
	best     [][]float32
	bestLen  []int
	frozen   []bool
	evals    []int64 // per target: its runs are batched
}

func newRuns(targets []Target, restarts int) *runs {
	size := targets[0].Set.Dim()
	r := &runs{targets: targets, restarts: restarts, size: size}
	for _, tg := range targets {
		set := tg.Set.Float32()
		r.sets = append(r.sets, set)
		rng := tg.rng()
		for k := 0; k < restarts; k++ {
			p := ad.NewParam[float32](fmt.Sprintf("run%d", len(r.x)), 1, size)
			if k == 0 {
				copy(p.W.Data, narrow(tg.Set.Center()))
				set.Project(p.W.Data)
			} else {
				set.Sample(rng, p.W.Data)
			}
			r.x = append(r.x, p)
			r.best = append(r.best, append([]float32(nil), p.W.Data...))
			r.bestLen = append(r.bestLen, -1)
			r.frozen = append(r.frozen, false)
		}
	}
	r.evals = make([]int64, len(targets))
	return r
}

// active lists the runs among lo..hi-1 still going and copies their
// iterates into one batch.
func (r *runs) active(lo, hi int) (idx []int, batch []float32) {
	for i := lo; i < hi; i++ {
		if !r.frozen[i] {
			idx = append(idx, i)
		}
	}
	batch = make([]float32, len(idx)*r.size)
	for k, i := range idx {
		copy(batch[k*r.size:], r.x[i].W.Data)
	}
	return idx, batch
}

// observe records the float32 outputs of the runs idx at their current
// iterates, freezing runs that reached the cap.
func (r *runs) observe(idx []int, res []model.Result, maxSteps int, earlyStop bool) {
	for k, i := range idx {
		l := rank(res[k], maxSteps)
		if l > r.bestLen[i] {
			r.bestLen[i] = l
			copy(r.best[i], r.x[i].W.Data)
		}
		if earlyStop && l > maxSteps {
			r.frozen[i] = true
		}
		r.evals[i/r.restarts]++
	}
}

// lengthened counts targets with a run longer than their K̂ so far.
func (r *runs) lengthened() int {
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
type PGDRun struct {
	d32      model.Decoder[float32]
	opt      PGDOptions
	maxSteps int
	r        *runs
	adam     *ad.Adam[float32]
	shards   []pgdShard
	steps    int
}

// pgdShard is the runs lo..hi-1 (whole targets), whose proxy loss and
// input gradients one goroutine computes, on memory of its own.
type pgdShard struct {
	lo, hi int
	arena  *ad.Arena[float32]
}

// minShardTargets is the fewest targets worth a goroutine of their own: a
// smaller batch spends more in per-operation overhead than a second core
// saves.
const minShardTargets = 8

// NewPGDRun sets up the runs of PGD for targets (Restarts each). Steps
// use up to GOMAXPROCS cores, each on a contiguous share of the targets;
// runs are independent, so the result does not depend on the split.
func NewPGDRun(d32 model.Decoder[float32], targets []Target, opt PGDOptions) (*PGDRun, error) {
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("attack: %w", err)
	}
	if len(targets) == 0 {
		return nil, errors.New("attack: no targets")
	}
	if opt.Loss == "" {
		opt.Loss = LossMargin
	}
	p := &PGDRun{d32: d32, opt: opt, maxSteps: opt.MaxSteps, r: newRuns(targets, opt.Restarts)}
	if p.maxSteps <= 0 {
		p.maxSteps = d32.MaxSteps()
	}
	n := max(1, min(runtime.GOMAXPROCS(0), len(targets)/minShardTargets))
	for s := 0; s < n; s++ {
		lo, hi := s*len(targets)/n, (s+1)*len(targets)/n
		p.shards = append(p.shards, pgdShard{lo * opt.Restarts, hi * opt.Restarts, ad.NewArena[float32]()})
	}
	p.adam = ad.NewAdam(p.r.x, opt.LR)
	return p, nil
}

// Step runs one iteration: the proxy loss and its input gradient for every
// run still going, an Adam update and the projection. It reports false
// when every run has finished (early stop).
func (p *PGDRun) Step() (bool, error) {
	r := p.r
	live := make([]bool, len(p.shards))
	errs := make([]error, len(p.shards))
	var wg sync.WaitGroup
	for s := range p.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			live[s], errs[s] = p.shards[s].step(p)
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
		if !r.frozen[i] {
			r.sets[i/r.restarts].Project(r.x[i].W.Data)
		}
	}
	p.steps++
	return true, nil
}

// step evaluates the shard's live runs and leaves their input gradients
// in their parameters (Adam reads them); it reports whether any was live.
func (sh *pgdShard) step(p *PGDRun) (bool, error) {
	r := p.r
	idx, batch := r.active(sh.lo, sh.hi)
	if len(idx) == 0 {
		return false, nil
	}
	sh.arena.Reset() // every iteration's tape reuses the same memory
	tp := ad.NewTape[float32](true).Use(sh.arena)
	xn := tp.Var(ad.FromSlice(batch, len(idx), r.size))
	var prefix [][]int
	for k, i := range idx {
		if pre := r.targets[i/r.restarts].Prefix; pre != nil {
			if prefix == nil {
				prefix = make([][]int, len(idx))
			}
			prefix[k] = pre
		}
	}
	loss, _, res, err := objectiveRows(tp, p.d32, model.Input[float32]{X: xn}, p.maxSteps, p.opt.Loss, p.opt.Eps, prefix)
	if err != nil {
		return false, err
	}
	if err := tp.Backward(loss); err != nil {
		return false, err
	}
	// A run frozen here is not updated: its gradient is never read.
	r.observe(idx, res, p.maxSteps, p.opt.EarlyStop)
	for k, i := range idx {
		copy(r.x[i].G.Data, xn.Grad.Data[k*r.size:(k+1)*r.size])
	}
	return true, nil
}

// PGD minimises the proxy loss over the set of every target with Adam,
// projecting after every step, all targets and restarts batched together.
// Each run keeps the iterate with the longest float32 output; the best of
// each target's runs after float64 replay is returned.
func PGD(ctx context.Context, d32 model.Decoder[float32], d64 model.Decoder[float64], targets []Target, opt PGDOptions) ([]Outcome, error) {
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
	r, maxSteps := p.r, p.maxSteps
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
	// The last update was never evaluated.
	if idx, batch := r.active(0, len(r.x)); len(idx) > 0 {
		res, err := model.Decode(ctx, d32, model.Batch[float32]{X: batch}, maxSteps)
		if err != nil {
			return nil, err
		}
		r.observe(idx, res, maxSteps, opt.EarlyStop)
	}
	out := make([]Outcome, len(targets))
	for j, tg := range targets {
		var chosen Outcome
		for k := 0; k < opt.Restarts; k++ {
			i := j*opt.Restarts + k
			o, err := Replay(ctx, d64, tg, widen(r.best[i]), maxSteps)
			if err != nil {
				return nil, err
			}
			o.Found32 = r.bestLen[i]
			if k == 0 || better(o.Replayed, chosen.Replayed, maxSteps) {
				chosen = o
			}
		}
		chosen.Evals, chosen.Steps = r.evals[j], p.steps
		out[j] = chosen
	}
	return out, nil
}
