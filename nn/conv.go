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

// ForwardReLUInto is ForwardReLU with the output written to dst, on a
// tape that does not record (ad.Tape.Conv2DReLUInto).
func (c *Conv2D[T]) ForwardReLUInto(tp *ad.Tape[T], x *ad.Node[T], dst []T) *ad.Node[T] {
	return tp.Conv2DReLUInto(dst, x, tp.Param(c.W), tp.Param(c.B), c.Geom)
}

// Params lists the layer's parameters.
func (c *Conv2D[T]) Params() []*ad.Param[T] { return []*ad.Param[T]{c.W, c.B} }

// Interval propagates the box with centre c and radius r ≥ 0 (both
// [B, In, H, W]) through the convolution: the image box has centre
// conv(c) + b and radius conv(r) with |W|. It is the interval bound rule,
// differentiable so that training can shape the bounds.
func (c *Conv2D[T]) Interval(tp *ad.Tape[T], mid, rad *ad.Node[T]) (*ad.Node[T], *ad.Node[T]) {
	w := tp.Param(c.W)
	return tp.Conv2D(mid, w, tp.Param(c.B), c.Geom), tp.Conv2D(rad, tp.Abs(w), nil, c.Geom)
}
