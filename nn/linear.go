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

// NewLinearNoBias returns y = x·Wᵀ (PyTorch nn.Linear with bias=False):
// tensor prefix.weight only.
func NewLinearNoBias[T ad.Float](prefix string, in, out int, rng *rand.Rand) *Linear[T] {
	l := &Linear[T]{In: in, Out: out, W: ad.NewParam[T](prefix+".weight", out, in)}
	initHe(l.W, in, rng)
	return l
}

// bias is the bias on tp, nil for a layer without one.
func (l *Linear[T]) bias(tp *ad.Tape[T]) *ad.Node[T] {
	if l.B == nil {
		return nil
	}
	return tp.Param(l.B)
}

// Forward applies the layer to x [..., In].
func (l *Linear[T]) Forward(tp *ad.Tape[T], x *ad.Node[T]) *ad.Node[T] {
	return tp.Linear(x, tp.Param(l.W), l.bias(tp))
}

// ForwardReLU is ReLU(Forward(x)), fused (ad.Tape.LinearReLU).
func (l *Linear[T]) ForwardReLU(tp *ad.Tape[T], x *ad.Node[T]) *ad.Node[T] {
	return tp.LinearReLU(x, tp.Param(l.W), l.bias(tp))
}

// Params lists the layer's parameters.
func (l *Linear[T]) Params() []*ad.Param[T] {
	if l.B == nil {
		return []*ad.Param[T]{l.W}
	}
	return []*ad.Param[T]{l.W, l.B}
}

// Describe is the layer on x: W·x + b.
func (l *Linear[T]) Describe(b Builder, name string, x Value) Value {
	return b.Dense(name, x, l.W, param(l.B), l.Out)
}
