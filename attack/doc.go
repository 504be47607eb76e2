// Package attack searches for inputs that lengthen a model's greedy output
// (paper §3.1–3.2): random search over the perturbation set, and projected
// gradient descent on a differentiable proxy of the output length.
//
// Attacks run on the float32 fast path. Nothing is claimed from float32:
// every outcome's best input is projected onto the ball in float64 and
// replayed through the float64 decoder, and only the replayed length, with
// its smallest top-2 logit margin, is reported.
package attack

import (
	"context"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
)

// Model is what the attacks need of a sequence model with continuous input:
// the decoder unrolled one step at a time on a tape, and batched greedy
// decoding. model.Captioner satisfies it.
type Model[T ad.Float] interface {
	InputSize() int
	EOS() int
	Vocab() int
	MaxSteps() int
	Encode(tp *ad.Tape[T], x *ad.Node[T]) *ad.Node[T]
	Step(tp *ad.Tape[T], in, h *ad.Node[T]) (logits, next *ad.Node[T])
	Embed(tp *ad.Tape[T], ids []int) *ad.Node[T]
	Decode(ctx context.Context, x []T, n, maxSteps int) ([]model.Result, error)
}
