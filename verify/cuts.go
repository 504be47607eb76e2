package verify

import (
	"context"
	"maps"
	"math"
	"slices"
)

// Learned cuts (after BICCOS, Zhou et al., NeurIPS 2024, in the form that
// needs no extra dual variable): a branch-and-bound leaf closed under its
// splits S and fixed tokens T proves that no counterexample has every
// split of S on its side and every token of T: the "nogood" not-all-of-S.
// It is strengthened by dropping the splits whose split-constraint
// multipliers were 0 in the bound that closed the leaf and proving the
// smaller set again, from the search root's bounds: a nogood with fewer
// splits covers domains elsewhere in the tree, which are then closed
// without being bounded. Every nogood is a closed domain's own splits (or
// a subset proved closed by the same sound bound), so a domain it covers
// is a subset of a region without a counterexample.

// nogood is a region proved to hold no counterexample: the inputs of the
// box whose split neurons lie within their cuts and whose decoding emits
// each fixed token.
type nogood struct {
	splits splitSet
	tokens tokenSet
}

// covers reports whether domain d lies inside the nogood's region: every
// cut of the nogood contains d's cut of the same neuron, and d fixes
// every token the nogood fixes, to the same token.
func (ng *nogood) covers(d *domain) bool {
	if len(ng.splits) > len(d.splits) || len(ng.tokens) > len(d.tokens) {
		return false
	}
	for t, z := range ng.tokens {
		if dz, ok := d.tokens[t]; !ok || dz != z {
			return false
		}
	}
	for nu, c := range ng.splits {
		dc, ok := d.splits[nu]
		if !ok || dc.lo < c.lo || dc.hi > c.hi {
			return false
		}
	}
	return true
}

// cutPool is a search's learned nogoods and what they did.
type cutPool struct {
	goods []nogood
	// learned counts the nogoods kept, strengthened those proved with
	// fewer splits than their leaf, pruned the domains closed because a
	// nogood covered them.
	learned, strengthened, pruned int64
}

// covers reports whether a nogood of the pool covers d.
func (p *cutPool) covers(d *domain) bool {
	for i := range p.goods {
		if p.goods[i].covers(d) {
			return true
		}
	}
	return false
}

// maxCuts caps the pool: the check of a domain against it is linear in
// its size.
const maxCuts = 4096

// add keeps the nogood unless one already in the pool covers it.
func (p *cutPool) add(ng nogood) {
	probe := &domain{splits: ng.splits, tokens: ng.tokens}
	if len(p.goods) >= maxCuts || p.covers(probe) {
		return
	}
	p.goods = append(p.goods, ng)
	p.learned++
}

// learn adds the nogood of a closed leaf (root: the search root it
// descends from) to the pool, strengthened where the bound that closed it
// did not use some of its splits' constraints and the leaf's region
// without them is proved closed too.
func (s *babSearch) learn(leaf, root *domain) {
	if s.cuts == nil || root == nil {
		return
	}
	ng := nogood{splits: leaf.splits, tokens: leaf.tokens}
	if weak := s.unused(leaf, root); len(weak) > 0 {
		fewer := splitSet{}
		for nu, c := range leaf.splits {
			if !slices.Contains(weak, nu) {
				fewer[nu] = c
			}
		}
		if s.closedWith(fewer, leaf, root) {
			ng.splits = fewer
			s.cuts.strengthened++
		}
	}
	if s.bd.cuts != nil {
		// A nogood bears on a domain outside its leaf's subtree only once
		// the split they part at is gone: with the multipliers on, the
		// earliest splits are dropped too, while the region stays closed.
		for range maxEarlyDrops {
			i := slices.IndexFunc(leaf.path, func(nu neuron) bool { _, in := ng.splits[nu]; return in })
			if i < 0 {
				break
			}
			fewer := maps.Clone(ng.splits)
			delete(fewer, leaf.path[i])
			if !s.closedWith(fewer, leaf, root) {
				break
			}
			ng.splits = fewer
			s.cuts.strengthened++
		}
	}
	s.cuts.add(ng)
}

// maxEarlyDrops is how many of a leaf's earliest splits strengthening
// tries to drop, one bound each.
const maxEarlyDrops = 2

// unused lists the leaf's splits (beyond its root's) whose constraint
// multipliers β are 0 on every row of the bound that closed it.
func (s *babSearch) unused(leaf, root *domain) []neuron {
	if leaf.rx == nil {
		return nil
	}
	var out []neuron
	for nu := range leaf.splits {
		if _, ok := root.splits[nu]; ok {
			continue
		}
		used := false
		for _, bs := range []*block{leaf.rx.betaLo[nu.node], leaf.rx.betaHi[nu.node]} {
			if bs == nil {
				continue
			}
			for r := 0; r < bs.rows; r++ {
				if bs.row(r)[nu.index] != 0 {
					used = true
				}
			}
		}
		if !used {
			out = append(out, nu)
		}
	}
	slices.SortFunc(out, byNode)
	return out
}

// closedWith reports whether the region of splits and the leaf's tokens
// is proved to hold no counterexample: its bounds derived from the root's
// one split at a time (as branch and bound derives a domain's), then
// every token allowed at the leaf's worst step bounded by α,β-CROWN,
// warm-started from the leaf's parameters, below 0.
func (s *babSearch) closedWith(splits splitSet, leaf, root *domain) bool {
	g, bd := s.g, s.bd
	var order []neuron
	for nu := range splits {
		if _, ok := root.splits[nu]; !ok {
			order = append(order, nu)
		}
	}
	slices.SortFunc(order, byNode)
	b := root.b
	part := maps.Clone(root.splits)
	if part == nil {
		part = splitSet{}
	}
	for _, nu := range order {
		part[nu] = splits[nu]
		b = computeSplitBounds(context.Background(), g, bd.lo, bd.hi, bd.method, maps.Clone(part), leaf.tokens, b, g.nodes[nu.node].in[0], true)
		if b.Proven {
			return true
		}
	}
	if len(order) == 0 {
		b = computeSplitBounds(context.Background(), g, bd.lo, bd.hi, bd.method, part, leaf.tokens, b, 1, true)
		if b.Proven {
			return true
		}
	}
	t := leaf.step
	if t < 0 || t >= len(b.Allowed) {
		return false
	}
	var toks []int
	for z, ok := range b.Allowed[t] {
		if ok {
			toks = append(toks, z)
		}
	}
	if len(toks) == 0 {
		return true
	}
	dom := sameDomain(b, len(toks))
	rows := make([]splitSet, len(toks))
	for r := range rows {
		rows[r] = splits
	}
	c, k := g.head.marginRows(toks, 1)
	start := g.hidden[t]
	rx0 := g.defaultRelaxation(dom, start)
	if leaf.rx != nil {
		for r, z := range toks {
			if pr := slices.Index(leaf.toks, z); pr >= 0 {
				rx0.copyRow(leaf.rx, r, pr, len(toks))
			}
		}
	}
	ub, _, _, _ := g.optimise(dom, start, c, k, rows, nil, rx0, s.with(babChildAlpha))
	return ub != nil && slices.Max(ub) < 0 && !math.IsNaN(slices.Max(ub))
}

// byNode orders neurons by node, then index: the order branch and bound
// derives a domain's bounds in, one split at a time.
func byNode(a, b neuron) int {
	if a.node != b.node {
		return a.node - b.node
	}
	return a.index - b.index
}
