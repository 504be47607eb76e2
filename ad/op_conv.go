package ad

import "fmt"

// ConvGeom is the geometry of a 2-D convolution: square kernel, stride and
// zero padding, the same on both axes.
type ConvGeom struct {
	Kernel, Stride, Pad int
}

// Out returns the output size for an input size along one axis.
func (g ConvGeom) Out(in int) int { return (in+2*g.Pad-g.Kernel)/g.Stride + 1 }

// convShape is one convolution's full shape (NCHW).
type convShape struct {
	b, c, h, w, oc, oh, ow int
	g                      ConvGeom
}

func shapeOf[T Float](x, w *Node[T], g ConvGeom, name string) convShape {
	xs, ws := x.Value.Shape, w.Value.Shape
	if len(xs) != 4 || len(ws) != 4 || ws[1] != xs[1] || ws[2] != g.Kernel || ws[3] != g.Kernel || g.Stride < 1 || g.Pad < 0 {
		panic(fmt.Sprintf("ad.%s: input %v, weight %v, geometry %+v", name, xs, ws, g))
	}
	s := convShape{b: xs[0], c: xs[1], h: xs[2], w: xs[3], oc: ws[0], g: g}
	s.oh, s.ow = g.Out(s.h), g.Out(s.w)
	if s.oh <= 0 || s.ow <= 0 {
		panic(fmt.Sprintf("ad.%s: input %v, geometry %+v: empty output", name, xs, g))
	}
	return s
}

// Conv2D returns the cross-correlation of x [B, C, H, W] with w [OC, C, K, K]
// plus bias [OC] (nil for none), in PyTorch's NCHW layout, as
// [B, OC, OH, OW]. It runs direct kernels (kernels.c; conv_go.go without
// cgo and for float64): lenspec's convolutions have few channels, where
// im2col + GEMM spends its time copying patches.
func (tp *Tape[T]) Conv2D(x, w, bias *Node[T], g ConvGeom) *Node[T] {
	return tp.conv(x, w, bias, g, false, nil, "Conv2D")
}

// Conv2DReLU is ReLU(Conv2D(x, w, bias)) in one pass: the activation is
// applied as the kernel stores its output, and the gradient is masked by
// the output's sign, so no pre-activation tensor is kept.
func (tp *Tape[T]) Conv2DReLU(x, w, bias *Node[T], g ConvGeom) *Node[T] {
	return tp.conv(x, w, bias, g, true, nil, "Conv2DReLU")
}

// Conv2DReLUInto is Conv2DReLU with its output written to dst, which must
// hold exactly B·OC·OH·OW values, on a tape that does not record: for
// inference that assembles a batch's features block by block, each block's
// last convolution then writes its rows in place instead of being copied
// there (measured: the copy was 3 % of a Multi-MNIST decode).
func (tp *Tape[T]) Conv2DReLUInto(dst []T, x, w, bias *Node[T], g ConvGeom) *Node[T] {
	if tp.record {
		panic("ad.Conv2DReLUInto: on a recording tape")
	}
	return tp.conv(x, w, bias, g, true, dst, "Conv2DReLUInto")
}

// conv is the convolution ops' forward pass and gradient; into, if set,
// receives the output instead of the tape's memory.
func (tp *Tape[T]) conv(x, w, bias *Node[T], g ConvGeom, relu bool, into []T, name string) *Node[T] {
	s := shapeOf(x, w, g, name)
	var b []T
	if bias != nil {
		if bias.Value.Len() != s.oc {
			panic(fmt.Sprintf("ad.%s: bias %v for %d channels", name, bias.Value.Shape, s.oc))
		}
		b = bias.Value.Data
	}
	var out *Tensor[T]
	if into == nil {
		out = tp.alloc(false, s.b, s.oc, s.oh, s.ow)
	} else if len(into) != s.b*s.oc*s.oh*s.ow {
		panic(fmt.Sprintf("ad.%s: output of %d values for shape [%d %d %d %d]", name, len(into), s.b, s.oc, s.oh, s.ow))
	} else {
		out = &Tensor[T]{Shape: []int{s.b, s.oc, s.oh, s.ow}, Data: into}
	}
	scratch := func(n int) []T { return tp.alloc(false, n).Data }
	saved := convForward(s, x.Value.Data, w.Value.Data, b, out.Data, relu, scratch)
	inputs := []*Node[T]{x, w}
	if bias != nil {
		inputs = append(inputs, bias)
	}
	return tp.op(out, func(o *Node[T]) {
		var mask, dx, dw, db []T // the gradient passes where a fused ReLU's output is positive
		if relu {
			mask = out.Data
		}
		dxSet := false
		if x.needsGrad {
			var g *Tensor[T]
			g, dxSet = x.gradInit()
			dx = g.Data
		}
		if w.needsGrad {
			dw = w.grad().Data
		}
		if bias != nil && bias.needsGrad {
			db = bias.grad().Data
		}
		convBackward(s, o.Grad.Data, mask, x.Value.Data, saved, w.Value.Data, dx, dxSet, dw, db, scratch)
	}, inputs...)
}
