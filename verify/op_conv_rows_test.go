package verify

import (
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

// TestConvBackRows checks the convolution's backward product, which
// multiplies only the output positions a row weighs, against the adjoint
// of the naive loop, on rows CROWN sends back (a neuron's unit row, one
// position's channels, a few scattered positions), dense rows and zero
// rows, more of them than one chunk, with strides and padding.
func TestConvBackRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 4))
	for _, tc := range []struct {
		name    string
		in      []int
		out     int
		g       ad.ConvGeom
		nonzero float64 // share of positions a sparse row weighs
	}{
		{"stride 2, padding 1", []int{2, 7, 9}, 3, ad.ConvGeom{Kernel: 3, Stride: 2, Pad: 1}, 0.1},
		{"stride 1, no padding", []int{1, 5, 6}, 4, ad.ConvGeom{Kernel: 3, Stride: 1, Pad: 0}, 0.3},
		{"kernel 1", []int{3, 4, 4}, 2, ad.ConvGeom{Kernel: 1, Stride: 1, Pad: 0}, 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kk := tc.in[0] * tc.g.Kernel * tc.g.Kernel
			w := make([]float64, tc.out*kk)
			for i := range w {
				w[i] = rng.NormFloat64()
			}
			cv := newConv(w, make([]float64, tc.out), tc.in, tc.out, tc.g)
			width, P := cv.outSize(), cv.outPix
			const rows = 2*convChunk + 7
			c := newBlock(rows, width)
			for r := 0; r < rows; r++ {
				cr := c.row(r)
				switch r % 5 {
				case 0: // an unstable neuron's unit row
					cr[rng.IntN(width)] = 1
				case 1: // one position's channels
					p := rng.IntN(P)
					for o := 0; o < cv.o; o++ {
						cr[o*P+p] = rng.NormFloat64()
					}
				case 2: // scattered positions
					for j := range cr {
						if rng.Float64() < tc.nonzero {
							cr[j] = rng.NormFloat64()
						}
					}
				case 3: // dense
					for j := range cr {
						cr[j] = rng.NormFloat64()
					}
				} // case 4: all zero
			}
			// Rows 0–19 all zero too: a chunk with nothing to multiply.
			clear(c.v[:20*width])
			in := newBlock(rows, cv.c*cv.h*cv.w)
			for i := range in.v {
				in.v[i] = float64(i % 7) // backRows adds to what is there
			}
			want := append([]float64(nil), in.v...)
			cv.backRows(pool{}, c, in, cv.weight)
			for r := 0; r < rows; r++ {
				naiveConvBack(cv, c.row(r), want[r*in.cols:(r+1)*in.cols])
			}
			if !close(in.v, want, 1e-12) {
				t.Fatalf("backRows differs from the naive adjoint")
			}
		})
	}
}

// naiveConvBack adds the adjoint of naiveConv (without its bias) applied
// to c to x.
func naiveConvBack(cv *conv, c, x []float64) {
	for o := 0; o < cv.o; o++ {
		for oy := 0; oy < cv.oh; oy++ {
			for ox := 0; ox < cv.ow; ox++ {
				co := c[(o*cv.oh+oy)*cv.ow+ox]
				for ch := 0; ch < cv.c; ch++ {
					for ky := 0; ky < cv.k; ky++ {
						for kx := 0; kx < cv.k; kx++ {
							iy, ix := oy*cv.stride-cv.padding+ky, ox*cv.stride-cv.padding+kx
							if iy >= 0 && iy < cv.h && ix >= 0 && ix < cv.w {
								x[(ch*cv.h+iy)*cv.w+ix] += cv.weight[((o*cv.c+ch)*cv.k+ky)*cv.k+kx] * co
							}
						}
					}
				}
			}
		}
	}
}
