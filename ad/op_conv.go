package ad

import "fmt"

// ConvGeom is the geometry of a 2-D convolution: square kernel, stride and
// zero padding, the same on both axes.
type ConvGeom struct {
	Kernel, Stride, Pad int
}

// Out returns the output size for an input size along one axis.
func (g ConvGeom) Out(in int) int { return (in+2*g.Pad-g.Kernel)/g.Stride + 1 }

// Conv2D returns the cross-correlation of x [B, C, H, W] with w [OC, C, K, K]
// plus bias [OC] (nil for none), in PyTorch's NCHW layout, as
// [B, OC, OH, OW].
//
// It lowers to one GEMM by im2col: rows are output pixels (b, oy, ox),
// columns are (c, ky, kx); the product with wᵀ is permuted back to NCHW.
func (tp *Tape[T]) Conv2D(x, w, bias *Node[T], g ConvGeom) *Node[T] {
	xs, ws := x.Value.Shape, w.Value.Shape
	if len(xs) != 4 || len(ws) != 4 || ws[1] != xs[1] || ws[2] != g.Kernel || ws[3] != g.Kernel {
		panic(fmt.Sprintf("ad.Conv2D: input %v, weight %v, kernel %d", xs, ws, g.Kernel))
	}
	b, c, h, wd := xs[0], xs[1], xs[2], xs[3]
	oc := ws[0]
	oh, ow := g.Out(h), g.Out(wd)
	ckk := c * g.Kernel * g.Kernel
	rows := b * oh * ow
	cols := New[T](rows, ckk)
	im2col(x.Value.Data, cols.Data, b, c, h, wd, oh, ow, g)
	mat := make([]T, rows*oc)
	if bias != nil {
		for r := 0; r < rows; r++ {
			copy(mat[r*oc:(r+1)*oc], bias.Value.Data)
		}
	}
	Gemm(false, true, rows, oc, ckk, 1, cols.Data, w.Value.Data, 1, mat)
	out := New[T](b, oc, oh, ow)
	hw := oh * ow
	for bi := 0; bi < b; bi++ {
		for p := 0; p < hw; p++ {
			src := mat[(bi*hw+p)*oc : (bi*hw+p+1)*oc]
			for o, v := range src {
				out.Data[(bi*oc+o)*hw+p] = v
			}
		}
	}
	inputs := []*Node[T]{x, w}
	if bias != nil {
		inputs = append(inputs, bias)
	}
	return tp.op(out, func(o *Node[T]) {
		gmat := make([]T, rows*oc) // dOut in [rows, oc] layout
		for bi := 0; bi < b; bi++ {
			for o2 := 0; o2 < oc; o2++ {
				src := o.Grad.Data[(bi*oc+o2)*hw : (bi*oc+o2+1)*hw]
				for p, v := range src {
					gmat[(bi*hw+p)*oc+o2] = v
				}
			}
		}
		if w.needsGrad { // dW = gmatᵀ·cols
			Gemm(true, false, oc, ckk, rows, 1, gmat, cols.Data, 1, w.grad().Data)
		}
		if bias != nil && bias.needsGrad {
			gb := bias.grad().Data
			for r := 0; r < rows; r++ {
				for j, v := range gmat[r*oc : (r+1)*oc] {
					gb[j] += v
				}
			}
		}
		if x.needsGrad { // dcols = gmat·W, then scatter back
			dcols := make([]T, rows*ckk)
			Gemm(false, false, rows, ckk, oc, 1, gmat, w.Value.Data, 0, dcols)
			col2im(dcols, x.grad().Data, b, c, h, wd, oh, ow, g)
		}
	}, inputs...)
}

func im2col[T Float](x, cols []T, b, c, h, w, oh, ow int, g ConvGeom) {
	k := g.Kernel
	ckk := c * k * k
	for bi := 0; bi < b; bi++ {
		for oy := 0; oy < oh; oy++ {
			for ox := 0; ox < ow; ox++ {
				row := cols[((bi*oh+oy)*ow+ox)*ckk:]
				for ci := 0; ci < c; ci++ {
					base := (bi*c + ci) * h * w
					for ky := 0; ky < k; ky++ {
						iy := oy*g.Stride - g.Pad + ky
						for kx := 0; kx < k; kx++ {
							ix := ox*g.Stride - g.Pad + kx
							var v T
							if iy >= 0 && iy < h && ix >= 0 && ix < w {
								v = x[base+iy*w+ix]
							}
							row[(ci*k+ky)*k+kx] = v
						}
					}
				}
			}
		}
	}
}

func col2im[T Float](cols, dx []T, b, c, h, w, oh, ow int, g ConvGeom) {
	k := g.Kernel
	ckk := c * k * k
	for bi := 0; bi < b; bi++ {
		for oy := 0; oy < oh; oy++ {
			for ox := 0; ox < ow; ox++ {
				row := cols[((bi*oh+oy)*ow+ox)*ckk:]
				for ci := 0; ci < c; ci++ {
					base := (bi*c + ci) * h * w
					for ky := 0; ky < k; ky++ {
						iy := oy*g.Stride - g.Pad + ky
						if iy < 0 || iy >= h {
							continue
						}
						for kx := 0; kx < k; kx++ {
							ix := ox*g.Stride - g.Pad + kx
							if ix >= 0 && ix < w {
								dx[base+iy*w+ix] += row[(ci*k+ky)*k+kx]
							}
						}
					}
				}
			}
		}
	}
}
