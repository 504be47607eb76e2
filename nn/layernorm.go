package nn

import "github.com/lenspec/lenspec/ad"

// LayerNorm is PyTorch's nn.LayerNorm over the last dimension: each row
// normalised to zero mean and unit (biased) variance, then scaled by
// weight and shifted by bias, both [Dim] (tensors prefix.weight and
// prefix.bias).
type LayerNorm[T ad.Float] struct {
	Dim int
	// Eps is added to the variance (PyTorch's eps, 1e-5 by default).
	Eps  float64
	W, B *ad.Param[T]
}

// NewLayerNorm returns a layer normalisation named prefix, as PyTorch
// initialises it: weight ones, bias zeros, eps 1e-5.
func NewLayerNorm[T ad.Float](prefix string, dim int) *LayerNorm[T] {
	l := &LayerNorm[T]{Dim: dim, Eps: 1e-5,
		W: ad.NewParam[T](qualify(prefix, "weight"), dim),
		B: ad.NewParam[T](qualify(prefix, "bias"), dim)}
	for i := range l.W.W.Data {
		l.W.W.Data[i] = 1
	}
	return l
}

// Forward normalises x [..., Dim].
func (l *LayerNorm[T]) Forward(tp *ad.Tape[T], x *ad.Node[T]) *ad.Node[T] {
	return tp.LayerNorm(x, tp.Param(l.W), tp.Param(l.B), l.Eps)
}

// Params lists the layer's parameters.
func (l *LayerNorm[T]) Params() []*ad.Param[T] { return []*ad.Param[T]{l.W, l.B} }

// qualify is PyTorch's name of a module's tensor: prefix.name, or name
// alone for the top module (an empty prefix), as a lone layer's state_dict
// names its tensors.
func qualify(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
