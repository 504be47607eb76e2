package ad

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveConvBackward is the loop reference for both gradients of a
// convolution: dx += Σ w·g over the taps that read x, dw += Σ g·x over the
// output pixels, db += Σ g.
func naiveConvBackward(g, x, w []float64, b, c, h, wd, oc int, geo ConvGeom) (dx, dw, db []float64) {
	oh, ow := geo.Out(h), geo.Out(wd)
	k := geo.Kernel
	dx, dw, db = make([]float64, len(x)), make([]float64, len(w)), make([]float64, oc)
	for bi := 0; bi < b; bi++ {
		for o := 0; o < oc; o++ {
			for oy := 0; oy < oh; oy++ {
				for ox := 0; ox < ow; ox++ {
					gv := g[((bi*oc+o)*oh+oy)*ow+ox]
					db[o] += gv
					for ci := 0; ci < c; ci++ {
						for ky := 0; ky < k; ky++ {
							for kx := 0; kx < k; kx++ {
								iy, ix := oy*geo.Stride-geo.Pad+ky, ox*geo.Stride-geo.Pad+kx
								if iy < 0 || iy >= h || ix < 0 || ix >= wd {
									continue
								}
								xi, wi := ((bi*c+ci)*h+iy)*wd+ix, ((o*c+ci)*k+ky)*k+kx
								dx[xi] += w[wi] * gv
								dw[wi] += x[xi] * gv
							}
						}
					}
				}
			}
		}
	}
	return dx, dw, db
}

// TestConvKernelsMatchLoops runs every convolution kernel variant the
// machine has (AVX-512, AVX2, baseline C; Go loops without cgo) in float32
// against the float64 loop references, forward (with and without bias and
// the fused ReLU) and both gradients, over shapes that reach every path:
// channel counts that are not whole vectors, borders on every side, rows
// shorter than a pixel block, kernels wider than the fast path takes.
func TestConvKernelsMatchLoops(t *testing.T) {
	defer setKernels("")
	type shape struct {
		b, c, h, w, oc int
		g              ConvGeom
	}
	shapes := []shape{
		{3, 1, 28, 112, 8, ConvGeom{3, 2, 1}}, // the captioner's conv1
		{2, 8, 14, 56, 16, ConvGeom{3, 2, 1}}, // and conv2
		{2, 3, 9, 12, 4, ConvGeom{3, 2, 1}},
		{1, 2, 7, 7, 17, ConvGeom{3, 1, 1}},
		{2, 5, 11, 13, 33, ConvGeom{5, 2, 2}},
		{1, 4, 10, 9, 3, ConvGeom{2, 2, 0}},
		{2, 3, 6, 5, 7, ConvGeom{1, 1, 0}},
		{1, 2, 12, 31, 9, ConvGeom{3, 3, 1}},
		{1, 1, 5, 3, 2, ConvGeom{3, 1, 2}},
		{1, 3, 9, 17, 5, ConvGeom{3, 2, 0}},  // stride 2: no padding, odd width
		{2, 2, 8, 34, 6, ConvGeom{1, 2, 0}},  // a 1-wide kernel
		{1, 2, 7, 21, 3, ConvGeom{3, 2, 2}},  // padding past the kernel's reach
		{1, 3, 6, 40, 18, ConvGeom{2, 2, 1}}, // even kernel, two tiles
		{1, 2, 16, 18, 5, ConvGeom{8, 2, 3}}, // wider than the C kernels take
	}
	for _, variant := range []string{"v4", "v3", "base"} {
		level := setKernels(variant)
		for si, sh := range shapes {
			rng := rand.New(rand.NewPCG(uint64(si), 11))
			x := randTensor(rng, []int{sh.b, sh.c, sh.h, sh.w})
			w := randTensor(rng, []int{sh.oc, sh.c, sh.g.Kernel, sh.g.Kernel})
			bias := randTensor(rng, []int{sh.oc})
			oh, ow := sh.g.Out(sh.h), sh.g.Out(sh.w)
			g := randTensor(rng, []int{sh.b, sh.oc, oh, ow})
			name := fmt.Sprintf("%s(level %d) %+v", variant, level, sh)
			want := naiveConv(x.Data, w.Data, bias.Data, sh.b, sh.c, sh.h, sh.w, sh.oc, sh.g)
			for _, relu := range []bool{false, true} {
				for bi, withBias := range []bool{true, false, true} {
					// The third pass keeps x constant, as a first layer in
					// training is: the weight kernel then masks the ReLU itself.
					xConst := bi == 2
					// The tape's memory holds garbage from before, as a reused
					// arena's does: a first gradient must be written, not added to.
					tp := NewTape[float32](true).Use(dirtyArena[float32](1 << 20))
					xn, wn, bn := tp.Var(Convert[float32](x)), tp.Var(Convert[float32](w)), tp.Var(Convert[float32](bias))
					if xConst {
						xn = tp.Const(Convert[float32](x))
					}
					var y *Node[float32]
					b := bn
					if !withBias {
						b = nil
					}
					if relu {
						y = tp.Conv2DReLU(xn, wn, b, sh.g)
					} else {
						y = tp.Conv2D(xn, wn, b, sh.g)
					}
					gm := make([]float64, len(g.Data)) // the gradient past the ReLU
					for i, v := range want {
						ref := v
						if !withBias {
							ref -= bias.Data[(i/(oh*ow))%sh.oc]
						}
						if relu && ref <= 0 {
							ref = 0
						} else {
							gm[i] = g.Data[i]
						}
						if d := math.Abs(float64(y.Value.Data[i]) - ref); d > 1e-4*(1+math.Abs(ref)) {
							t.Fatalf("%s relu=%v bias=%v: y[%d] = %v, want %v", name, relu, withBias, i, y.Value.Data[i], ref)
						}
					}
					loss := tp.WeightedSum(y, Convert[float32](g).Data)
					// The second pass gives x a gradient of its own before the
					// convolution's (Σ x, recorded after it): the kernels then
					// add to dx; otherwise they write it.
					addTo := bi == 1
					if addTo {
						ones := make([]float32, len(x.Data))
						for i := range ones {
							ones[i] = 1
						}
						loss = tp.Add(loss, tp.WeightedSum(xn, ones))
					}
					if err := tp.Backward(loss); err != nil {
						t.Fatal(err)
					}
					dx, dw, db := naiveConvBackward(gm, x.Data, w.Data, sh.b, sh.c, sh.h, sh.w, sh.oc, sh.g)
					if addTo {
						for i := range dx {
							dx[i]++
						}
					}
					for _, c := range []struct {
						what      string
						got       []float32
						want      []float64
						skipUnset bool
					}{{"dx", gradOf(xn), dx, xConst}, {"dw", wn.Grad.Data, dw, false}, {"db", gradOf(bn), db, !withBias}} {
						if c.skipUnset {
							continue
						}
						for i := range c.want {
							scale := 1 + math.Abs(c.want[i])
							if d := math.Abs(float64(c.got[i]) - c.want[i]); d > 2e-4*scale*math.Sqrt(float64(sh.b*oh*ow)) {
								t.Fatalf("%s relu=%v: %s[%d] = %v, want %v", name, relu, c.what, i, c.got[i], c.want[i])
							}
						}
					}
				}
			}
		}
	}
}

// dirtyArena is an arena whose first n values were used before: they hold
// 7s, which an op that adds to a gradient it should have written shows.
func dirtyArena[T Float](n int) *Arena[T] {
	a := NewArena[T]()
	v := a.get(n)
	for i := range v {
		v[i] = 7
	}
	a.Reset()
	return a
}

func gradOf(n *Node[float32]) []float32 {
	if n.Grad == nil {
		return nil
	}
	return n.Grad.Data
}

// BenchmarkConv times the captioner's two convolutions on a block of 16
// canvases (as inference encodes them) and on a training batch of 64:
// forward with the fused ReLU, and the backward pass training runs
// (weight gradient, plus the input gradient for the second layer).
func BenchmarkConv(b *testing.B) {
	for _, batch := range []int{16, 64} {
		for _, s := range []convShape{
			{b: batch, c: 1, h: 28, w: 112, oc: 8, g: ConvGeom{3, 2, 1}},
			{b: batch, c: 8, h: 14, w: 56, oc: 16, g: ConvGeom{3, 2, 1}},
		} {
			s.oh, s.ow = s.g.Out(s.h), s.g.Out(s.w)
			rng := rand.New(rand.NewPCG(1, 1))
			x, w := make([]float32, s.b*s.c*s.h*s.w), make([]float32, s.oc*s.c*9)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			for i := range w {
				w[i] = float32(rng.NormFloat64())
			}
			y, bias := make([]float32, s.b*s.oc*s.oh*s.ow), make([]float32, s.oc)
			dw, db := make([]float32, len(w)), make([]float32, s.oc)
			var dx []float32
			if s.c > 1 {
				dx = make([]float32, len(x))
			}
			a := NewArena[float32]()
			sc := func(n int) []float32 { return a.get(n) }
			flops := float64(2 * s.b * s.oc * s.oh * s.ow * s.c * 9)
			name := fmt.Sprintf("b%d-c%d", s.b, s.c)
			b.Run(name+"-forward", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					a.Reset()
					convForward(s, x, w, bias, y, true, sc)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			a.Reset()
			saved := convForward(s, x, w, bias, y, true, sc) // in a, kept
			ab := NewArena[float32]()
			b.Run(name+"-backward", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					ab.Reset()
					convBackward(s, y, y, x, saved, w, dx, false, dw, db, func(n int) []float32 { return ab.get(n) })
				}
			})
		}
	}
}

// TestConv2DReLUInto: the output lands in the caller's slice, equal to
// Conv2DReLU's, on every kernel variant; a recording tape and a slice of
// the wrong size are refused.
func TestConv2DReLUInto(t *testing.T) {
	defer setKernels("")
	rng := rand.New(rand.NewPCG(3, 4))
	g := ConvGeom{3, 2, 1}
	x := Convert[float32](randTensor(rng, []int{3, 8, 14, 56}))
	w := Convert[float32](randTensor(rng, []int{16, 8, 3, 3}))
	bias := Convert[float32](randTensor(rng, []int{16}))
	for _, variant := range []string{"v4", "v3", "base"} {
		setKernels(variant)
		tp := NewTape[float32](false).Use(dirtyArena[float32](1 << 20))
		want := tp.Conv2DReLU(tp.Const(x), tp.Const(w), tp.Const(bias), g)
		dst := make([]float32, want.Value.Len()+2) // a sentinel on each side
		dst[0], dst[len(dst)-1] = 7, 7
		got := tp.Conv2DReLUInto(dst[1:len(dst)-1], tp.Const(x), tp.Const(w), tp.Const(bias), g)
		if &got.Value.Data[0] != &dst[1] || !slices.Equal(got.Value.Shape, want.Value.Shape) {
			t.Fatalf("%s: output of shape %v not in dst", variant, got.Value.Shape)
		}
		if !slices.Equal(dst[1:len(dst)-1], want.Value.Data) || dst[0] != 7 || dst[len(dst)-1] != 7 {
			t.Fatalf("%s: Conv2DReLUInto differs from Conv2DReLU or wrote past dst", variant)
		}
	}
	for name, f := range map[string]func(){
		"recording tape": func() {
			tp := NewTape[float32](true)
			tp.Conv2DReLUInto(make([]float32, 3*16*7*28), tp.Const(x), tp.Const(w), tp.Const(bias), g)
		},
		"short dst": func() {
			tp := NewTape[float32](false)
			tp.Conv2DReLUInto(make([]float32, 3*16*7*28-1), tp.Const(x), tp.Const(w), tp.Const(bias), g)
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
