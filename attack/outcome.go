package attack

import (
	"context"
	"errors"
	"math/rand/v2"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// Target is one attack problem: an input's perturbation set and K̂.
type Target struct {
	Set spec.Region
	K   int
	// Original is the greedy output on the unperturbed input (float64).
	Original model.Result
	// Seed and Stream seed every random choice made for this target:
	// PCG(Seed, Stream), with Stream the sample's index in its dataset.
	Seed, Stream uint64
	// Prefix, if set, is a continuation PGD pushes the decoder onto: the
	// objective first makes these tokens win, then pushes eos down (a
	// targeted continuation, for paths the current one's objective never
	// reaches). Outcomes are still plain greedy replays.
	Prefix []int
}

// rng is the target's own random source.
func (tg Target) rng() *rand.Rand { return rand.New(rand.NewPCG(tg.Seed, tg.Stream)) }

// NewTarget decodes the centre of set with the float64 model and builds the
// target. k < 0 selects K̂ = ℓ(x0): "longer than the original".
func NewTarget(ctx context.Context, d64 model.Decoder[float64], set spec.Region, k, maxSteps int, seed, stream uint64) (Target, error) {
	x0 := append([]float64(nil), set.Center()...)
	res, err := model.Decode(ctx, d64, model.Batch[float64]{X: x0}, maxSteps)
	if err != nil {
		return Target{}, err
	}
	if k < 0 {
		k = len(res[0].Tokens)
	}
	return Target{Set: set, K: k, Original: res[0], Seed: seed, Stream: stream}, nil
}

// Replayed is what every attack reports of its best input besides the input
// itself: the float64 replay and what the search cost.
type Replayed struct {
	// Result is the float64 greedy decoding; Found32 the rank (rank: a
	// stopped output's length, the cap + 1 for one that did not stop) of
	// the best output the float32 search saw. A search over inputs of the
	// reported kind differs from Result only at ties; the relaxed text
	// attacks rank their relaxed inputs, within their gradient horizon, so
	// theirs may be far from the discrete input's.
	Result  model.Result
	Found32 int
	// Success: the replayed output is longer than K̂ and no step of its
	// path is a tie.
	Success bool
	// Evals counts model evaluations (forward passes of one input; a PGD
	// step is one forward and one backward pass); Steps the iterations
	// (0 for random search).
	Evals int64
	Steps int
	// LengthCounts[ℓ] counts evaluated inputs by float32 output length;
	// the last index holds outputs that hit the step cap.
	LengthCounts []int64
}

// Outcome is what an attack found for one target, as replayed in float64.
type Outcome struct {
	// Input is the best input found, inside the set (checked in float64).
	Input []float64
	Replayed
}

// replayed is the Replayed of a float64 decoding against K̂.
func replayed(r model.Result, k int) Replayed {
	return Replayed{Result: r, Success: spec.Exceeds(r, k) && !r.Tie()}
}

// errOutside reports a witness the set does not contain after projection.
var errOutside = errors.New("attack: witness outside the perturbation set after projection")

// Replay projects x onto the target's set in float64 and decodes it with
// the float64 model: the only result lenspec reports.
func Replay(ctx context.Context, d64 model.Decoder[float64], tg Target, x []float64, maxSteps int) (Outcome, error) {
	tg.Set.Project(x)
	if !tg.Set.Contains(x) {
		return Outcome{}, errOutside
	}
	res, err := model.Decode(ctx, d64, model.Batch[float64]{X: x}, maxSteps)
	if err != nil {
		return Outcome{}, err
	}
	r := res[0]
	return Outcome{Input: x, Replayed: replayed(r, tg.K)}, nil
}

// rank orders outputs: a stopped output by its length, one that hit the
// cap above every stopped one. An output cut short by non-finite logits
// ranks by its length too (ℓ ≥ its length; it did not reach the cap).
func rank(r model.Result, maxSteps int) int {
	if !r.Stopped && !r.NonFinite {
		return maxSteps + 1
	}
	return len(r.Tokens)
}

// better prefers a success, then the longer replayed output, then the
// larger margin.
func better(a, b Replayed, maxSteps int) bool {
	if a.Success != b.Success {
		return a.Success
	}
	if la, lb := rank(a.Result, maxSteps), rank(b.Result, maxSteps); la != lb {
		return la > lb
	}
	return a.Result.MinRelMargin > b.Result.MinRelMargin
}
