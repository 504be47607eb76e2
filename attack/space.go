package attack

import (
	"context"
	"errors"
	"math/rand/v2"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// Space is an input kind as the attacks see it: a perturbation set over
// points of type E, and how its points meet the model. lenspec has three:
// a continuous ball around an image (Continuous, E = []float64), the
// token substitutions of a sentence (Substitutions, E = []int) and a ball
// around a sentence's embedding rows (Embeddings, E = []float64). Each
// method that makes sense for several kinds is written once against this
// interface — RandomSearch, PGD over a relaxation (a space that is also a
// Relaxable), the Falsifier — and a method that needs one kind's
// structure says so in its types (Flip takes substitutions).
type Space[E any] interface {
	spec.Set[E]
	// Center is the unperturbed input; Clone copies a point.
	Center() E
	Clone(x E) E
	// Draw fills x with a random point of the set that may be reported
	// (Sample, drawn again while it may not).
	Draw(rng *rand.Rand, x E)
	// Admit makes x a point that may be reported, or says why it is not
	// one: a continuous point is projected first (float32 iterates may sit
	// an ulp outside), a token sequence must be the tokenisation of a text.
	Admit(x E) error
	// Decode32 decodes points with the float32 model, the searches' fast
	// path; Decode64 decodes one with the float64 model, the replay every
	// reported result comes from.
	Decode32(ctx context.Context, d model.Decoder[float32], xs []E, maxSteps int) ([]model.Result, error)
	Decode64(ctx context.Context, d model.Decoder[float64], x E, maxSteps int) (model.Result, error)
}

// Target is one attack problem: an input's perturbation set, of any
// kind, and K̂.
type Target[E any] struct {
	Set Space[E]
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
func (tg Target[E]) rng() *rand.Rand { return rand.New(rand.NewPCG(tg.Seed, tg.Stream)) }

// NewTarget decodes the centre of set with the float64 model and builds the
// target. k < 0 selects K̂ = ℓ(x0): "longer than the original".
func NewTarget[E any](ctx context.Context, d64 model.Decoder[float64], set Space[E], k, maxSteps int, seed, stream uint64) (Target[E], error) {
	res, err := set.Decode64(ctx, d64, set.Center(), maxSteps)
	if err != nil {
		return Target[E]{}, err
	}
	if k < 0 {
		k = len(res.Tokens)
	}
	return Target[E]{Set: set, K: k, Original: res, Seed: seed, Stream: stream}, nil
}

// Replayed is what every attack reports of its best input besides the input
// itself: the float64 replay and what the search cost.
type Replayed struct {
	// Result is the float64 greedy decoding; Found32 the rank (rank: a
	// stopped output's length, the cap + 1 for one that did not stop) of
	// the best output the float32 search saw. A search over inputs of the
	// reported kind differs from Result only at ties; the relaxed attacks
	// rank their relaxed inputs, within their gradient horizon, so theirs
	// may be far from the reported input's.
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
type Outcome[E any] struct {
	// Input is the best input found, a point of the set that may be
	// reported (Space.Admit).
	Input E
	Replayed
	// Pick says which candidate of a relaxation won where it offers
	// several (token substitutions: "sample", drawn from softmax(π), or
	// "argmax"; "original" when neither was a text).
	Pick string
}

// replayed is the Replayed of a float64 decoding against K̂.
func replayed(r model.Result, k int) Replayed {
	return Replayed{Result: r, Success: spec.Exceeds(r, k) && !r.Tie()}
}

// errOutside reports a witness the set does not contain.
var errOutside = errors.New("attack: witness outside the perturbation set")

// Replay admits x to the target's set (Space.Admit) and decodes it with
// the float64 model: the only result lenspec reports.
func Replay[E any](ctx context.Context, d64 model.Decoder[float64], tg Target[E], x E, maxSteps int) (Outcome[E], error) {
	if err := tg.Set.Admit(x); err != nil {
		return Outcome[E]{}, err
	}
	r, err := tg.Set.Decode64(ctx, d64, x, maxSteps)
	if err != nil {
		return Outcome[E]{}, err
	}
	return Outcome[E]{Input: x, Replayed: replayed(r, tg.K)}, nil
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

// countLength adds a float32 result to a length histogram of maxSteps+2
// bins (the last for outputs that hit the cap).
func countLength(counts []int64, r model.Result) {
	if r.Stopped {
		counts[len(r.Tokens)]++
	} else {
		counts[len(counts)-1]++
	}
}

// maxDraws bounds how many random draws of a point that may be reported
// Draw takes before the original (always one) is used instead.
const maxDraws = 1000

func narrow(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// capSteps resolves a step cap (≤ 0: the model's).
func capSteps(maxSteps int, d interface{ MaxSteps() int }) int {
	if maxSteps <= 0 {
		return d.MaxSteps()
	}
	return maxSteps
}
