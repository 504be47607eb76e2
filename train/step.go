package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
)

// Batch is one training batch: inputs (continuous rows in X, or token
// sequences in Tokens) and their target sequences, as Source.Batch
// returns them.
type Batch struct {
	X              []float32
	Tokens, Labels [][]int
}

// Trainer takes optimisation steps on a model: the loss and its gradient
// over a batch, gradient clipping and an AdamW update. The batch is split
// into Options.Shards contiguous shards whose gradients are computed
// concurrently (up to GOMAXPROCS at a time) and summed in shard order, so
// a step's result depends on the shard count but not on the number of
// cores. Fit drives one; benchmarks time its Step.
type Trainer struct {
	d      model.Decoder[float32]
	stab   model.Stabilizer[float32]
	cert   model.Certifier[float32]
	opt    Options
	params []*ad.Param[float32]
	// Adam is the optimiser (its moments are what checkpoints store).
	Adam   *ad.Adam[float32]
	arenas []*ad.Arena[float32] // one per shard, reused step after step
}

// NewTrainer prepares steps on d with opt (validated).
func NewTrainer(d model.Decoder[float32], opt Options) (*Trainer, error) {
	if err := opt.ValidateFor(d); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	stab, _ := d.(model.Stabilizer[float32])
	cert, _ := d.(model.Certifier[float32])
	t := &Trainer{d: d, stab: stab, cert: cert, opt: opt, params: d.Params()}
	t.Adam = ad.NewAdam(t.params, opt.LR)
	t.Adam.WeightDecay = opt.WeightDecay
	t.Adam.Decay = func(p *ad.Param[float32]) bool {
		return strings.HasSuffix(p.Name, "weight") && !strings.Contains(p.Name, "embedding")
	}
	for range opt.shards() {
		t.arenas = append(t.arenas, ad.NewArena[float32]())
	}
	return t, nil
}

// StepResult is what one step reports.
type StepResult struct {
	Loss      float64 // the batch's loss before the update
	Unstable  int     // the batch's unstable encoder ReLUs (stability regulariser on)
	Certified int     // the batch's rows certified by intervals (certified training on)
}

// Step takes optimisation step number step (from 0) of total: the learning
// rate follows the cosine schedule and the stability radius its ramp at
// that point.
func (t *Trainer) Step(b Batch, step, total int) (StepResult, error) {
	opt := t.opt
	rows := len(b.Labels)
	if rows == 0 {
		return StepResult{}, fmt.Errorf("train: step %d: empty batch", step)
	}
	size := t.d.Input().Size()
	if b.X != nil && len(b.X) != rows*size {
		return StepResult{}, fmt.Errorf("train: step %d: %d input values for %d rows of %d", step, len(b.X), rows, size)
	}
	eps := opt.StabilityEps * rampAt(opt.StabilityRamp, step, total)
	ibp := rampAt(opt.IBPRamp, step, total)
	for _, p := range t.params {
		p.ZeroGrad()
	}
	n := min(opt.shards(), rows)
	tapes := make([]*ad.Tape[float32], n)
	res := make([]StepResult, n)
	errs := make([]error, n)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for k := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			lo, hi := k*rows/n, (k+1)*rows/n
			tapes[k], res[k], errs[k] = t.shard(b, lo, hi, rows, n, k, step, eps, ibp)
		}()
	}
	wg.Wait()
	var out StepResult
	for k := range n {
		if errs[k] != nil {
			return StepResult{}, fmt.Errorf("train: step %d: %w", step, errs[k])
		}
		tapes[k].AddGrads()
		out.Loss += res[k].Loss
		out.Unstable += res[k].Unstable
		out.Certified += res[k].Certified
	}
	if math.IsNaN(out.Loss) || math.IsInf(out.Loss, 0) {
		return StepResult{}, fmt.Errorf("train: loss became %v at step %d (lower the learning rate)", out.Loss, step)
	}
	if opt.ClipNorm > 0 {
		clipGrad(t.params, opt.ClipNorm)
	}
	t.Adam.LR = cosine(opt.LR, opt.FinalLR, step, total)
	t.Adam.Step()
	return out, nil
}

// shard computes the loss of rows lo..hi-1 of b, weighted by their share
// of the batch, and its gradients: shard 0 into the parameters directly,
// the others into their tapes' own buffers. Its dropout masks
// come from a source of its own, derived from the seed, the step and the
// shard.
func (t *Trainer) shard(b Batch, lo, hi, rows, n, k, step int, eps, ibp float64) (*ad.Tape[float32], StepResult, error) {
	opt := t.opt
	arena := t.arenas[k]
	arena.Reset()
	tp := ad.NewTrainingTape[float32]().Use(arena)
	if k > 0 {
		// Shard 0 accumulates in the parameters' (zeroed) gradients, the
		// others in their own, added after it in shard order.
		tp.SeparateGrads()
	}
	in := model.Input[float32]{Dropout: opt.Dropout, LabelSmoothing: opt.LabelSmoothing, Rng: rand.New(rand.NewPCG(opt.Seed, dropoutStream|uint64(step)<<16|uint64(k)))}
	if b.Tokens != nil {
		in.Tokens = b.Tokens[lo:hi]
	}
	var clean *ad.Node[float32] // the inputs, around which the certified loss's balls lie
	var box *ad.Node[float32]   // with SABR, the centres of its small boxes
	w := opt.IBP * ibp
	if b.X != nil {
		size := len(b.X) / rows
		x := b.X[lo*size : hi*size]
		clean = tp.Const(ad.FromSlice(x, hi-lo, size))
		in.X = clean
		if (opt.IBPAttack || opt.SABR > 0) && w > 0 {
			xa, err := attackPoint(arena, t.d, x, b.Labels[lo:hi], opt.IBPEps*ibp, func(i int) *rand.Rand {
				return rand.New(rand.NewPCG(opt.Seed, attackStream|uint64(step)<<24|uint64(lo+i)))
			})
			if err != nil {
				return nil, StepResult{}, err
			}
			if opt.IBPAttack {
				in.X = tp.Const(ad.FromSlice(xa, hi-lo, size))
			}
			if opt.SABR > 0 {
				box = tp.Const(ad.FromSlice(sabrCenter(x, xa, opt.IBPEps*ibp, opt.SABR), hi-lo, size))
			}
		}
	}
	loss, err := t.taskLoss(tp, in, b.Labels[lo:hi])
	if err != nil {
		return nil, StepResult{}, err
	}
	var r StepResult
	if w > 0 {
		var rob *ad.Node[float32]
		at, radius := clean, opt.IBPEps*ibp
		if box != nil {
			at, radius = box, opt.SABR*radius
		}
		rob, r.Certified, err = t.cert.CertifiedLoss(tp, at, b.Labels[lo:hi], radius, opt.bound())
		if err != nil {
			return nil, StepResult{}, err
		}
		loss = tp.Add(tp.Scale(loss, float32(1-w)), tp.Scale(rob, float32(w)))
	}
	if opt.Stability > 0 {
		var rs *ad.Node[float32]
		rs, r.Unstable = t.stab.StabilityLoss(tp, in.X, eps)
		loss = tp.Add(loss, tp.Scale(rs, float32(opt.Stability)))
	}
	if n > 1 {
		// Both terms are means over the shard's rows.
		loss = tp.Scale(loss, float32(hi-lo)/float32(rows))
	}
	if err := tp.Backward(loss); err != nil {
		return nil, StepResult{}, err
	}
	r.Loss = float64(loss.Value.Data[0])
	return tp, r, nil
}

// taskLoss is the teacher-forced loss of the batch in, distilled from
// the teacher when there is one: its distributions are taken on a tape of
// their own that records nothing, at the same inputs.
func (t *Trainer) taskLoss(tp *ad.Tape[float32], in model.Input[float32], labels [][]int) (*ad.Node[float32], error) {
	opt := t.opt
	if !opt.distilling() {
		return model.TeacherForcedLoss(tp, t.d, in, labels)
	}
	ttp := ad.NewTape[float32](false)
	tin := model.Input[float32]{Tokens: in.Tokens}
	if in.X != nil {
		tin.X = ttp.Const(in.X.Value)
	}
	soft, err := model.TeacherSoftTargets(ttp, opt.Teacher, tin, labels, opt.DistillTemp)
	if err != nil {
		return nil, fmt.Errorf("teacher: %w", err)
	}
	soft.HardEOS = opt.DistillHardEOS
	return model.DistilledLoss(tp, t.d, in, labels, soft, opt.Distill)
}

// rampAt is a linear ramp's value at step of total: from 0 to 1 over the
// first fraction ramp of the steps, then 1.
func rampAt(ramp float64, step, total int) float64 {
	if end := ramp * float64(total); float64(step) < end {
		return float64(step) / end
	}
	return 1
}

// attackPoint returns the one-step attack of MTL-IBP's adversarial term
// (De Palma et al., "Expressive losses for verified robustness via convex
// combinations", 2024): from a uniform random point of the ball of radius
// eps around each row of x (clipped to the input range), one signed
// gradient step of 1.25·eps up the teacher-forced loss, projected back
// onto the ball and the range — FGSM with a random start (Wong et al.,
// "Fast is better than free", 2020). The gradient is the input's only:
// the weights are constants on its tape. Row i's random start comes from
// rng(i), a stream of its own, so that the point does not depend on how
// the batch is sharded.
func attackPoint(arena *ad.Arena[float32], d model.Decoder[float32], x []float32, labels [][]int, eps float64, rng func(row int) *rand.Rand) ([]float32, error) {
	spec := d.Input()
	lo, hi := func(v float32) float64 { return max(float64(v)-eps, spec.Min) }, func(v float32) float64 { return min(float64(v)+eps, spec.Max) }
	start := make([]float32, len(x))
	size := len(x) / len(labels)
	for r := range labels {
		g := rng(r)
		for i := r * size; i < (r+1)*size; i++ {
			l, h := lo(x[i]), hi(x[i])
			start[i] = float32(min(max(l+g.Float64()*(h-l), l), h))
		}
	}
	tp := ad.NewTape[float32](true).Use(arena)
	xv := tp.Var(ad.FromSlice(start, len(labels), len(x)/len(labels)))
	loss, err := model.TeacherForcedLoss(tp, d, model.Input[float32]{X: xv}, labels)
	if err != nil {
		return nil, fmt.Errorf("attack: %w", err)
	}
	out := start
	if err := tp.Backward(loss); err != nil {
		return out, nil // no gradient reaches the input: stay at the random point
	}
	step := 1.25 * eps
	for i, g := range xv.Grad.Data {
		v := float64(start[i])
		switch {
		case g > 0:
			v += step
		case g < 0:
			v -= step
		}
		out[i] = float32(min(max(v, lo(x[i])), hi(x[i])))
	}
	return out, nil
}

// sabrCenter is the centre of SABR's small box of radius lambda·eps for
// each input of x: the attack point xa moved toward x until it is at most
// (1 − lambda)·eps away in every coordinate, so that the box lies inside
// the ball of radius eps around x. (The certified loss then clips the box
// to the input range, as it clips the ball.)
func sabrCenter(x, xa []float32, eps, lambda float64) []float32 {
	r := (1 - lambda) * eps
	c := make([]float32, len(x))
	for i, v := range x {
		c[i] = float32(min(max(float64(xa[i]), float64(v)-r), float64(v)+r))
	}
	return c
}

// dropoutStream tags the random streams of dropout masks, apart from the
// per-epoch streams (1, 2, …) that shuffle and augment; attackStream those
// of the attack's random starts.
const (
	dropoutStream = 1 << 62
	attackStream  = 1 << 60
)
