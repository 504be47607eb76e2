package attack

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/spec"
)

// PGDOptions configures projected gradient descent on the proxy objective.
type PGDOptions struct {
	Steps int     // iterations per run (paper: 10,000)
	LR    float64 // Adam learning rate (paper: 0.0005)
	Eps   float64 // clip ε of J̃: a step stops pushing once eos trails by ε
	Loss  Loss
	// Restarts is the number of runs per target: the first starts at the
	// unperturbed input, the others at uniform points of the ball. All run
	// side by side in one batch.
	Restarts int
	MaxSteps int // decoding step cap (≤ 0: the model's)
	Seed     uint64
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

// PGD minimises the proxy loss over the ball of every target with Adam,
// projecting after every step, all targets and restarts batched together.
// Each run keeps the iterate with the longest float32 output; the best of
// each target's runs after float64 replay is returned.
func PGD(ctx context.Context, m Model[float32], m64 Model[float64], targets []Target, opt PGDOptions) ([]Outcome, error) {
	if opt.Steps < 0 || !(opt.LR > 0) || !(opt.Eps > 0) || opt.Restarts < 1 {
		return nil, fmt.Errorf("attack: PGD needs steps ≥ 0, lr > 0, eps > 0 and restarts ≥ 1 (got %d, %v, %v, %d)", opt.Steps, opt.LR, opt.Eps, opt.Restarts)
	}
	if opt.Loss == "" {
		opt.Loss = LossMargin
	}
	maxSteps := opt.MaxSteps
	if maxSteps <= 0 {
		maxSteps = m.MaxSteps()
	}
	size := m.InputSize()
	rows := len(targets) * opt.Restarts
	target := func(r int) *Target { return &targets[r/opt.Restarts] }
	rng := rand.New(rand.NewPCG(opt.Seed, 0x706764))
	x := make([]float32, rows*size)
	for r := 0; r < rows; r++ {
		row := x[r*size : (r+1)*size]
		if r%opt.Restarts == 0 {
			copy32(row, target(r).Spec.Ball.Center)
			spec.Project(target(r).Spec.Ball, row)
		} else {
			spec.Sample(target(r).Spec.Ball, rng, row)
		}
	}
	best := append([]float32(nil), x...)
	bestLen := make([]int, rows)
	for i := range bestLen {
		bestLen[i] = -1
	}
	frozen := make([]bool, rows)
	mom, vel := make([]float64, rows*size), make([]float64, rows*size)
	evals := make([]int64, len(targets)) // per target: runs are batched
	const b1, b2, adamEps = 0.9, 0.999, 1e-8

	// observe records the float32 lengths of the active rows' current
	// iterates and freezes runs that reached the cap.
	observe := func(active []int, lengths []int) {
		for i, r := range active {
			if lengths[i] > bestLen[r] {
				bestLen[r] = lengths[i]
				copy(best[r*size:(r+1)*size], x[r*size:(r+1)*size])
			}
			if opt.EarlyStop && lengths[i] > maxSteps {
				frozen[r] = true
			}
		}
	}
	lengthened := func() int {
		n := 0
		for j := range targets {
			for k := 0; k < opt.Restarts; k++ {
				if bestLen[j*opt.Restarts+k] > targets[j].Spec.K {
					n++
					break
				}
			}
		}
		return n
	}

	// gatherActive lists the runs still going and copies their iterates
	// into one batch.
	gatherActive := func() (active []int, batch []float32) {
		for r := 0; r < rows; r++ {
			if !frozen[r] {
				active = append(active, r)
			}
		}
		batch = make([]float32, len(active)*size)
		for i, r := range active {
			copy(batch[i*size:(i+1)*size], x[r*size:(r+1)*size])
		}
		return active, batch
	}

	steps := 0
	for ; steps < opt.Steps; steps++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		active, batch := gatherActive()
		if len(active) == 0 {
			break
		}
		tp := ad.NewTape[float32](true)
		xn := tp.Var(ad.FromSlice(batch, len(active), size))
		loss, res := Objective(tp, m, xn, maxSteps, opt.Loss, opt.Eps)
		if err := tp.Backward(loss); err != nil {
			return nil, err
		}
		for _, r := range active {
			evals[r/opt.Restarts]++
		}
		lengths := make([]int, len(active))
		for i, r := range res {
			lengths[i] = runLength(r.Tokens, r.Stopped, maxSteps)
		}
		observe(active, lengths)
		t := float64(steps + 1)
		c1, c2 := 1-math.Pow(b1, t), 1-math.Pow(b2, t)
		for i, r := range active {
			if frozen[r] {
				continue
			}
			g := xn.Grad.Data[i*size : (i+1)*size]
			row := x[r*size : (r+1)*size]
			mr, vr := mom[r*size:(r+1)*size], vel[r*size:(r+1)*size]
			for j, gj := range g {
				gf := float64(gj)
				mr[j] = b1*mr[j] + (1-b1)*gf
				vr[j] = b2*vr[j] + (1-b2)*gf*gf
				row[j] -= float32(opt.LR * (mr[j] / c1) / (math.Sqrt(vr[j]/c2) + adamEps))
			}
			spec.Project(target(r).Spec.Ball, row)
		}
		if opt.Progress != nil {
			opt.Progress(steps+1, lengthened())
		}
	}
	// The last update was never evaluated.
	if active, batch := gatherActive(); len(active) > 0 {
		res, err := m.Decode(ctx, batch, len(active), maxSteps)
		if err != nil {
			return nil, err
		}
		lengths := make([]int, len(active))
		for i, r := range res {
			lengths[i] = runLength(r.Tokens, r.Stopped, maxSteps)
		}
		observe(active, lengths)
		for _, r := range active {
			evals[r/opt.Restarts]++
		}
	}

	out := make([]Outcome, len(targets))
	for j := range targets {
		var chosen Outcome
		for k := 0; k < opt.Restarts; k++ {
			r := j*opt.Restarts + k
			o, err := replay(ctx, m64, targets[j], widen(best[r*size:(r+1)*size]), maxSteps)
			if err != nil {
				return nil, err
			}
			o.Found32 = bestLen[r]
			if k == 0 || better(o, chosen, maxSteps) {
				chosen = o
			}
		}
		chosen.Evals = evals[j]
		chosen.Steps = steps
		out[j] = chosen
	}
	return out, nil
}

// runLength orders outputs: a stopped output by its length, one that hit
// the cap above every stopped one.
func runLength(tokens []int, stopped bool, maxSteps int) int {
	if !stopped {
		return maxSteps + 1
	}
	return len(tokens)
}

// better prefers a success, then the longer replayed output, then the
// larger margin.
func better(a, b Outcome, maxSteps int) bool {
	if a.Success != b.Success {
		return a.Success
	}
	la := runLength(a.Result.Tokens, a.Result.Stopped, maxSteps)
	lb := runLength(b.Result.Tokens, b.Result.Stopped, maxSteps)
	if la != lb {
		return la > lb
	}
	return a.Result.MinRelMargin > b.Result.MinRelMargin
}
