package verify

import (
	"context"
	"math"
	"slices"
)

// Bounds holds sound bounds of every quantity of the unrolled network over
// a set (the input box, or a branch-and-bound domain of it).
type Bounds struct {
	Input []Interval
	// Val[n] bounds node n's output (Val[0] is Input).
	Val [][]Interval
	// Logits[t] bounds o_t; Margin[t][z] bounds o_t[z] − o_t[eos].
	Logits, Margin [][]Interval
	// Allowed[t][z]: token z may be emitted (and fed back) at step t of a
	// counterexample: z ≠ eos, o_t[z] can reach o_t[eos] and can be the
	// largest non-eos logit.
	Allowed [][]bool
	// Proven is set when the bounds alone show that eos wins at some step
	// t ≤ K for every input: the property holds.
	Proven   bool
	ProvenAt int
	// Empty is set when the bounds show a branch-and-bound domain has no
	// input at all (Proven too, ProvenAt −1).
	Empty  bool
	Method string
	// NumUnstable counts neurons whose relaxation is loose (unstable
	// ReLUs: a binary each in the MIP).
	NumUnstable int
}

// MarginBound is the bounds' upper bound on M*, the max over the set of
// min over steps of the best non-eos margin: the smallest over steps of
// the largest margin an allowed token can reach (+Inf before any step).
func (b *Bounds) MarginBound() float64 {
	ub := math.Inf(1)
	for t := range b.Allowed {
		ub = math.Min(ub, b.stepBound(t))
	}
	return ub
}

// stepBound is the largest margin an allowed token can reach at step t.
func (b *Bounds) stepBound(t int) float64 {
	best := math.Inf(-1)
	for z, ok := range b.Allowed[t] {
		if ok {
			best = math.Max(best, b.Margin[t][z].Hi)
		}
	}
	return best
}

// empty marks b as a domain with no input: closed, nothing to bound.
func (b *Bounds) empty() *Bounds {
	b.Proven, b.Empty, b.ProvenAt = true, true, -1
	return b
}

// BoundMethod selects how bounds are computed.
type BoundMethod string

const (
	// BoundInterval is interval arithmetic as in the paper.
	BoundInterval BoundMethod = "interval"
	// BoundCROWN adds linear bound propagation (back-substitution through
	// the activations' relaxations to the input box), intersected with
	// the intervals.
	BoundCROWN BoundMethod = "crown"
	// BoundAlphaCROWN is CROWN with the lower slopes of the unstable ReLUs
	// optimised (α-CROWN, alpha.go) for each margin CROWN leaves open.
	BoundAlphaCROWN BoundMethod = "alpha-crown"
	// BoundAlphaCROWNFull also optimises the slopes for the bounds of the
	// unstable intermediate neurons (as α-CROWN's authors do), in every
	// node with at most maxAlphaNeurons of them: every later node and
	// margin is then bounded with tighter relaxations, which is where
	// CROWN's looseness compounds over the unrolled steps.
	BoundAlphaCROWNFull BoundMethod = "alpha-crown-full"
)

// boundMethods lists the bound methods, cheapest first.
var boundMethods = []BoundMethod{BoundInterval, BoundCROWN, BoundAlphaCROWN, BoundAlphaCROWNFull}

// maxAlphaNeurons caps the unstable neurons of a node whose bounds
// BoundAlphaCROWNFull optimises, two slope searches each: batched, a
// search costs the rows' back-substitutions, and the first convolutions'
// thousand unstable neurons would take the root seconds for little.
const maxAlphaNeurons = 512

// optimised reports whether the method optimises the margins' slopes.
func (m BoundMethod) optimised() bool { return m == BoundAlphaCROWN || m == BoundAlphaCROWNFull }

// tokenSet fixes the token emitted at some decoder steps (step → token),
// the other kind of domain: a counterexample emits at each step one of
// the tokens the bounds allow there, so one domain per allowed token
// covers them all.
type tokenSet map[int]int

// restrict keeps only token tok of allowed (and reports whether it was
// allowed at all).
func restrict(allowed []bool, tok int) ([]bool, bool) {
	out := make([]bool, len(allowed))
	out[tok] = allowed[tok]
	return out, allowed[tok]
}

// computeBounds bounds the graph over the input box, node by node,
// stopping early if eos provably wins at some step. Once ctx ends, the
// neurons and margins not yet bounded get interval bounds alone: still
// sound, and the caller's time limit holds (one CROWN pass over a wide
// ball's convolutions can take seconds).
func computeBounds(ctx context.Context, g *graph, lo, hi []float64, method BoundMethod) *Bounds {
	return computeSplitBounds(ctx, g, lo, hi, method, nil, nil, nil, 0, false)
}

// actOf maps a node to the activation reading it (−1: none).
func (g *graph) actOf() []int {
	out := make([]int, len(g.nodes))
	for i := range out {
		out[i] = -1
	}
	for _, n := range g.nodes {
		if n.act != nil {
			out[n.in[0]] = n.id
		}
	}
	return out
}

// computeSplitBounds bounds the graph over the inputs of the box that
// satisfy splits and emit tokens at the steps it fixes: each split
// neuron's pre-activation bounds are cut at its split point on its side,
// so that everything after it is bounded with it stable, and a fixed step
// allows only its token. With parent (the bounds of a domain these extend,
// differing only at nodes ≥ start), nodes before start are taken from it
// rather than recomputed. An empty domain (a split against its neuron's
// bounds, a token the bounds do not allow) is Proven, with Empty set.
// With inherit, the nodes from start on are bounded by intervals
// intersected with the parent's bounds (which hold on a sub-domain)
// instead of by CROWN: far cheaper, and branch and bound's β multipliers
// carry the splits to the input anyway; the logits and margins are
// intersected with the parent's too and not bounded by CROWN: the
// bounder does that for a whole batch of children at once
// (bounder.children). ctx's end
// cuts the rest to interval bounds, as in computeBounds: the domains of a
// search that may be paused and resumed are bounded under a context that
// does not end, so that they do not depend on when it was.
func computeSplitBounds(ctx context.Context, g *graph, lo, hi []float64, method BoundMethod, splits splitSet, tokens tokenSet, parent *Bounds, start int, inherit bool) *Bounds {
	b := &Bounds{Method: string(method), Val: make([][]Interval, len(g.nodes))}
	if parent == nil {
		start = 0
		b.Input = make([]Interval, len(lo))
		for i := range lo {
			b.Input[i] = Interval{lo[i], hi[i]}
		}
	} else {
		start = max(start, 1)
		b.Input = parent.Input
		copy(b.Val, parent.Val[:start])
		for t := range parent.Logits {
			if g.hidden[t] >= start {
				break
			}
			al := parent.Allowed[t]
			if tok, ok := tokens[t]; ok {
				var any bool
				if al, any = restrict(al, tok); !any {
					return b.empty()
				}
			}
			b.Logits = append(b.Logits, parent.Logits[t])
			b.Margin = append(b.Margin, parent.Margin[t])
			b.Allowed = append(b.Allowed, al)
		}
	}
	b.Val[0] = b.Input
	crown := method != BoundInterval
	inheriting := inherit && parent != nil
	actOf := g.actOf()
	cuts := map[int][]neuron{} // pre-activation node → its split neurons
	for nu := range splits {
		p := g.nodes[nu.node].in[0]
		cuts[p] = append(cuts[p], nu)
	}
	for id := max(start, 1); id < len(g.nodes); id++ {
		n := g.nodes[id]
		ins, allowed := b.inputsOf(n)
		var val []Interval
		switch {
		case inheriting && id == start && len(cuts[id]) > 0:
			// A split's own pre-activation node: only the cut changes it.
			val = slices.Clone(parent.Val[id])
		case inheriting && n.step < 0 && id > start:
			// An encoder node after a split keeps its parent's bounds
			// (they hold on the child): one cut moves the intervals of a
			// wide layer by little, and recomputing the convolutions' and
			// the first dense layer's took branch and bound a tenth of its
			// time.
			b.Val[id] = parent.Val[id]
			continue
		default:
			val = n.op.interval(ins, allowed)
		}
		if inheriting && parent.Val[id] != nil {
			for j := range val {
				val[j] = intersect(val[j], parent.Val[id][j])
			}
		}
		if a := actOf[id]; a >= 0 {
			if crown && !inheriting && !onlyInput(n) && ctx.Err() == nil {
				g.tightenPre(ctx, b, id, val, method)
			}
			for _, nu := range cuts[id] {
				val[nu.index] = splits[nu].apply(val[nu.index])
			}
			for j := range val {
				if val[j].Lo > val[j].Hi {
					return b.empty()
				}
				if g.nodes[a].act.unstable(val[j]) {
					b.NumUnstable++
				}
			}
		}
		b.Val[id] = val
		if n.step < 0 || g.hidden[n.step] != id {
			continue
		}
		t := n.step
		var within *stepBounds
		if inheriting && t < len(parent.Margin) {
			within = &stepBounds{parent.Logits[t], parent.Margin[t]}
		}
		live := ctx.Err() == nil
		// A child's margins are its parent's, intersected with intervals:
		// the bounder tightens the worst step's by α,β-CROWN.
		logits, margin, empty := g.boundHead(b, t, crown && live && !inheriting, method.optimised() && live && !inheriting, within, ctxStop(ctx))
		if empty {
			return b.empty()
		}
		al, any := g.head.allowed(logits, margin)
		if tok, ok := tokens[t]; ok && any {
			if al, any = restrict(al, tok); !any {
				return b.empty()
			}
		}
		b.Logits = append(b.Logits, logits)
		b.Margin = append(b.Margin, margin)
		b.Allowed = append(b.Allowed, al)
		if !any {
			b.Proven, b.ProvenAt = true, t
			return b
		}
	}
	return b
}

// ctxStop is a stop function for the optimiser: ctx has ended.
func ctxStop(ctx context.Context) func() bool {
	return func() bool { return ctx.Err() != nil }
}

// onlyInput reports whether n reads nothing but the input: its bounds are
// exact up to rounding by interval arithmetic (an affine map of a box),
// and CROWN has nothing to add.
func onlyInput(n *node) bool {
	for _, p := range n.in {
		if p != 0 {
			return false
		}
	}
	return len(n.in) > 0
}

// stepBounds are one decoder step's logit and margin bounds.
type stepBounds struct{ logits, margin []Interval }

// tightenPre intersects the bounds val of pre-activation node id with
// CROWN's for the neurons they leave unstable (stable ones are relaxed
// exactly whatever their bounds), and with α-CROWN's for the full method
// when there are at most maxAlphaNeurons of them; b holds the bounds of
// every node before id.
func (g *graph) tightenPre(ctx context.Context, b *Bounds, id int, val []Interval, method BoundMethod) {
	act := g.nodes[g.actOf()[id]].act
	var idx []int
	for j, iv := range val {
		if act.unstable(iv) {
			idx = append(idx, j)
		}
	}
	if len(idx) == 0 {
		return
	}
	crown := func(dom []*Bounds, c *block) []float64 { return g.crownUpper(dom, id, c, make([]float64, c.rows)) }
	g.tightenRows(ctx, b, id, idx, val, crown)
	if method != BoundAlphaCROWNFull || len(idx) > maxAlphaNeurons {
		return
	}
	var open []int
	for _, j := range idx {
		if act.unstable(val[j]) {
			open = append(open, j)
		}
	}
	opt := defaultAlpha
	opt.stop = ctxStop(ctx)
	alpha := func(dom []*Bounds, c *block) []float64 {
		ub, _, _, _ := g.optimise(dom, id, c, make([]float64, c.rows), nil, nil, nil, opt)
		return ub // nil once ctx ended: tightenRows keeps CROWN's
	}
	g.tightenRows(ctx, b, id, open, val, alpha)
}

// tightenRows intersects the bounds val[j] of node id's neurons j in idx
// with upper bounds of their unit rows (bound: sound upper bounds of rows
// over b, or nil when it was stopped), 256 neurons at a time until ctx
// ends.
func (g *graph) tightenRows(ctx context.Context, b *Bounds, id int, idx []int, val []Interval, bound func([]*Bounds, *block) []float64) {
	const chunk = 256
	for lo := 0; lo < len(idx); lo += chunk {
		if ctx.Err() != nil {
			return
		}
		part := idx[lo:min(lo+chunk, len(idx))]
		c := unitRows(part, g.nodes[id].width)
		ub := bound(sameDomain(b, c.rows), c)
		if ub == nil {
			return
		}
		for i, j := range part {
			val[j] = intersect(val[j], Interval{-ub[2*i+1], ub[2*i]})
		}
	}
}

// unitRows returns the rows ±e_j of the neurons idx of a node of width w:
// row 2i's upper bound is neuron idx[i]'s upper end, row 2i+1's its
// lower end negated.
func unitRows(idx []int, w int) *block {
	c := newBlock(2*len(idx), w)
	for i, j := range idx {
		c.v[2*i*w+j] = 1
		c.v[(2*i+1)*w+j] = -1
	}
	return c
}

// sameDomain is n rows over one domain.
func sameDomain(b *Bounds, n int) []*Bounds {
	dom := make([]*Bounds, n)
	for r := range dom {
		dom[r] = b
	}
	return dom
}

// boundHead bounds step t's logits and margins from its hidden node's
// bounds: intervals, margins by CROWN too when asked, and by α-CROWN
// where CROWN leaves one that might still be negative open. within, if
// set, are the step's bounds over a domain containing this one (a
// branch-and-bound parent's): they are intersected in, and CROWN then
// bounds only the margins' upper ends. empty reports a bound crossing its
// other end: a domain with no input. stop ends α-CROWN's search early,
// leaving CROWN's margins.
func (g *graph) boundHead(b *Bounds, t int, crown, alpha bool, within *stepBounds, stop func() bool) (logits, margin []Interval, empty bool) {
	h := g.hidden[t]
	hd := g.head
	logits, margin = hd.intervals(b.Val[h])
	if within != nil {
		for z := range logits {
			logits[z] = intersect(logits[z], within.logits[z])
			empty = empty || logits[z].Lo > logits[z].Hi
			if z != hd.eos {
				margin[z] = intersect(margin[z], within.margin[z])
				empty = empty || margin[z].Lo > margin[z].Hi
			}
		}
		if empty {
			return logits, margin, true
		}
	}
	if !crown {
		return logits, margin, false
	}
	var toks []int
	for z := range margin {
		if z != hd.eos {
			toks = append(toks, z)
		}
	}
	c, k := hd.marginRows(toks, 1)
	if within == nil {
		neg, kn := hd.marginRows(toks, -1)
		c.v, c.rows, k = append(c.v, neg.v...), c.rows+neg.rows, append(k, kn...)
	}
	dom := sameDomain(b, c.rows)
	ub := g.crownUpper(dom, h, c, k)
	for i, z := range toks {
		margin[z].Hi = math.Min(margin[z].Hi, ub[i])
		if within == nil {
			margin[z].Lo = math.Max(margin[z].Lo, -ub[len(toks)+i])
		}
		empty = empty || margin[z].Lo > margin[z].Hi
	}
	if !alpha || empty {
		return logits, margin, empty
	}
	var open []int
	for _, z := range toks {
		if margin[z].Hi >= 0 && margin[z].Lo < 0 {
			open = append(open, z)
		}
	}
	if len(open) > 0 {
		c, k := hd.marginRows(open, 1)
		opt := defaultAlpha
		opt.stop = stop
		ub, _, _, _ := g.optimise(dom[:c.rows], h, c, k, nil, nil, nil, opt)
		if ub == nil {
			return logits, margin, false
		}
		for i, z := range open {
			margin[z].Hi = math.Min(margin[z].Hi, ub[i])
		}
	}
	return logits, margin, false
}

// crownUpper returns sound upper bounds of the rows of c (coefficients on
// node start's output) plus constants k, each over its row's domain dom[r],
// by CROWN: one padded back-substitution with CROWN's slopes.
func (g *graph) crownUpper(dom []*Bounds, start int, c *block, k []float64) []float64 {
	s := g.newBack(dom, nil, true, false)
	s.run(start, c, k)
	defer s.release()
	return s.concretize(nil)
}

func (g *graph) newBack(dom []*Bounds, rx *relaxation, padded, record bool) *backState {
	s := &backState{g: g, dom: dom, rx: rx, padded: padded,
		coef: make([]*block, len(g.nodes)), k: make([]float64, len(dom))}
	if padded {
		s.abs = make([]*block, len(g.nodes))
		s.kabs = make([]float64, len(dom))
	}
	if record {
		s.rec = &backRecord{coef: make([]*block, len(g.nodes)), slope: make([]*block, len(g.nodes)),
			shift: make([]*block, len(g.nodes)), token: make([][]int, len(g.nodes))}
	}
	return s
}

// run back-substitutes the rows c·a_start + k to the input; c is not kept.
func (s *backState) run(start int, c *block, k []float64) {
	copy(s.k, k)
	if s.rx != nil && s.rx.cuts != nil {
		for r := range s.k {
			s.k[r] += s.rx.cuts.k[r]
			if s.padded {
				s.kabs[r] += s.rx.cuts.kabs[r]
			}
		}
	}
	s.coef[start] = c
	if s.padded {
		s.abs[start] = &block{rows: c.rows, cols: c.cols, v: absOf(c.v)}
		for r, v := range k {
			s.kabs[r] = math.Abs(v)
		}
	}
	for id := start; id > 0; id-- {
		if s.coef[id] == nil {
			if s.rx.piOf(id) == nil {
				continue
			}
			// A cut's indicator terms are bounded even where the
			// objective does not reach their neurons.
			s.coef[id] = s.g.pool.get(len(s.dom), s.g.nodes[id].width)
			if s.padded {
				s.abs[id] = s.g.pool.get(len(s.dom), s.g.nodes[id].width)
			}
		}
		n := s.g.nodes[id]
		if n.act != nil {
			s.relaxActivation(n)
		} else {
			n.lin.back(s, n)
		}
		if id != start { // the caller's block is the caller's
			s.g.pool.put(s.coef[id])
			s.coef[id] = nil
			if s.padded {
				s.g.pool.put(s.abs[id])
				s.abs[id] = nil
			}
		}
	}
}

// relaxActivation is the driver's step through an activation node: each
// row's coefficients are relaxed by the operator's rule on its domain's
// pre-activation bounds, with the row's parameters (CROWN's where it has
// none), and its β terms are added. An operator with a row loop of its
// own (rowRelaxer) relaxes a whole row at a time.
func (s *backState) relaxActivation(n *node) {
	act, p := n.act, n.in[0]
	c := s.coef[n.id]
	rr, fast := act.(rowRelaxer)
	fresh := fast && s.fresh(p)
	var in, a, ain *block
	if fresh { // the row loop writes every value
		in = s.intoDirty(p)
		if s.padded {
			a, ain = s.abs[n.id], s.absIntoDirty(p)
		}
	} else {
		in = s.into(p)
		if s.padded {
			a, ain = s.abs[n.id], s.absInto(p)
		}
	}
	var alpha, beta, betaK *block
	if s.rx != nil {
		alpha, beta, betaK = s.rx.alpha[n.id], s.rx.beta[n.id], s.rx.betaK[n.id]
	}
	pi := s.rx.piOf(n.id)
	var scratch []float64
	var slope, shift *block
	if s.rec != nil {
		cc := s.g.pool.dirty(c.rows, c.cols)
		copy(cc.v, c.v)
		s.rec.coef[n.id] = cc
		// Read only where the coefficient is not 0, where they are written.
		slope, shift = s.g.pool.dirty(c.rows, c.cols), s.g.pool.dirty(c.rows, c.cols)
		s.rec.slope[n.id], s.rec.shift[n.id] = slope, shift
	}
	np := act.params()
	def := make([]float64, np)
	for r := 0; r < c.rows; r++ {
		pre := s.dom[r].Val[p]
		cr, ir := c.row(r), in.row(r)
		var ar, air, alr, sr, dr []float64
		if a != nil {
			ar, air = a.row(r), ain.row(r)
		}
		if alpha != nil {
			alr = alpha.row(r)
		}
		if slope != nil {
			sr, dr = slope.row(r), shift.row(r)
		}
		// The neurons with a cut term (only ReLUs carry them) take the
		// joint rule instead of the plain one.
		plain, pir := cr, []float64(nil)
		if pi != nil && slices.ContainsFunc(pi.row(r), func(v float64) bool { return v != 0 }) {
			pir = pi.row(r)
			scratch = append(scratch[:0], cr...)
			for i, v := range pir {
				if v != 0 {
					scratch[i] = 0
				}
			}
			plain = scratch
		}
		if fast {
			k, kabs := rr.relaxRow(plain, ir, pre, alr, ar, air, sr, dr, fresh)
			s.k[r] += k
			if ar != nil {
				s.kabs[r] += kabs
			}
		} else {
			for i, ci := range plain {
				if ci == 0 {
					continue
				}
				iv := pre[i]
				pv := def
				if alr != nil {
					pv = alr[i*np : (i+1)*np]
				} else {
					act.initParams(iv, def)
				}
				sl, d := act.relax(ci, iv, pv)
				ir[i] += ci * sl
				s.k[r] += d
				if ar != nil {
					air[i] += ar[i] * math.Abs(sl)
					s.kabs[r] += math.Abs(d)
				}
				if sr != nil {
					sr[i], dr[i] = sl, d/ci
				}
			}
		}
		if pir != nil {
			k, kabs := relaxCutRow(cr, pir, pre, alr, ar, ir, air, sr, dr)
			s.k[r] += k
			if ar != nil {
				s.kabs[r] += kabs
			}
		}
		if beta != nil {
			addBeta(ir, air, beta.row(r))
		}
		if betaK != nil {
			s.k[r] += betaK.v[2*r]
			if ar != nil {
				s.kabs[r] += betaK.v[2*r+1]
			}
		}
	}
}

// release recycles the state's blocks (the input's coefficients and the
// record): nothing may read them afterwards.
func (s *backState) release() {
	s.g.pool.put(s.coef[0])
	if s.padded {
		s.g.pool.put(s.abs[0])
	}
	if s.rec != nil {
		for id := range s.rec.coef {
			s.g.pool.put(s.rec.coef[id], s.rec.slope[id], s.rec.shift[id])
		}
	}
}

// concretize returns each row's maximum over its domain's input box,
// padded for rounding when the state was; xs, if set, receives the
// maximising vertices.
func (s *backState) concretize(xs *block) []float64 {
	xc := s.coef[0]
	out := make([]float64, len(s.dom))
	for r := range out {
		in := s.dom[r].Input
		k := s.k[r]
		var xr, absr, xsr []float64
		if xc != nil {
			xr = xc.row(r)
		}
		if s.padded && s.abs[0] != nil {
			absr = s.abs[0].row(r)
		}
		if xs != nil {
			xsr = xs.row(r)
		}
		abs := 0.0
		if s.padded {
			abs = s.kabs[r]
		}
		for i, iv := range in {
			v := iv.Lo
			if xr != nil && xr[i] >= 0 {
				v = iv.Hi
			}
			if xr != nil {
				k += xr[i] * v
			}
			if xsr != nil {
				xsr[i] = v
			}
			if absr != nil {
				abs += absr[i] * math.Max(math.Abs(iv.Lo), math.Abs(iv.Hi))
			}
		}
		if s.padded {
			k += relPad*abs + absPad
		}
		out[r] = k
	}
	return out
}

// paddedConst is row r's constant of a padded back-substitution, with the
// rounding allowance for its input coefficients over the box in (|x| ≤
// max(|lo|, |hi|)): a·x + paddedConst bounds the row soundly on the box.
func (s *backState) paddedConst(r int, in []Interval) float64 {
	abs := s.kabs[r]
	if s.coef[0] != nil {
		for i, iv := range in {
			abs += s.abs[0].v[r*len(in)+i] * math.Max(math.Abs(iv.Lo), math.Abs(iv.Hi))
		}
	}
	return s.k[r] + relPad*abs + absPad
}

// alphaStart is the first node whose BoundAlphaCROWNFull bounds can differ
// from those in b, CROWN's (or α-CROWN's) bounds of the same box: before it
// no pre-activation node has 1..maxAlphaNeurons unstable neurons and no
// step has margins, so a tightening of b can reuse those nodes instead of
// bounding them again (the convolutions' CROWN bounds are most of the
// cost).
func (g *graph) alphaStart(b *Bounds) int {
	actOf := g.actOf()
	end := g.enc + 1
	for id := 1; id < end && id < len(b.Val) && b.Val[id] != nil; id++ {
		a := actOf[id]
		if a < 0 {
			continue
		}
		n := 0
		for _, iv := range b.Val[id] {
			if g.nodes[a].act.unstable(iv) {
				n++
			}
		}
		if n > 0 && n <= maxAlphaNeurons {
			return id
		}
	}
	return end
}

// addBeta adds a row's β-CROWN terms on its pre-activations (βlo − βhi
// for the splits z ≥ lo and z ≤ hi, in bv; their constants are in betaK),
// which are ≥ 0 on the domain and so keep the bound, to its
// pre-activation coefficients ir (and their absolute values to air, when
// padded).
func addBeta(ir, air, bv []float64) {
	for i, b := range bv {
		if b != 0 {
			ir[i] += b
			if air != nil {
				air[i] += math.Abs(b)
			}
		}
	}
}
