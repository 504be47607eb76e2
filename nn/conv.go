package nn

import (
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
)

// Conv2D is a 2-D convolution in NCHW layout with weight [Out, In, K, K]
// (PyTorch nn.Conv2d with square kernel, equal stride and zero padding).
type Conv2D[T ad.Float] struct {
	In, Out int
	Geom    ad.ConvGeom
	W, B    *ad.Param[T]
}

// NewConv2D returns a convolution named prefix, initialised from rng.
func NewConv2D[T ad.Float](prefix string, in, out int, g ad.ConvGeom, rng *rand.Rand) *Conv2D[T] {
	c := &Conv2D[T]{In: in, Out: out, Geom: g,
		W: ad.NewParam[T](prefix+".weight", out, in, g.Kernel, g.Kernel),
		B: ad.NewParam[T](prefix+".bias", out)}
	fanIn := in * g.Kernel * g.Kernel
	initHe(c.W, fanIn, rng)
	return c
}

// Forward convolves x [B, In, H, W].
func (c *Conv2D[T]) Forward(tp *ad.Tape[T], x *ad.Node[T]) *ad.Node[T] {
	return tp.Conv2D(x, tp.Param(c.W), tp.Param(c.B), c.Geom)
}

// ForwardReLU is ReLU(Forward(x)), fused (ad.Tape.Conv2DReLU).
func (c *Conv2D[T]) ForwardReLU(tp *ad.Tape[T], x *ad.Node[T]) *ad.Node[T] {
	return tp.Conv2DReLU(x, tp.Param(c.W), tp.Param(c.B), c.Geom)
}

// Params lists the layer's parameters.
func (c *Conv2D[T]) Params() []*ad.Param[T] { return []*ad.Param[T]{c.W, c.B} }

// Describe is the convolution of x, shaped in = [C, H, W], and returns
// the output's shape beside it.
func (c *Conv2D[T]) Describe(b Builder, name string, x Value, in [3]int) (Value, [3]int) {
	return b.Conv(name, x, c.W, c.B, in, c.Out, c.Geom), [3]int{c.Out, c.Geom.Out(in[1]), c.Geom.Out(in[2])}
}
