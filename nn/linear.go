package nn

import (
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
)

// Linear is y = x·Wᵀ + b with W of shape [Out, In] (PyTorch nn.Linear).
type Linear[T ad.Float] struct {
	In, Out int
	W, B    *ad.Param[T]
}

// NewLinear returns a Linear layer named prefix (tensors prefix.weight and
// prefix.bias), initialised from rng.
func NewLinear[T ad.Float](prefix string, in, out int, rng *rand.Rand) *Linear[T] {
	l := &Linear[T]{In: in, Out: out,
		W: ad.NewParam[T](prefix+".weight", out, in),
		B: ad.NewParam[T](prefix+".bias", out)}
	initHe(l.W, in, rng)
	return l
}

// Forward applies the layer to x [..., In].
func (l *Linear[T]) Forward(tp *ad.Tape[T], x *ad.Node[T]) *ad.Node[T] {
	return tp.Linear(x, tp.Param(l.W), tp.Param(l.B))
}

// Params lists the layer's parameters.
func (l *Linear[T]) Params() []*ad.Param[T] { return []*ad.Param[T]{l.W, l.B} }
