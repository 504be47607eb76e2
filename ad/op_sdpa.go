package ad

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
)

// AttentionOptions says which keys each query of Attention sees, and how
// its weights are dropped in training. The zero value hides and drops
// nothing.
type AttentionOptions struct {
	// Causal lets query i see key j only for j ≤ i + Tk − Tq: the usual
	// lower triangle when Tq = Tk, aligned at the end otherwise, so that
	// the queries of a decoder's newest steps over a cache of every earlier
	// key are masked as they would be in the whole sequence.
	Causal bool
	// KeyPad, if not nil, holds one flag per batch row and key, [B, Tk] row
	// major, as PyTorch's key_padding_mask: a set flag hides that key (a
	// padding position) from every query of that row.
	KeyPad []bool
	// Dropout, if positive, drops each attention weight with this
	// probability after the softmax and scales the others by
	// 1/(1 − Dropout), as nn.MultiheadAttention's dropout does in
	// training; the masks are drawn from Rng.
	Dropout float64
	Rng     *rand.Rand
}

// Attention is multi-head scaled dot-product attention,
//
//	out_h = softmax(Q_h·K_hᵀ/√dh + mask)·V_h  for each head h,
//
// with the heads' outputs side by side. The layout is time-major, PyTorch's
// nn.MultiheadAttention default (batch_first=False): q is [Tq, B, D], k and
// v are [Tk, B, D], the output is [Tq, B, D], and head h is the columns
// h·dh … (h+1)·dh − 1 of D = heads·dh. Each head is read in place through
// the GEMM's leading dimension, so the projections' outputs need no
// transposes into a [B·heads, T, dh] layout and the output feeds the output
// projection as it is; time-major keys and values let a decoder's cache grow
// by appending a step's rows.
//
// A query that sees no key (all masked) gets zeros, where PyTorch gives NaN.
// The probabilities (and, with dropout, the weights applied) are kept for
// the backward pass, [B·heads, Tq, Tk] each.
func (tp *Tape[T]) Attention(q, k, v *Node[T], heads int, opt AttentionOptions) *Node[T] {
	qs, ks, vs := q.Value.Shape, k.Value.Shape, v.Value.Shape
	if len(qs) != 3 || len(ks) != 3 || len(vs) != 3 || heads < 1 || qs[2]%heads != 0 ||
		ks[1] != qs[1] || ks[2] != qs[2] || vs[0] != ks[0] || vs[1] != ks[1] || vs[2] != ks[2] || ks[0] == 0 {
		panic(fmt.Sprintf("ad.Attention: query %v, key %v, value %v, %d heads", qs, ks, vs, heads))
	}
	s := sdpaShape{tq: qs[0], tk: ks[0], b: qs[1], d: qs[2], heads: heads}
	if opt.KeyPad != nil && len(opt.KeyPad) != s.b*s.tk {
		panic(fmt.Sprintf("ad.Attention: %d padding flags for %d rows of %d keys", len(opt.KeyPad), s.b, s.tk))
	}
	if opt.Dropout > 0 && (opt.Dropout >= 1 || opt.Rng == nil) {
		panic(fmt.Sprintf("ad.Attention: dropout %v (with a source: %v)", opt.Dropout, opt.Rng != nil))
	}
	opt.KeyPad = append([]bool(nil), opt.KeyPad...)
	p := tp.alloc(false, s.b*heads, s.tq, s.tk).Data
	pd := p // the weights applied: p, or p with dropout
	if opt.Dropout > 0 {
		pd = tp.alloc(false, len(p)).Data
	}
	out := tp.alloc(false, s.tq, s.b, s.d)
	sdpaForward(s, opt, q.Value.Data, k.Value.Data, v.Value.Data, p, pd, out.Data)
	return tp.op(out, func(o *Node[T]) {
		var dq, dk, dv []T
		var bq, bk, bv T
		// Betas are taken in the order the gradients are written below, so
		// that a node passed twice (self-attention on one tensor) is
		// written, then added to.
		if q.needsGrad {
			dq, bq = gradBeta(q)
		}
		if k.needsGrad {
			dk, bk = gradBeta(k)
		}
		if v.needsGrad {
			dv, bv = gradBeta(v)
		}
		scratch := tp.alloc(false, s.tq*s.tk).Data
		sdpaBackward(s, q.Value.Data, k.Value.Data, v.Value.Data, p, pd, o.Grad.Data, scratch, dq, bq, dk, bk, dv, bv)
	}, q, k, v)
}

// sdpaShape is Attention's sizes: Tq queries and Tk keys per batch row, B
// rows, width D in heads heads.
type sdpaShape struct{ tq, tk, b, d, heads int }

// head is the offset of head h of batch row bi in a time-major tensor, and
// the leading dimension (B·D) between its rows.
func (s sdpaShape) head(bi, h int) (off, ld int) { return bi*s.d + h*(s.d/s.heads), s.b * s.d }

// visible is the last key query i may see (before padding).
func (s sdpaShape) visible(opt AttentionOptions, i int) int {
	if opt.Causal {
		return min(s.tk-1, i+s.tk-s.tq)
	}
	return s.tk - 1
}

// sdpaForward writes the probabilities to p and the output to out; with
// dropout, the weights applied to pd (else pd is p).
func sdpaForward[T Float](s sdpaShape, opt AttentionOptions, q, k, v, p, pd, out []T) {
	dh := s.d / s.heads
	scale := T(1 / math.Sqrt(float64(dh)))
	for bi := 0; bi < s.b; bi++ {
		var pad []bool
		if opt.KeyPad != nil {
			pad = opt.KeyPad[bi*s.tk : (bi+1)*s.tk]
		}
		for h := 0; h < s.heads; h++ {
			off, ld := s.head(bi, h)
			pb := p[(bi*s.heads+h)*s.tq*s.tk : (bi*s.heads+h+1)*s.tq*s.tk]
			gemmLD(false, true, s.tq, s.tk, dh, scale, q[off:], ld, k[off:], ld, 0, pb, s.tk)
			for i := 0; i < s.tq; i++ {
				softmaxVisible(pb[i*s.tk:(i+1)*s.tk], s.visible(opt, i), pad)
			}
			wb := pd[(bi*s.heads+h)*s.tq*s.tk : (bi*s.heads+h+1)*s.tq*s.tk]
			if opt.Dropout > 0 {
				keep := T(1 / (1 - opt.Dropout))
				for j, x := range pb {
					if opt.Rng.Float64() < opt.Dropout {
						wb[j] = 0
					} else {
						wb[j] = x * keep
					}
				}
			}
			gemmLD(false, false, s.tq, dh, s.tk, 1, wb, s.tk, v[off:], ld, 0, out[off:], ld)
		}
	}
}

// softmaxVisible replaces row by its softmax over columns 0 … last not
// flagged in pad (nil: none), and the other columns by 0; all zeros if no
// column is visible.
func softmaxVisible[T Float](row []T, last int, pad []bool) {
	m := math.Inf(-1)
	for j := 0; j <= last; j++ {
		if pad == nil || !pad[j] {
			m = math.Max(m, float64(row[j]))
		}
	}
	if math.IsInf(m, -1) {
		clear(row)
		return
	}
	var sum float64
	for j := range row {
		if j > last || (pad != nil && pad[j]) {
			row[j] = 0
			continue
		}
		e := math.Exp(float64(row[j]) - m)
		row[j] = T(e)
		sum += e
	}
	inv := T(1 / sum)
	for j := 0; j <= last; j++ {
		row[j] *= inv
	}
}

// sdpaBackward writes (beta 0) or adds (beta 1) the gradients of the query,
// key and value that are not nil, from the output's gradient g, the
// probabilities p and the weights applied pd; dp is scratch of Tq·Tk
// values.
func sdpaBackward[T Float](s sdpaShape, q, k, v, p, pd, g, dp, dq []T, bq T, dk []T, bk T, dv []T, bv T) {
	dh := s.d / s.heads
	scale := T(1 / math.Sqrt(float64(dh)))
	for bi := 0; bi < s.b; bi++ {
		for h := 0; h < s.heads; h++ {
			off, ld := s.head(bi, h)
			blk := (bi*s.heads + h) * s.tq * s.tk
			pb, wb := p[blk:blk+s.tq*s.tk], pd[blk:blk+s.tq*s.tk]
			if dq != nil || dk != nil {
				// dW = dO·Vᵀ for the weights applied W = P ⊙ M (M the
				// dropout's scaled mask, 1 without), then with
				// a = W ⊙ dW, dS = a − P·rowsum(a): P ⊙ (dP − rowsum(P ⊙
				// dP)) for dP = M ⊙ dW, zero where P is (masked keys
				// pass nothing back).
				gemmLD(false, true, s.tq, s.tk, dh, 1, g[off:], ld, v[off:], ld, 0, dp, s.tk)
				for i := 0; i < s.tq; i++ {
					pr, wr, dr := pb[i*s.tk:(i+1)*s.tk], wb[i*s.tk:(i+1)*s.tk], dp[i*s.tk:(i+1)*s.tk]
					var sum T
					for j, w := range wr {
						dr[j] *= w
						sum += dr[j]
					}
					for j, x := range pr {
						dr[j] -= x * sum
					}
				}
				if dq != nil { // dQ = dS·K/√dh
					gemmLD(false, false, s.tq, dh, s.tk, scale, dp, s.tk, k[off:], ld, bq, dq[off:], ld)
				}
				if dk != nil { // dK = dSᵀ·Q/√dh
					gemmLD(true, false, s.tk, dh, s.tq, scale, dp, s.tk, q[off:], ld, bk, dk[off:], ld)
				}
			}
			if dv != nil { // dV = Wᵀ·dO
				gemmLD(true, false, s.tk, dh, s.tq, 1, wb, s.tk, g[off:], ld, bv, dv[off:], ld)
			}
		}
	}
}

// gemmLD is Gemm on submatrices: op(A) is m×k, op(B) k×n and C m×n, each
// stored row-major with its own leading dimension (lda, ldb, ldc), so that
// one head of a [T, B, D] tensor is multiplied where it lies. m, n and k
// are positive. It panics if a slice is shorter than its shape needs, as
// Gemm does.
func gemmLD[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	need := func(rows, cols, ld int) int { return (rows-1)*ld + cols }
	ra, ca, tA := m, k, blas.NoTrans
	if transA {
		ra, ca, tA = k, m, blas.Trans
	}
	rb, cb, tB := k, n, blas.NoTrans
	if transB {
		rb, cb, tB = n, k, blas.Trans
	}
	if m <= 0 || n <= 0 || k <= 0 || lda < ca || ldb < cb || ldc < n ||
		len(a) < need(ra, ca, lda) || len(b) < need(rb, cb, ldb) || len(c) < need(m, n, ldc) {
		panic(fmt.Sprintf("ad.gemmLD: %d×%d×%d with leading dimensions %d, %d, %d on %d, %d, %d values", m, n, k, lda, ldb, ldc, len(a), len(b), len(c)))
	}
	switch a := any(a).(type) {
	case []float32:
		backend.Sgemm(tA, tB, m, n, k, float32(alpha), a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	case []float64:
		backend.Dgemm(tA, tB, m, n, k, float64(alpha), a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	}
}
