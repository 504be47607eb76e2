package verify

import (
	"math"
	"slices"
)

// Cut multipliers (BICCOS, Zhou et al., NeurIPS 2024, with the cut's
// indicator terms relaxed as in GCP-CROWN, Zhang et al., NeurIPS 2022): a
// learned nogood is made a linear constraint on the ReLU indicators of
// every domain it bears on, and a multiplier μ ≥ 0 per cut carries it
// into the domain's bound beside the split constraints' β.
//
// A nogood with splits S says that no counterexample has every split of S
// on its side. With d_i ∈ {0, 1} the indicator of neuron i (1: its
// pre-activation ẑ_i ≥ 0), every counterexample satisfies
// Σ_{up} d_i + Σ_{down} (1 − d_i) ≤ |S| − 1 for every choice of d that
// agrees with its ẑ, since some split of S fails strictly there. On a
// domain, the literals its splits or its bounds already decide are
// constants: one that fails makes the cut vacuous there, one that holds
// drops out of both sides. What remains, g(d) = Σ σ_i d_i + k ≤ 0 over
// the domain's unstable literals, is added to the maximised margin as
// −μ·g(d) ≥ 0, which keeps the bound an upper bound for every μ ≥ 0.
//
// The indicators are relaxed with their neuron: for ẑ ∈ [l, u], l < 0 < u,
// the points (ẑ, ReLU(ẑ), d) lie in the tetrahedron with vertices
// (l, 0, 0), (0, 0, 0), (0, 0, 1), (u, u, 1) (the big-M polytope, which is
// the hull for one neuron). The back-substitution meets c·h + π·d there,
// c the coefficient on the neuron's output and π = −Σ μ σ of its cuts,
// whose maximum over the tetrahedron's slice at ẑ is concave and linear on
// [l, 0] and on [0, u]: 0 at l, ψ0 = max(0, π, t·(c·u + π)) at 0 (t =
// −l/(u − l), where the edge from (l, 0, 0) to (u, u, 1) crosses 0) and
// c·u + π at u. Any line through (0, ψ0) with a slope between the right
// piece's and the left piece's lies above it; the neuron's α picks one,
// as it picks the lower line of a plain ReLU (with π = 0 the rule is
// CROWN's: the chord for c > 0, the slope α·c for c < 0).

// cutLit is a literal of a cut on one row's domain: an unstable ReLU
// (node is its activation node) and the side of it the nogood holds (up:
// ẑ ≥ 0, σ = +1; down: ẑ ≤ 0, σ = −1).
type cutLit struct {
	node, index int
	up          bool
}

// sigma is the literal's sign in g(d).
func (l cutLit) sigma() float64 {
	if l.up {
		return 1
	}
	return -1
}

// rowCut is a nogood as the constraint Σ σ_i d_i + k ≤ 0 on row row's
// domain.
type rowCut struct {
	row  int
	lits []cutLit
	k    float64
}

// maxRowCuts caps the cuts a row takes: those with the fewest literals,
// the strongest, first. Each costs a multiplier and its literals' terms in
// every iteration.
const maxRowCuts = 16

// literals are the literals of nogood ng that splits, tokens and bounds b
// leave open, for a bound from node start back (ok false: the cut says
// nothing there, since a literal fails, the tokens differ, or a literal is
// not a ReLU split at 0 below start that the domain leaves open). ok with
// no literals: the domain lies in the nogood's region.
func (ng *nogood) literals(g *graph, splits splitSet, tokens tokenSet, b *Bounds, start int) (lits []cutLit, ok bool) {
	for t, z := range ng.tokens {
		if dz, has := tokens[t]; !has || dz != z {
			return nil, false
		}
	}
	for nu, c := range ng.splits {
		if dc, has := splits[nu]; has && dc.lo >= c.lo && dc.hi <= c.hi {
			continue // the domain holds it
		}
		n := g.nodes[nu.node]
		if _, isReLU := n.act.(relu); !isReLU || nu.node > start || b.Val[n.in[0]] == nil {
			return nil, false
		}
		up, down := c.lo == 0 && math.IsInf(c.hi, 1), c.hi == 0 && math.IsInf(c.lo, -1)
		if !up && !down {
			return nil, false
		}
		iv := b.Val[n.in[0]][nu.index]
		switch {
		case iv.Lo >= 0: // d = 1 agrees with every ẑ of the domain
			if !up {
				return nil, false
			}
		case iv.Hi <= 0: // d = 0 does
			if !down {
				return nil, false
			}
		default:
			lits = append(lits, cutLit{nu.node, nu.index, up})
		}
	}
	// The splits' map order is random: a fixed order keeps the bound's
	// sums, and so every result, the same from run to run.
	slices.SortFunc(lits, func(a, b cutLit) int { return byNode(neuron{a.node, a.index}, neuron{b.node, b.index}) })
	return lits, true
}

// rowCuts makes the pool's nogoods constraints on each row (its domain's
// bounds dom[r], splits and tokens) for a bound from node start: at most
// maxRowCuts per row, the fewest literals first. A nogood that leaves a
// row no literal is left out: the search closes such domains before
// bounding them (coversByBounds).
func (p *cutPool) rowCuts(g *graph, dom []*Bounds, splits []splitSet, tokens []tokenSet, start int) []rowCut {
	var cuts []rowCut
	for r := range dom {
		var mine []rowCut
		for i := range p.goods {
			lits, ok := p.goods[i].literals(g, splits[r], tokens[r], dom[r], start)
			if !ok || len(lits) == 0 {
				continue
			}
			down := 0
			for _, l := range lits {
				if !l.up {
					down++
				}
			}
			mine = append(mine, rowCut{row: r, lits: lits, k: float64(down - len(lits) + 1)})
		}
		slices.SortStableFunc(mine, func(a, b rowCut) int { return len(a.lits) - len(b.lits) })
		cuts = append(cuts, mine[:min(len(mine), maxRowCuts)]...)
	}
	return cuts
}

// coversByBounds reports whether domain d lies in a nogood's region with
// its bounds' help: every split of the nogood held by d's splits or, for
// a ReLU split at 0, by the sign of d's pre-activation bounds.
func (p *cutPool) coversByBounds(g *graph, d *domain) bool {
	last := len(g.nodes) - 1
	for i := range p.goods {
		if lits, ok := p.goods[i].literals(g, d.splits, d.tokens, d.b, last); ok && len(lits) == 0 {
			return true
		}
	}
	return false
}

// cutTerms are a relaxation's cut terms: pi[node] the coefficient π on
// each row's indicators (nil: none on that node), k each row's constant
// −Σ μ·k and kabs the sum of its terms' magnitudes.
type cutTerms struct {
	pi      []*block
	k, kabs []float64
}

// piOf is node id's cut coefficients π in rx (nil: none there).
func (rx *relaxation) piOf(id int) *block {
	if rx == nil || rx.cuts == nil {
		return nil
	}
	return rx.cuts.pi[id]
}

// newCutTerms returns zero terms for R rows of the nodes cuts touch.
func (g *graph) newCutTerms(cuts []rowCut, R int) *cutTerms {
	ct := &cutTerms{pi: make([]*block, len(g.nodes)), k: make([]float64, R), kabs: make([]float64, R)}
	for _, c := range cuts {
		for _, l := range c.lits {
			if ct.pi[l.node] == nil {
				ct.pi[l.node] = newBlock(R, g.nodes[l.node].width)
			}
		}
	}
	return ct
}

// set derives the terms from the multipliers mu (one per cut).
func (ct *cutTerms) set(cuts []rowCut, mu []float64) {
	for _, b := range ct.pi {
		if b != nil {
			clear(b.v)
		}
	}
	clear(ct.k)
	clear(ct.kabs)
	for j, c := range cuts {
		m := mu[j]
		if m == 0 {
			continue
		}
		ct.k[c.row] -= m * c.k
		ct.kabs[c.row] += math.Abs(m * c.k)
		for _, l := range c.lits {
			b := ct.pi[l.node]
			b.v[c.row*b.cols+l.index] -= m * l.sigma()
		}
	}
}

// copyRow copies row r of src's terms into ct's.
func (ct *cutTerms) copyRow(src *cutTerms, r int) {
	for id, b := range src.pi {
		if b != nil {
			copy(ct.pi[id].row(r), b.row(r))
		}
	}
	ct.k[r], ct.kabs[r] = src.k[r], src.kabs[r]
}

// clone returns a copy of ct.
func (ct *cutTerms) clone() *cutTerms {
	out := &cutTerms{pi: make([]*block, len(ct.pi)), k: slices.Clone(ct.k), kabs: slices.Clone(ct.kabs)}
	for id, b := range ct.pi {
		if b != nil {
			out.pi[id] = b.clone()
		}
	}
	return out
}

// reluCut is the joint rule of c·h + π·d for an unstable ReLU with
// pre-activation bounds iv and lower-slope parameter alpha: the line
// a·ẑ + psi0 above it on the tetrahedron, and the derivatives of a and
// psi0 in c and in π (the relaxed network's values of h and d are
// dac·ζ + dpc and dap·ζ + dpp; the bound's derivative in α is
// (sR − sL)·ζ).
type reluCut struct {
	a, psi0            float64
	sL, sR             float64
	dac, dpc, dap, dpp float64
}

// newReluCut is the joint rule for coefficients c on h and pi on d.
func newReluCut(c, pi float64, iv Interval, alpha float64) reluCut {
	l, u := iv.Lo, iv.Hi
	t := -l / (u - l)
	at := c*u + pi // the value at u
	var rc reluCut
	rc.psi0 = 0 // at (0, 0, 0)
	if pi > rc.psi0 {
		rc.psi0, rc.dpp = pi, 1 // at (0, 0, 1)
	}
	if v := t * at; v > rc.psi0 {
		rc.psi0, rc.dpc, rc.dpp = v, t*u, t // where the long edge crosses 0
	}
	rc.sL = rc.psi0 / -l
	rc.sR = (at - rc.psi0) / u
	al := min(max(alpha, 0), 1)
	rc.a = rc.sL + al*(rc.sR-rc.sL)
	dsLc, dsLp := rc.dpc/-l, rc.dpp/-l
	dsRc, dsRp := (u-rc.dpc)/u, (1-rc.dpp)/u
	rc.dac = dsLc + al*(dsRc-dsLc)
	rc.dap = dsLp + al*(dsRp-dsLp)
	return rc
}

// relaxCutRow adds the joint rule of the neurons of one row that carry a
// cut term (π ≠ 0 in pir; cr their coefficients, which the plain rule
// skipped) to the row's input coefficients ir (and their magnitudes to
// air when padded; the relaxed network's h to sr, dr when recorded). It
// returns the row's constant and, padded, its magnitude.
func relaxCutRow(cr, pir []float64, pre []Interval, alr, ar, ir, air, sr, dr []float64) (k, kabs float64) {
	al := make([]float64, 1) // initParams's out, one slope
	for i, pi := range pir {
		if pi == 0 {
			continue
		}
		iv := pre[i]
		if alr != nil {
			al[0] = alr[i]
		} else {
			relu{}.initParams(iv, al) // CROWN's slope, as the plain rule takes
		}
		rc := newReluCut(cr[i], pi, iv, al[0])
		ir[i] += rc.a
		k += rc.psi0
		if air != nil {
			ca := 0.0
			if ar != nil {
				ca = ar[i]
			}
			// Magnitudes of every term a and ψ0 were computed from.
			air[i] += math.Abs(rc.a) + ca*math.Abs(rc.dac) + math.Abs(pi*rc.dap)
			kabs += math.Abs(rc.psi0) + ca*math.Abs(rc.dpc) + math.Abs(pi*rc.dpp)
		}
		if sr != nil {
			sr[i], dr[i] = rc.dac, rc.dpc
		}
	}
	return k, kabs
}

// cutGrad is the gradient of the rows' bounds (back-substitution s, with
// cut terms) in the cuts' multipliers: ∂bound/∂μ = −g(d̃), d̃ the
// indicators in the relaxed network at the maximising vertex, whose
// pre-activations are zeta.
func (g *graph) cutGrad(s *backState, zeta []*block, cuts []rowCut) []float64 {
	gm := make([]float64, len(cuts))
	for j, ct := range cuts {
		v := ct.k
		for _, l := range ct.lits {
			n := g.nodes[l.node]
			e := ct.row*n.width + l.index
			p := n.in[0]
			c := 0.0
			if cb := s.rec.coef[l.node]; cb != nil {
				c = cb.v[e]
			}
			rc := newReluCut(c, s.rx.piOf(l.node).v[e], s.dom[ct.row].Val[p][l.index], s.rx.alpha[l.node].v[e])
			v += l.sigma() * (rc.dap*zeta[p].v[e] + rc.dpp)
		}
		gm[j] = -v
	}
	return gm
}
