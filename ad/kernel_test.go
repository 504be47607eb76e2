package ad

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestGemmMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dims := range [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 9, 33}, {64, 32, 32}, {5, 0, 3}} {
		m, n, k := dims[0], dims[1], dims[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				a := make([]float64, m*k)
				b := make([]float64, k*n)
				c := make([]float64, m*n)
				for i := range a {
					a[i] = rng.NormFloat64()
				}
				for i := range b {
					b[i] = rng.NormFloat64()
				}
				for i := range c {
					c[i] = rng.NormFloat64()
				}
				want := append([]float64(nil), c...)
				naiveGemm(tA, tB, m, n, k, 0.7, a, b, 0.3, want)
				Gemm(tA, tB, m, n, k, 0.7, a, b, 0.3, c)
				// The float32 path must agree to float32 precision.
				a32, b32, c32 := f32(a), f32(b), make([]float32, m*n)
				Gemm(tA, tB, m, n, k, 1, a32, b32, 0, c32)
				ref := make([]float64, m*n)
				naiveGemm(tA, tB, m, n, k, 1, a, b, 0, ref)
				for i := range c {
					if math.Abs(c[i]-want[i]) > 1e-12*float64(k+1) {
						t.Fatalf("%v tA=%v tB=%v: f64 c[%d] = %v, want %v", dims, tA, tB, i, c[i], want[i])
					}
					if math.Abs(float64(c32[i])-ref[i]) > 1e-5*float64(k+1) {
						t.Fatalf("%v tA=%v tB=%v: f32 c[%d] = %v, want %v", dims, tA, tB, i, c32[i], ref[i])
					}
				}
			}
		}
	}
}

// naiveConv is a direct 6-loop convolution.
func naiveConv(x, w, bias []float64, b, c, h, wd, oc int, g ConvGeom) []float64 {
	oh, ow := g.Out(h), g.Out(wd)
	out := make([]float64, b*oc*oh*ow)
	for bi := 0; bi < b; bi++ {
		for o := 0; o < oc; o++ {
			for oy := 0; oy < oh; oy++ {
				for ox := 0; ox < ow; ox++ {
					s := bias[o]
					for ci := 0; ci < c; ci++ {
						for ky := 0; ky < g.Kernel; ky++ {
							for kx := 0; kx < g.Kernel; kx++ {
								iy, ix := oy*g.Stride-g.Pad+ky, ox*g.Stride-g.Pad+kx
								if iy < 0 || iy >= h || ix < 0 || ix >= wd {
									continue
								}
								s += x[((bi*c+ci)*h+iy)*wd+ix] * w[((o*c+ci)*g.Kernel+ky)*g.Kernel+kx]
							}
						}
					}
					out[((bi*oc+o)*oh+oy)*ow+ox] = s
				}
			}
		}
	}
	return out
}

func TestConv2DMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, g := range []ConvGeom{{3, 2, 1}, {3, 1, 1}, {5, 2, 0}, {2, 2, 0}} {
		b, c, h, wd, oc := 2, 3, 9, 12, 4
		x := randTensor(rng, []int{b, c, h, wd})
		w := randTensor(rng, []int{oc, c, g.Kernel, g.Kernel})
		bias := randTensor(rng, []int{oc})
		tp := NewTape[float64](false)
		got := tp.Conv2D(tp.Const(x), tp.Const(w), tp.Const(bias), g).Value
		want := naiveConv(x.Data, w.Data, bias.Data, b, c, h, wd, oc, g)
		if !slices.Equal(got.Shape, []int{b, oc, g.Out(h), g.Out(wd)}) {
			t.Fatalf("%+v: shape %v", g, got.Shape)
		}
		for i := range want {
			if math.Abs(got.Data[i]-want[i]) > 1e-12 {
				t.Fatalf("%+v: out[%d] = %v, want %v", g, i, got.Data[i], want[i])
			}
		}
	}
}

// TestGemmChecksLengths: a shape bug panics in both backends instead of
// corrupting the heap in the cgo one.
func TestGemmChecksLengths(t *testing.T) {
	for _, c := range []struct {
		name       string
		a, b, cOut int
	}{{"short A", 5, 6, 6}, {"short B", 6, 5, 6}, {"short C", 6, 6, 3}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", c.name)
				}
			}()
			Gemm(false, false, 2, 3, 3, 1, make([]float32, c.a), make([]float32, c.b+3), 0, make([]float32, c.cOut))
		}()
	}
}
