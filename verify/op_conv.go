package verify

import (
	"math"

	"github.com/lenspec/lenspec/ad"
)

// conv is a 2-D convolution z = W ⋆ a + b over an input of shape [C, H, W]
// (flattened in that order), its output [O, Ho, Wo]. Its batched rules
// are matrix products through im2col: forward Z = W·cols(a), backward
// cols⁻¹(Wᵀ·C), one product per row of the batch.
type conv struct {
	c, h, w    int // input shape
	o, oh, ow  int // output shape
	k, stride  int
	padding    int
	weight     []float64 // [O × C·k·k]
	bias       []float64
	absWeight  []float64
	absBias    []float64
	taps       [][]tap // per output position (oy·ow + ox): the input pixels its kernel reads
	kk, outPix int
	// pixOf[q·positions + p] is the input pixel tap q reads at output
	// position p (−1: padding), the im2col matrix's index map.
	pixOf []int32
}

// tap is one kernel position inside the input: column q of the im2col
// matrix (channel, ky, kx) reads input pixel (channel, iy, ix).
type tap struct{ q, pix int32 }

func newConv(w, b []float64, inShape []int, out int, g ad.ConvGeom) *conv {
	cv := &conv{c: inShape[0], h: inShape[1], w: inShape[2], o: out, k: g.Kernel, stride: g.Stride, padding: g.Pad,
		weight: append([]float64(nil), w...), bias: append([]float64(nil), b...)}
	cv.oh, cv.ow = g.Out(cv.h), g.Out(cv.w)
	cv.kk, cv.outPix = cv.c*cv.k*cv.k, cv.oh*cv.ow
	cv.absWeight, cv.absBias = absOf(cv.weight), absOf(cv.bias)
	cv.taps = make([][]tap, cv.outPix)
	for oy := 0; oy < cv.oh; oy++ {
		for ox := 0; ox < cv.ow; ox++ {
			var ts []tap
			for ch := 0; ch < cv.c; ch++ {
				for ky := 0; ky < cv.k; ky++ {
					iy := oy*cv.stride - cv.padding + ky
					if iy < 0 || iy >= cv.h {
						continue
					}
					for kx := 0; kx < cv.k; kx++ {
						ix := ox*cv.stride - cv.padding + kx
						if ix < 0 || ix >= cv.w {
							continue
						}
						ts = append(ts, tap{int32((ch*cv.k+ky)*cv.k + kx), int32((ch*cv.h+iy)*cv.w + ix)})
					}
				}
			}
			cv.taps[oy*cv.ow+ox] = ts
		}
	}
	cv.pixOf = make([]int32, cv.kk*cv.outPix)
	for i := range cv.pixOf {
		cv.pixOf[i] = -1
	}
	for p, ts := range cv.taps {
		for _, t := range ts {
			cv.pixOf[int(t.q)*cv.outPix+p] = t.pix
		}
	}
	return cv
}

func (cv *conv) outSize() int { return cv.o * cv.outPix }

func (cv *conv) eval(ins [][]float64, _ int) []float64 {
	x := ins[0]
	z := make([]float64, cv.outSize())
	for o := 0; o < cv.o; o++ {
		wo := cv.weight[o*cv.kk : (o+1)*cv.kk]
		for p, ts := range cv.taps {
			s := cv.bias[o]
			for _, t := range ts {
				s += wo[t.q] * x[t.pix]
			}
			z[o*cv.outPix+p] = s
		}
	}
	return z
}

// interval is interval arithmetic, padded for rounding.
func (cv *conv) interval(ins [][]Interval, _ []bool) []Interval {
	x := ins[0]
	out := make([]Interval, cv.outSize())
	for o := 0; o < cv.o; o++ {
		wo := cv.weight[o*cv.kk : (o+1)*cv.kk]
		for p, ts := range cv.taps {
			lo, hi, abs := cv.bias[o], cv.bias[o], math.Abs(cv.bias[o])
			for _, t := range ts {
				w, iv := wo[t.q], x[t.pix]
				if w >= 0 {
					lo += w * iv.Lo
					hi += w * iv.Hi
				} else {
					lo += w * iv.Hi
					hi += w * iv.Lo
				}
				abs += math.Abs(w) * math.Max(math.Abs(iv.Lo), math.Abs(iv.Hi))
			}
			out[o*cv.outPix+p] = pad(lo, hi, abs)
		}
	}
	return out
}

// back: cols = Wᵀ·C (the coefficient of every kernel tap at every output
// position), for a chunk of rows as one matrix product, scattered back
// onto the input pixels the taps read.
func (cv *conv) back(s *backState, n *node) {
	c := s.coef[n.id]
	in := s.into(n.in[0])
	for r := 0; r < c.rows; r++ {
		s.k[r] += cv.biasDot(c.row(r), cv.bias)
	}
	cv.backRows(s.g.pool, c, in, cv.weight)
	if s.padded {
		a := s.abs[n.id]
		for r := 0; r < a.rows; r++ {
			s.kabs[r] += cv.biasDot(a.row(r), cv.absBias)
		}
		cv.backRows(s.g.pool, a, s.absInto(n.in[0]), cv.absWeight)
	}
}

// convChunk is how many rows share one matrix product.
const convChunk = 32

// backRows adds wᵀ ⋆ c to in, row by row, chunk by chunk. Only the
// output positions a row weighs (some channel's coefficient is not 0)
// take part in the product: an unstable neuron's unit row, or one a
// later convolution sent back, weighs a few of them (CROWN's
// intermediate bounds are mostly such rows), a dense row costs one scan
// more. A position left out adds exactly 0, and the kept ones add in the
// same order, so the result is the dense product's.
func (cv *conv) backRows(p pool, c, in *block, w []float64) {
	P := cv.outPix
	keep := make([]int32, 0, convChunk*P) // positions kept, row after row
	ends := make([]int, convChunk)        // keep[ends[r−1]:ends[r]] are row r's
	weighs := make([]bool, P)
	for r0 := 0; r0 < c.rows; r0 += convChunk {
		m := min(convChunk, c.rows-r0)
		keep = keep[:0]
		for r := 0; r < m; r++ {
			cr := c.row(r0 + r)
			clear(weighs)
			for o := 0; o < cv.o; o++ {
				for pp, v := range cr[o*P : (o+1)*P] {
					if v != 0 {
						weighs[pp] = true
					}
				}
			}
			for pp, ok := range weighs {
				if ok {
					keep = append(keep, int32(pp))
				}
			}
			ends[r] = len(keep)
		}
		n := len(keep)
		if n == 0 {
			continue
		}
		ct := p.dirty(cv.o, m*P) // [O × kept columns] in its first O·n values
		for o := 0; o < cv.o; o++ {
			dst := ct.v[o*n : (o+1)*n]
			k := 0
			for r := 0; r < m; r++ {
				cr := c.row(r0 + r)[o*P : (o+1)*P]
				for _, pp := range keep[k:ends[r]] {
					dst[k] = cr[pp]
					k++
				}
			}
		}
		cols := p.dirty(cv.kk, m*P) // [kk × kept columns], overwritten: β = 0
		gemm(true, false, cv.kk, n, cv.o, 1, w, ct.v[:cv.o*n], 0, cols.v[:cv.kk*n])
		k0 := 0
		for r := 0; r < m; r++ {
			x := in.row(r0 + r)
			for q := 0; q < cv.kk; q++ {
				src := cols.v[q*n : (q+1)*n]
				pix := cv.pixOf[q*P : (q+1)*P]
				for k := k0; k < ends[r]; k++ {
					if px := pix[keep[k]]; px >= 0 {
						x[px] += src[k]
					}
				}
			}
			k0 = ends[r]
		}
		p.put(ct, cols)
	}
}

// biasDot is Σ_o b_o · Σ_p c[o, p].
func (cv *conv) biasDot(c, b []float64) float64 {
	var k float64
	for o := 0; o < cv.o; o++ {
		var sum float64
		for _, v := range c[o*cv.outPix : (o+1)*cv.outPix] {
			sum += v
		}
		k += b[o] * sum
	}
	return k
}

// forward is Z = W·cols(X) + b, a chunk of rows per matrix product.
func (cv *conv) forward(s *backState, _ *node, ins []*block) *block {
	var p pool
	if s != nil {
		p = s.g.pool
	} else {
		p = pool{}
	}
	x := ins[0]
	P := cv.outPix
	z := newBlock(x.rows, cv.outSize())
	for r0 := 0; r0 < x.rows; r0 += convChunk {
		m := min(convChunk, x.rows-r0)
		cols := p.get(cv.kk, m*P)
		for r := 0; r < m; r++ {
			xr := x.row(r0 + r)
			for q := 0; q < cv.kk; q++ {
				dst := cols.v[q*m*P+r*P : q*m*P+(r+1)*P]
				for pp, pix := range cv.pixOf[q*P : (q+1)*P] {
					if pix >= 0 {
						dst[pp] = xr[pix]
					}
				}
			}
		}
		out := p.dirty(cv.o, m*P)
		for o := 0; o < cv.o; o++ {
			row := out.v[o*m*P : (o+1)*m*P]
			for i := range row {
				row[i] = cv.bias[o]
			}
		}
		gemm(false, false, cv.o, m*P, cv.kk, 1, cv.weight, cols.v, 1, out.v)
		for r := 0; r < m; r++ {
			zr := z.row(r0 + r)
			for o := 0; o < cv.o; o++ {
				copy(zr[o*P:(o+1)*P], out.v[o*m*P+r*P:o*m*P+(r+1)*P])
			}
		}
		p.put(cols, out)
	}
	return z
}

// encode: each output is its kernel's weighted sum over the input's
// expressions.
func (cv *conv) encode(_ *encoding, _ *node, ins [][]lin) []lin {
	out := make([]lin, cv.outSize())
	for o := 0; o < cv.o; o++ {
		wo := cv.weight[o*cv.kk : (o+1)*cv.kk]
		for p, ts := range cv.taps {
			ex := lin{c: cv.bias[o]}
			for _, t := range ts {
				ex.addExpr(ins[0][t.pix], wo[t.q])
			}
			out[o*cv.outPix+p] = ex
		}
	}
	return out
}

func (*conv) readsWide() {}
