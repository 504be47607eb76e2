package verify

import "math"

// Input clipping (after Clip-and-Verify, arXiv 2512.11087, its complete
// clipping of the input domain): a child domain's new split confines a
// neuron's pre-activation z to one side of its split point p, and CROWN's
// linear bound of z in the input, σz ≤ a·x + k (σ = +1 on the side z ≥ p,
// −1 on z ≤ p), turns that into a half-space every input of the child
// satisfies: σp ≤ a·x + k. The child's input box is cut to the smallest
// box holding its intersection with the half-space, in closed form per
// coordinate, and its descendants inherit the smaller box; every bound of
// the domain is then concretised over it. The box stays a superset of the
// domain's inputs, so every bound over it stays sound.

// clipChildren clips the input boxes of the children whose domain adds a
// split (clipped is how many it cut), each by its new split's half-space,
// all children's rows back-substituted as one batch per pre-activation
// node. A child whose half-space misses its box is empty: proven.
func (bd *bounder) clipChildren(cs []*domain) (clipped int) {
	g := bd.g
	groups := map[int][]int{} // pre-activation node → children
	for i, c := range cs {
		if c.b == nil || c.b.Proven || !c.added {
			continue
		}
		p := g.nodes[c.last.node].in[0]
		groups[p] = append(groups[p], i)
	}
	for p, idx := range groups {
		w := g.nodes[p].width
		rows := newBlock(len(idx), w)
		dom := make([]*Bounds, len(idx))
		sigma := make([]float64, len(idx))
		for r, i := range idx {
			c := cs[i]
			dom[r] = c.b
			sigma[r] = -1
			if c.up {
				sigma[r] = 1
			}
			rows.row(r)[c.last.index] = sigma[r]
		}
		s := g.newBack(dom, nil, true, false)
		s.run(p, rows, make([]float64, len(idx)))
		for r, i := range idx {
			c := cs[i]
			in := c.b.Input
			var a []float64
			if s.coef[0] != nil {
				a = s.coef[0].row(r)
			}
			k := s.paddedConst(r, in)
			// σz ≤ a·x + k and σz ≥ σp (p the side's end of the cut):
			// (−a)·x ≤ k − σp.
			ct := c.splits[c.last]
			pt := ct.hi
			if c.up {
				pt = ct.lo
			}
			out, empty, cut := clipBox(in, a, -1, k-sigma[r]*pt)
			switch {
			case empty:
				c.b = c.b.empty()
				clipped++
			case cut:
				nb := *c.b
				nb.Input = out
				nb.Val = append([][]Interval(nil), c.b.Val...)
				nb.Val[0] = out
				c.b = &nb
				clipped++
			}
		}
		s.release()
	}
	return clipped
}

// clipBox returns the smallest box holding the points of box in with
// s·a·x ≤ h (s = ±1 scales a; a nil: no constraint on x), rounded
// outward; empty when no point of the box satisfies it, cut whether any
// coordinate moved.
func clipBox(in []Interval, a []float64, s, h float64) (out []Interval, empty, cut bool) {
	if a == nil {
		return in, h < 0, false
	}
	// minSum = Σ min over the box of s·a_i·x_i, and the magnitude of its
	// terms, for the rounding allowance.
	minSum, mag := 0.0, math.Abs(h)
	lowOf := func(i int) float64 {
		g := s * a[i]
		return math.Min(g*in[i].Lo, g*in[i].Hi)
	}
	for i := range in {
		minSum += lowOf(i)
		mag += math.Abs(s*a[i]) * math.Max(math.Abs(in[i].Lo), math.Abs(in[i].Hi))
	}
	tol := 1e-9*mag + 1e-12
	if minSum > h+tol {
		return in, true, false
	}
	out = in
	for i := range in {
		g := s * a[i]
		if g == 0 {
			continue
		}
		// g·x_i ≤ h − (minSum − its own low term), padded by tol.
		room := h - (minSum - lowOf(i)) + tol
		v := room / g
		pad := 1e-12 * (1 + math.Abs(v))
		iv := in[i]
		if g > 0 {
			if v+pad < iv.Hi {
				iv.Hi = math.Max(v+pad, iv.Lo)
			}
		} else if v-pad > iv.Lo {
			iv.Lo = math.Min(v-pad, iv.Hi)
		}
		if iv != in[i] {
			if !cut {
				out = append([]Interval(nil), in...)
				cut = true
			}
			out[i] = iv
		}
	}
	return out, false, cut
}
