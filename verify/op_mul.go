package verify

import (
	"math"

	"github.com/lenspec/lenspec/mip"
)

// mul is the element-wise product of its two inputs, z = x ⊙ y (an LSTM's
// gates times its cell and candidate). It is not affine: its rules relax
// it by McCormick's planes over the inputs' boxes x ∈ [xl, xu],
// y ∈ [yl, yu]:
//
//	xy ≥ xl·y + yl·x − xl·yl,   xy ≥ xu·y + yu·x − xu·yu   (lower planes)
//	xy ≤ xu·y + yl·x − xu·yl,   xy ≤ xl·y + yu·x − xl·yu   (upper planes)
//
// which are the convex and concave envelopes of the product on the box,
// so the relaxation tightens as its inputs' bounds do (it has no split
// point of its own: splits on the activations feeding it tighten it, and
// its branching scores go to them).
type mul struct{}

func (mul) eval(ins [][]float64, _ int) []float64 {
	out := make([]float64, len(ins[0]))
	for i := range out {
		out[i] = ins[0][i] * ins[1][i]
	}
	return out
}

// interval is the product's range over the box, from its four corners,
// padded for rounding.
func (mul) interval(ins [][]Interval, _ []bool) []Interval {
	out := make([]Interval, len(ins[0]))
	for i := range out {
		x, y := ins[0][i], ins[1][i]
		c := [4]float64{x.Lo * y.Lo, x.Lo * y.Hi, x.Hi * y.Lo, x.Hi * y.Hi}
		lo, hi, abs := c[0], c[0], 0.0
		for _, v := range c {
			lo, hi, abs = math.Min(lo, v), math.Max(hi, v), math.Max(abs, math.Abs(v))
		}
		out[i] = pad(lo, hi, abs)
	}
	return out
}

// plane returns the McCormick plane a·x + b·y + d that bounds x·y from
// above (upper) or below on the box: of the two, the one lower (upper)
// at the box's centre.
func plane(x, y Interval, upper bool) (a, b, d float64) {
	type p struct{ a, b, d float64 }
	var p1, p2 p
	if upper {
		p1, p2 = p{y.Lo, x.Hi, -x.Hi * y.Lo}, p{y.Hi, x.Lo, -x.Lo * y.Hi}
	} else {
		p1, p2 = p{y.Lo, x.Lo, -x.Lo * y.Lo}, p{y.Hi, x.Hi, -x.Hi * y.Hi}
	}
	mx, my := (x.Lo+x.Hi)/2, (y.Lo+y.Hi)/2
	v1, v2 := p1.a*mx+p1.b*my+p1.d, p2.a*mx+p2.b*my+p2.d
	if upper == (v2 < v1) {
		p1 = p2
	}
	return p1.a, p1.b, p1.d
}

// inputScores: McCormick's planes are off the product by up to
// (xu − xl)·(yu − yl)/4 on the box; halving either input's range halves
// it.
func (mul) inputScores(c float64, ins [][]Interval, i int, out []float64) {
	x, y := ins[0][i], ins[1][i]
	g := math.Abs(c) * (x.Hi - x.Lo) * (y.Hi - y.Lo) / 8
	out[0], out[1] = g, g
}

// back: c·xy ≤ c·(a·x + b·y + d) with the upper plane for c > 0 and the
// lower for c < 0; the plane each row took is recorded (its coefficient's
// sign) for the relaxed forward pass.
func (mul) back(s *backState, n *node) {
	c := s.coef[n.id]
	cx, cy := s.into(n.in[0]), s.into(n.in[1])
	var a, ax, ay *block
	if s.padded {
		a, ax, ay = s.abs[n.id], s.absInto(n.in[0]), s.absInto(n.in[1])
	}
	for r := 0; r < c.rows; r++ {
		xs, ys := s.dom[r].Val[n.in[0]], s.dom[r].Val[n.in[1]]
		for i, ci := range c.row(r) {
			if ci == 0 {
				continue
			}
			pa, pb, pd := plane(xs[i], ys[i], ci > 0)
			cx.v[r*cx.cols+i] += ci * pa
			cy.v[r*cy.cols+i] += ci * pb
			s.k[r] += ci * pd
			if a != nil {
				ai := a.v[r*a.cols+i]
				ax.v[r*ax.cols+i] += ai * math.Abs(pa)
				ay.v[r*ay.cols+i] += ai * math.Abs(pb)
				s.kabs[r] += ai * math.Abs(pd)
			}
		}
	}
	if s.rec != nil {
		s.rec.coef[n.id] = c.clone()
	}
}

// forward evaluates, per row, the plane its back-substitution took (the
// lower one where nothing above depended on the product).
func (mul) forward(s *backState, n *node, ins []*block) *block {
	x, y := ins[0], ins[1]
	out := newBlock(x.rows, x.cols)
	rec := s.rec.coef[n.id]
	for r := 0; r < x.rows; r++ {
		xs, ys := s.dom[r].Val[n.in[0]], s.dom[r].Val[n.in[1]]
		for i := range out.row(r) {
			j := r*x.cols + i
			pa, pb, pd := plane(xs[i], ys[i], rec != nil && rec.v[j] > 0)
			out.v[j] = pa*x.v[j] + pb*y.v[j] + pd
		}
	}
	return out
}

// encode: a variable z bounded by the product's interval and the four
// McCormick planes over the inputs' expressions — the MIP relaxes the
// product (sound for robustness; its counterexamples are replayed).
func (m mul) encode(e *encoding, n *node, ins [][]lin) []lin {
	xs, ys := e.b.Val[n.in[0]], e.b.Val[n.in[1]]
	out := make([]lin, len(ins[0]))
	for i := range out {
		name := e.name(n, i)
		iv := e.b.Val[n.id][i]
		z := e.m.AddVar(name, iv.Lo, iv.Hi, mip.Continuous)
		x, y := xs[i], ys[i]
		for k, p := range [][3]float64{{y.Lo, x.Lo, -x.Lo * y.Lo}, {y.Hi, x.Hi, -x.Hi * y.Hi}, {y.Lo, x.Hi, -x.Hi * y.Lo}, {y.Hi, x.Lo, -x.Lo * y.Hi}} {
			ex := ins[0][i].scaled(p[0])
			ex.addExpr(ins[1][i], p[1])
			ex.c += p[2]
			sense := mip.GE
			if k >= 2 {
				sense = mip.LE
			}
			e.rowVar(name+"_mc"+string(rune('0'+k)), z, 1, ex, nil, nil, sense, 0)
		}
		out[i] = varExpr(z)
	}
	return out
}
