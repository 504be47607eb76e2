package ad

import "fmt"

// groupOf checks that b's rows group a's: a has R rows, b has R/S (S ≥ 1)
// with the same columns, row r of a going with row r/S of b. It returns S.
func groupOf[T Float](name string, a, b *Node[T]) int {
	ra, rb := a.Value.Rows(), b.Value.Rows()
	if len(a.Value.Shape) != 2 || len(b.Value.Shape) != 2 || a.Value.Cols() != b.Value.Cols() || rb == 0 || ra%rb != 0 {
		panic(fmt.Sprintf("ad.%s: shapes %v and %v (want [R, N] and [R/S, N])", name, a.Value.Shape, b.Value.Shape))
	}
	return ra / rb
}

// RowDot returns, for a of shape [R, N] and b of shape [R/S, N], the
// vector [R] of Σ_j a[r, j]·b[r/S, j]: S rows of a share one row of b
// (linear bounds of S specifications against one example's vectors, in
// bound propagation).
func (tp *Tape[T]) RowDot(a, b *Node[T]) *Node[T] {
	s := groupOf("RowDot", a, b)
	rows, cols := a.Value.Rows(), a.Value.Cols()
	out := tp.alloc(false, rows)
	for r := range rows {
		ar, br := a.Value.Data[r*cols:(r+1)*cols], b.Value.Data[r/s*cols:(r/s+1)*cols]
		var v T
		for j, x := range ar {
			v += x * br[j]
		}
		out.Data[r] = v
	}
	return tp.op(out, func(o *Node[T]) {
		for r, g := range o.Grad.Data {
			if g == 0 {
				continue
			}
			if a.needsGrad {
				ga, br := a.grad().Data[r*cols:(r+1)*cols], b.Value.Data[r/s*cols:(r/s+1)*cols]
				for j, x := range br {
					ga[j] += g * x
				}
			}
			if b.needsGrad {
				gb, ar := b.grad().Data[r/s*cols:(r/s+1)*cols], a.Value.Data[r*cols:(r+1)*cols]
				for j, x := range ar {
					gb[j] += g * x
				}
			}
		}
	}, a, b)
}

// RelaxReLU is one step of linear bound back-substitution (CROWN, Zhang
// et al. 2018) through y = ReLU(p) towards an upper bound. Given the
// coefficients lam [R, N] of linear functions lam·y and bounds lo ≤ p ≤ hi
// of the pre-activations ([R/S, N]: S rows of lam share one row of
// bounds), it returns coefficients c [R, N] on p and offsets k [R] with
//
//	lam·ReLU(p) ≤ c·p + k   for every p in the box.
//
// A neuron with hi ≤ 0 drops out and one with lo ≥ 0 passes through; an
// unstable one (lo < 0 < hi) takes the chord hi/(hi−lo)·(p − lo) above
// ReLU where its coefficient is positive and the line α·p below it where
// negative, with CROWN's adaptive slope α = 1 if hi ≥ −lo, else 0. The
// chord's slope and intercept depend on the bounds, so gradients flow into
// lo and hi as well as lam (α's choice has none). A lower bound is −(the
// upper bound of −lam).
func (tp *Tape[T]) RelaxReLU(lam, lo, hi *Node[T]) (c, k *Node[T]) {
	s := groupOf("RelaxReLU", lam, lo)
	mustSame("RelaxReLU", lo, hi)
	rows, cols := lam.Value.Rows(), lam.Value.Cols()
	cOut, kOut := tp.alloc(false, rows, cols), tp.alloc(false, rows)
	for r := range rows {
		lr, cr := lam.Value.Data[r*cols:(r+1)*cols], cOut.Data[r*cols:(r+1)*cols]
		lor, hir := lo.Value.Data[r/s*cols:(r/s+1)*cols], hi.Value.Data[r/s*cols:(r/s+1)*cols]
		var kr T
		for j, v := range lr {
			l, u := lor[j], hir[j]
			switch {
			case u <= 0:
				cr[j] = 0
			case l >= 0:
				cr[j] = v
			case v >= 0:
				d := u - l
				cr[j] = v * u / d
				kr -= v * u * l / d
			case u >= -l:
				cr[j] = v
			default:
				cr[j] = 0
			}
		}
		kOut.Data[r] = kr
	}
	// c carries the whole backward pass; k's only makes sure c's runs (it
	// runs after k's, and only for a node with a gradient).
	c = tp.op(cOut, func(o *Node[T]) {
		gk, gl, glo, ghi := relaxGrads(k, lam, lo, hi)
		for r := range rows {
			lr, gc := lam.Value.Data[r*cols:(r+1)*cols], o.Grad.Data[r*cols:(r+1)*cols]
			b := r / s * cols
			var g0 T
			if gk != nil {
				g0 = gk[r]
			}
			for j, v := range lr {
				l, u := lo.Value.Data[b+j], hi.Value.Data[b+j]
				g := gc[j]
				switch {
				case u <= 0:
				case l >= 0:
					if gl != nil {
						gl[r*cols+j] += g
					}
				case v >= 0:
					// c = v·u/d and k = −v·u·l/d with d = u − l.
					d := u - l
					if gl != nil {
						gl[r*cols+j] += g*u/d - g0*u*l/d
					}
					dd := d * d
					if glo != nil {
						glo[b+j] += v * (g*u - g0*u*u) / dd
					}
					if ghi != nil {
						ghi[b+j] += v * (-g*l + g0*l*l) / dd
					}
				case u >= -l:
					if gl != nil {
						gl[r*cols+j] += g
					}
				}
			}
		}
	}, lam, lo, hi)
	k = tp.op(kOut, func(*Node[T]) { c.grad() }, c)
	return c, k
}

// relaxGrads returns the gradient buffers a relaxation's backward pass
// reads (k's, nil when nothing reads k) and adds to (nil for an input
// that needs none).
func relaxGrads[T Float](k, lam, lo, hi *Node[T]) (gk, gl, glo, ghi []T) {
	if k.Grad != nil {
		gk = k.Grad.Data
	}
	if lam.needsGrad {
		gl = lam.grad().Data
	}
	if lo.needsGrad {
		glo = lo.grad().Data
	}
	if hi.needsGrad {
		ghi = hi.grad().Data
	}
	return gk, gl, glo, ghi
}
