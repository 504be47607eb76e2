package nn

import "github.com/lenspec/lenspec/ad"

// Interval rules of the element-wise operations inside gated cells, on
// boxes as centre and radius (differentiable, for certified training; the
// verifier's rules are package verify's).

// MonotoneInterval maps the box (centre, radius) through an increasing
// function f applied on the tape: [f(c−r), f(c+r)], again as centre and
// radius.
func MonotoneInterval[T ad.Float](tp *ad.Tape[T], f func(*ad.Node[T]) *ad.Node[T], mid, rad *ad.Node[T]) (*ad.Node[T], *ad.Node[T]) {
	lo, hi := f(tp.Sub(mid, rad)), f(tp.Add(mid, rad))
	return tp.Scale(tp.Add(lo, hi), 0.5), tp.Scale(tp.Sub(hi, lo), 0.5)
}

// MulInterval is the product of two boxes: every x·y with |x − cx| ≤ rx
// and |y − cy| ≤ ry lies within cx·cy ± (|cx|·ry + |cy|·rx + rx·ry),
// since x·y − cx·cy = cx·(y − cy) + cy·(x − cx) + (x − cx)·(y − cy). A nil
// radius is an exact value.
func MulInterval[T ad.Float](tp *ad.Tape[T], cx, rx, cy, ry *ad.Node[T]) (*ad.Node[T], *ad.Node[T]) {
	mid := tp.Mul(cx, cy)
	var rad *ad.Node[T]
	if ry != nil {
		rad = tp.AddTo(rad, tp.Mul(tp.Abs(cx), ry))
	}
	if rx != nil {
		rad = tp.AddTo(rad, tp.Mul(tp.Abs(cy), rx))
	}
	if rx != nil && ry != nil {
		rad = tp.AddTo(rad, tp.Mul(rx, ry))
	}
	if rad == nil {
		rad = tp.Scale(mid, 0)
	}
	return mid, rad
}

// gateBox is the pre-activation box of a cell's gates, W_ih·x + b_ih +
// W_hh·h + b_hh, from the input box (xr nil: exact) and the state box.
func gateBox[T ad.Float](tp *ad.Tape[T], wih, whh, bih, bhh *ad.Param[T], xc, xr, hc, hr *ad.Node[T]) (*ad.Node[T], *ad.Node[T]) {
	mid := tp.Add(tp.Linear(xc, tp.Param(wih), tp.Param(bih)), tp.Linear(hc, tp.Param(whh), tp.Param(bhh)))
	rad := tp.Linear(hr, tp.Abs(tp.Param(whh)), nil)
	if xr != nil {
		rad = tp.Add(rad, tp.Linear(xr, tp.Abs(tp.Param(wih)), nil))
	}
	return mid, rad
}

// Interval propagates boxes through the cell (centre and radius of the
// input, xr nil for an exact input such as a token's embedding, and of h
// and c): each gate's pre-activation box by the affine rule, σ and tanh
// as increasing functions, and the products by MulInterval. It is the
// interval rule of the step, differentiable, for certified training.
func (c *LSTMCell[T]) Interval(tp *ad.Tape[T], xc, xr, hc, hr, cc, cr *ad.Node[T]) (hNext, hRad, cNext, cRad *ad.Node[T]) {
	H := c.Hidden
	gm, gr := gateBox(tp, c.Wih, c.Whh, c.Bih, c.Bhh, xc, xr, hc, hr)
	ms, rs := tp.Split(gm, 1, H, H, H, H), tp.Split(gr, 1, H, H, H, H)
	ic, ir := MonotoneInterval(tp, tp.Sigmoid, ms[0], rs[0])
	fc, fr := MonotoneInterval(tp, tp.Sigmoid, ms[1], rs[1])
	gc, gr2 := MonotoneInterval(tp, tp.Tanh, ms[2], rs[2])
	oc, or := MonotoneInterval(tp, tp.Sigmoid, ms[3], rs[3])
	ac, ar := MulInterval(tp, fc, fr, cc, cr)
	bc, br := MulInterval(tp, ic, ir, gc, gr2)
	cNext, cRad = tp.Add(ac, bc), tp.Add(ar, br)
	tc, tr := MonotoneInterval(tp, tp.Tanh, cNext, cRad)
	hNext, hRad = MulInterval(tp, oc, or, tc, tr)
	return hNext, hRad, cNext, cRad
}

// Interval propagates boxes through the cell as LSTMCell.Interval does:
// r and z by σ, n by tanh of its pre-activation box with r⊙(W_hn·h + b_hn)
// by MulInterval, and h' = n + z⊙(h − n).
func (c *GRUCell[T]) Interval(tp *ad.Tape[T], xc, xr, hc, hr *ad.Node[T]) (*ad.Node[T], *ad.Node[T]) {
	H := c.Hidden
	xm := tp.Linear(xc, tp.Param(c.Wih), tp.Param(c.Bih))
	hm := tp.Linear(hc, tp.Param(c.Whh), tp.Param(c.Bhh))
	hrad := tp.Linear(hr, tp.Abs(tp.Param(c.Whh)), nil)
	xrad := tp.Scale(xm, 0)
	if xr != nil {
		xrad = tp.Linear(xr, tp.Abs(tp.Param(c.Wih)), nil)
	}
	xs, xrs := tp.Split(xm, 1, H, H, H), tp.Split(xrad, 1, H, H, H)
	hs, hrs := tp.Split(hm, 1, H, H, H), tp.Split(hrad, 1, H, H, H)
	rc, rr := MonotoneInterval(tp, tp.Sigmoid, tp.Add(xs[0], hs[0]), tp.Add(xrs[0], hrs[0]))
	zc, zr := MonotoneInterval(tp, tp.Sigmoid, tp.Add(xs[1], hs[1]), tp.Add(xrs[1], hrs[1]))
	pc, pr := MulInterval(tp, rc, rr, hs[2], hrs[2])
	nc, nr := MonotoneInterval(tp, tp.Tanh, tp.Add(xs[2], pc), tp.Add(xrs[2], pr))
	dc, dr := MulInterval(tp, zc, zr, tp.Sub(hc, nc), tp.Add(hr, nr))
	return tp.Add(nc, dc), tp.Add(nr, dr)
}
