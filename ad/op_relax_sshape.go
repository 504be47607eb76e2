package ad

import "math"

// SShape names the S-shaped functions RelaxSShape relaxes.
type SShape int

// The S-shaped functions.
const (
	SigmoidShape SShape = iota
	TanhShape
)

// eval returns f(x) and f′(x).
func (f SShape) eval(x float64) (y, d float64) {
	if f == TanhShape {
		y = math.Tanh(x)
		return y, 1 - y*y
	}
	y = 1 / (1 + math.Exp(-x))
	return y, y * (1 - y)
}

// critical returns x* > 0 with f′(±x*) = s, if there is one: σ′ = σ(1 − σ)
// and tanh′ = 1 − tanh² take each value in (0, f′(0)) at two points ±x*.
func (f SShape) critical(s float64) (float64, bool) {
	if f == TanhShape {
		if s <= 0 || s >= 1 {
			return 0, false
		}
		return math.Atanh(math.Sqrt(1 - s)), true
	}
	d := 1 - 4*s
	if s <= 0 || d <= 0 {
		return 0, false
	}
	p := (1 + math.Sqrt(d)) / 2
	if p >= 1 {
		return 0, false
	}
	return math.Log(p / (1 - p)), true
}

// lines is the relaxation of f on [l, u]: the chord's slope s and the
// smallest and largest of g(x) = f(x) − s·x there, with the points that
// reach them (an end, or ±x* where f′ = s), so that s·x + dn ≤ f(x) ≤
// s·x + up on [l, u], and f′ at both ends for the gradient. A box
// narrower than 1e-9 takes the tangent at its middle, with its own offset.
func (f SShape) lines(l, u float64) sshapeLine {
	if !(u-l > 1e-9) {
		m := (l + u) / 2
		y, d := f.eval(m)
		return sshapeLine{s: d, dn: y - d*m, up: y - d*m, xdn: m, xup: m, flat: true}
	}
	fl, dl := f.eval(l)
	fu, du := f.eval(u)
	ln := sshapeLine{s: (fu - fl) / (u - l), dl: dl, du: du}
	g := func(x float64) float64 { y, _ := f.eval(x); return y - ln.s*x }
	ln.dn, ln.up, ln.xdn, ln.xup = g(l), g(l), l, l
	if v := g(u); v < ln.dn {
		ln.dn, ln.xdn = v, u
	} else if v > ln.up {
		ln.up, ln.xup = v, u
	}
	if x, ok := f.critical(ln.s); ok {
		for _, c := range []float64{x, -x} {
			if c > l && c < u {
				if v := g(c); v < ln.dn {
					ln.dn, ln.xdn = v, c
				} else if v > ln.up {
					ln.up, ln.xup = v, c
				}
			}
		}
	}
	return ln
}

// sshapeLine is one neuron's relaxation (SShape.lines) with f′ at the
// box's ends, for the gradient.
type sshapeLine struct {
	s, dn, up, xdn, xup, dl, du float64
	flat                        bool
}

// RelaxSShape is RelaxReLU for σ (f = SigmoidShape) or tanh: given
// coefficients lam [R, N] of lam·f(p) and bounds lo ≤ p ≤ hi ([R/S, N]),
// it returns c [R, N] and k [R] with lam·f(p) ≤ c·p + k on the box. Each
// neuron takes two lines of the chord's slope s through the largest and
// the smallest of f(x) − s·x over [lo, hi] (upper where its coefficient is
// positive, lower where negative), padded outward by 1e-12 relative for
// rounding. Gradients flow into lam, lo and hi: the slope's through the
// chord, the offsets' by the envelope theorem (at an inner extreme
// f′ = s; at an end, the end moves the point).
func (tp *Tape[T]) RelaxSShape(f SShape, lam, lo, hi *Node[T]) (c, k *Node[T]) {
	s := groupOf("RelaxSShape", lam, lo)
	mustSame("RelaxSShape", lo, hi)
	rows, cols := lam.Value.Rows(), lam.Value.Cols()
	cOut, kOut := tp.alloc(false, rows, cols), tp.alloc(false, rows)
	// One relaxation per example's neuron, shared by its s rows.
	lines := make([]sshapeLine, lo.Value.Len())
	for i := range lines {
		lines[i] = f.lines(float64(lo.Value.Data[i]), float64(hi.Value.Data[i]))
	}
	for r := range rows {
		lr, cr := lam.Value.Data[r*cols:(r+1)*cols], cOut.Data[r*cols:(r+1)*cols]
		b := r / s * cols
		var kr float64
		for j, v := range lr {
			ln := lines[b+j]
			sl, dn, up := ln.s, ln.dn, ln.up
			pad := 1e-12 * (1 + math.Abs(dn) + math.Abs(up))
			cr[j] = v * T(sl)
			if v >= 0 {
				kr += float64(v) * (up + pad)
			} else {
				kr += float64(v) * (dn - pad)
			}
		}
		kOut.Data[r] = T(kr)
	}
	c = tp.op(cOut, func(o *Node[T]) {
		gk, gl, glo, ghi := relaxGrads(k, lam, lo, hi)
		for r := range rows {
			lr, gc := lam.Value.Data[r*cols:(r+1)*cols], o.Grad.Data[r*cols:(r+1)*cols]
			b := r / s * cols
			var g0 float64
			if gk != nil {
				g0 = float64(gk[r])
			}
			for j, vt := range lr {
				v, g := float64(vt), float64(gc[j])
				l, u := float64(lo.Value.Data[b+j]), float64(hi.Value.Data[b+j])
				ln := lines[b+j]
				sl, dn, up, xdn, xup, flat := ln.s, ln.dn, ln.up, ln.xdn, ln.xup, ln.flat
				off, x := dn, xdn
				if v >= 0 {
					off, x = up, xup
				}
				if gl != nil {
					gl[r*cols+j] += T(g*sl + g0*off)
				}
				if flat || (glo == nil && ghi == nil) {
					continue
				}
				// c = v·s, k = v·g(x) with g(x) = f(x) − s·x.
				dl, du := ln.dl, ln.du
				dsl, dsu := (sl-dl)/(u-l), (du-sl)/(u-l)
				// dg(x)/dθ = −x·ds/dθ, plus (f′(x) − s) where x is the end θ.
				gdl, gdu := -x*dsl, -x*dsu
				switch x {
				case l:
					gdl += dl - sl
				case u:
					gdu += du - sl
				}
				if glo != nil {
					glo[b+j] += T(g*v*dsl + g0*v*gdl)
				}
				if ghi != nil {
					ghi[b+j] += T(g*v*dsu + g0*v*gdu)
				}
			}
		}
	}, lam, lo, hi)
	k = tp.op(kOut, func(*Node[T]) { c.grad() }, c)
	return c, k
}
