package attack

import (
	"context"
	"fmt"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// Target is one attack problem: an input, its perturbation set and K̂.
type Target struct {
	Spec spec.Spec
	// Original is the greedy output on the unperturbed input (float64).
	Original model.Result
}

// NewTarget decodes x0 with the float64 model and builds the target for
// radius delta. k < 0 selects K̂ = ℓ(x0): "longer than the original".
func NewTarget(ctx context.Context, m64 Model[float64], x0 []float64, delta float64, k, maxSteps int, lo, hi float64) (Target, error) {
	b, err := spec.NewBall(x0, delta, lo, hi)
	if err != nil {
		return Target{}, err
	}
	res, err := m64.Decode(ctx, x0, 1, maxSteps)
	if err != nil {
		return Target{}, err
	}
	if k < 0 {
		k = len(res[0].Tokens)
	}
	return Target{Spec: spec.Spec{Ball: b, K: k}, Original: res[0]}, nil
}

// Outcome is what an attack found for one target, as replayed in float64.
type Outcome struct {
	// Input is the best input found, inside the ball (checked in float64).
	Input []float64
	// Result is its float64 greedy decoding; Found32 the length the float32
	// search saw (they differ only at ties).
	Result  model.Result
	Found32 int
	// Success: the replayed output is longer than K̂ and no step of its
	// path is a tie.
	Success bool
	// Evals counts model evaluations (forward passes of one input; a PGD
	// step is one forward and one backward pass).
	Evals int64
	// Steps is the number of PGD iterations run (0 for random search).
	Steps int
	// LengthCounts[ℓ] counts evaluated inputs by float32 output length, for
	// random search; index len-1 holds outputs that did not stop.
	LengthCounts []int64
}

// replay projects x onto the target's ball in float64 and decodes it with
// the float64 model: the only result lenspec reports.
func replay(ctx context.Context, m64 Model[float64], tg Target, x []float64, maxSteps int) (Outcome, error) {
	spec.Project(tg.Spec.Ball, x)
	if !spec.Contains(tg.Spec.Ball, x) {
		return Outcome{}, fmt.Errorf("attack: witness outside the perturbation set after projection")
	}
	res, err := m64.Decode(ctx, x, 1, maxSteps)
	if err != nil {
		return Outcome{}, err
	}
	r := res[0]
	return Outcome{
		Input:   x,
		Result:  r,
		Success: spec.Exceeds(r, tg.Spec.K) && r.MinRelMargin >= model.RelTieMargin,
	}, nil
}
