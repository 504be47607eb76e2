package verify

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"time"
)

// Branch and bound over activation splits and tokens (the engine of
// α,β-CROWN, with the decoder's tokens as a second kind of split), in four
// parts:
//
//   - a domain fixes the side of some activations' split points and the
//     token of some steps; its bounds are the graph's bounds with those
//     pre-activations cut and those steps restricted to their token
//     (computeSplitBounds, inheriting its parent's bounds);
//   - the bounder bounds a batch of domains together: every domain's
//     worst margins (the step whose best allowed margin is smallest, and
//     every token allowed there) are rows of one batched α,β-CROWN
//     optimisation, warm-started from the parent's parameters, whose
//     back-substitutions are matrix products;
//   - the brancher picks each domain's split: the activations with the
//     largest BaBSR scores in its worst margin's bound are candidates, and
//     the one whose worse child is lowest under a cheap bound (filtered
//     smart branching) is split; with no activation left, a step's tokens;
//   - the frontier is a max-heap of open domains on their margin bound; a
//     batch of the largest is split at a time.
//
// A domain is closed when every margin of its worst step is below 0 (eos
// wins there for all its inputs) or its bounds show it empty; the
// property holds when every domain is closed, since a neuron's two sides,
// and a step's allowed tokens, cover every counterexample of their parent.
// Each domain's maximising vertex is decoded as a counterexample
// candidate; nothing is claimed on it before the float64 replay.

// domain is one branch-and-bound domain with its bounds and what bounding
// it found.
type domain struct {
	splits splitSet
	tokens tokenSet
	b      *Bounds
	// start is the first node whose bounds differ from its parent's.
	start int
	// fixed is the step whose token the domain fixed last (−1: none).
	fixed int
	// bound is a sound upper bound of the domain's max-min margin; step
	// the worst step, toks the tokens allowed there (the rows bounded),
	// worst the one whose bound is largest.
	bound float64
	step  int
	toks  []int
	worst int
	// rx holds the optimiser's parameters, one row per token of toks:
	// its children's searches start there.
	rx     *relaxation
	vertex []float64
	// cands are the activations to split, best score first; next the one
	// chosen (ok false: none left).
	cands []neuron
	next  neuron
	ok    bool
	// exhausted is set once a domain with nothing to split had its last,
	// long search.
	exhausted bool
	// root is the search root the domain descends from (nil: it is one).
	root *domain
	// added reports that the domain adds a split to its parent's: last,
	// on the side z ≥ its cut's lo (up) or z ≤ its hi.
	added bool
	last  neuron
	up    bool
	// path is the splits the domain added to its root's, earliest first.
	path []neuron
}

// rootOf is the search root d descends from.
func rootOf(d *domain) *domain {
	if d.root != nil {
		return d.root
	}
	return d
}

// fsbCandidates is how many of the best-scored neurons the brancher tries.
// With the batched bounder, 16 left lower open margins than 8 on four of
// six unknown samples after a minute (equal on the other two), for about
// 15 % fewer domains bounded (docs/BENCHMARKS.md).
const fsbCandidates = 16

// babTokens is how many of a child domain's tokens at its worst step are
// bounded by α,β-CROWN: the tokens with the largest margin bounds decide
// whether it closes, each row costs a back-substitution per iteration,
// and a worst step allows up to the whole vocabulary.
const babTokens = 2

// babBatch is how many domains are split, and their children bounded, at
// a time: the rows of one batched optimisation.
const babBatch = 8

// frontier is a max-heap of open domains by margin bound.
type frontier []*domain

func (f frontier) Len() int           { return len(f) }
func (f frontier) Less(i, j int) bool { return f[i].bound > f[j].bound }
func (f frontier) Swap(i, j int)      { f[i], f[j] = f[j], f[i] }
func (f *frontier) Push(x any)        { *f = append(*f, x.(*domain)) }
func (f *frontier) Pop() any {
	old := *f
	d := old[len(old)-1]
	*f = old[:len(old)-1]
	return d
}

// worstStep is the step whose best allowed margin bound is smallest: the
// objective a domain is bounded, and split, for.
func worstStep(b *Bounds) int {
	ub, step := math.Inf(1), -1
	for t := range b.Allowed {
		if v := b.stepBound(t); v < ub {
			ub, step = v, t
		}
	}
	return step
}

// bounder bounds batches of domains over one box.
type bounder struct {
	g      *graph
	lo, hi []float64
	method BoundMethod
	// clip cuts each child's input box by its new split (clip.go);
	// clipped counts the boxes it cut.
	clip    bool
	clipped int64
	// cuts, when set, are the learned nogoods whose multipliers enter
	// every bound examine computes (cutdual.go); cutRows counts the rows
	// bounded with at least one.
	cuts    *cutPool
	cutRows int64
}

// children bounds a batch of domains from their parents' bounds: the
// nodes from each one's start on by intervals within its parent's, then
// the upper ends of the margins of the steps from there on by CROWN, all
// children's as one batch of rows per step. It reports false when stop
// (nil: never) ended it between steps: the children are then to be
// bounded again, from their parents.
func (bd *bounder) children(cs, parents []*domain, stop func() bool) bool {
	g := bd.g
	type rowOf struct{ c, tok int }
	groups := map[int][]rowOf{}
	for i, c := range cs {
		c.b = computeSplitBounds(context.Background(), g, bd.lo, bd.hi, bd.method, c.splits, c.tokens, parents[i].b, c.start, true)
	}
	if bd.clip && bd.method != BoundInterval {
		bd.clipped += int64(bd.clipChildren(cs))
	}
	for i, c := range cs {
		if c.b.Proven || bd.method == BoundInterval {
			continue
		}
		for t, al := range c.b.Allowed {
			// Only the step the parent was split for: the others keep the
			// parent's margins.
			if g.hidden[t] < c.start || t != parents[i].step {
				continue
			}
			for z, ok := range al {
				if ok {
					groups[t] = append(groups[t], rowOf{i, z})
				}
			}
		}
	}
	for _, t := range slices.Sorted(maps.Keys(groups)) {
		if stop != nil && stop() {
			return false
		}
		rows := groups[t]
		toks := make([]int, len(rows))
		dom := make([]*Bounds, len(rows))
		for r, ro := range rows {
			toks[r], dom[r] = ro.tok, cs[ro.c].b
		}
		c, k := g.head.marginRows(toks, 1)
		ub := g.crownUpper(dom, g.hidden[t], c, k)
		for r, ro := range rows {
			if b := cs[ro.c].b; !b.Proven || b.ProvenAt > t {
				tightenMargin(b, t, ro.tok, ub[r])
			}
		}
	}
	return true
}

// examine bounds the worst margins of a batch of domains by α,β-CROWN
// (init: each domain's parent, whose parameters start its search, or nil)
// and reports which it closes: at each domain's worst step, the
// maxTokens tokens with the largest margin bounds (≤ 0: every token
// allowed there); the others keep the bounds they have. An open domain
// gets its bound, vertex, parameters and branching candidates. When
// opt.stop abandons a search, examine changes no domain and reports
// ok false: the batch is as it was, to be bounded again or left open.
func (bd *bounder) examine(doms, init []*domain, opt alphaOptions, maxTokens int) (closed []bool, ok bool) {
	g := bd.g
	type rowOf struct{ d, tok int }
	groups := map[int][]rowOf{}        // step → rows
	rest := make([]float64, len(doms)) // the bound of the tokens not optimised
	steps := make([]int, len(doms))    // each domain's worst step
	toksOf := make([][]int, len(doms)) // and the tokens bounded there
	for i, d := range doms {
		steps[i] = worstStep(d.b)
		var toks []int
		for z, ok := range d.b.Allowed[steps[i]] {
			if ok {
				toks = append(toks, z)
			}
		}
		// The tokens with the largest margin bounds first: they decide the
		// domain's bound; the others keep theirs.
		m := d.b.Margin[steps[i]]
		slices.SortStableFunc(toks, func(a, b int) int { return cmp.Compare(m[b].Hi, m[a].Hi) })
		rest[i] = math.Inf(-1)
		if maxTokens > 0 && len(toks) > maxTokens {
			rest[i] = m[toks[maxTokens]].Hi
			toks = toks[:maxTokens]
		}
		toksOf[i] = toks
		for _, z := range toks {
			groups[steps[i]] = append(groups[steps[i]], rowOf{i, z})
		}
	}
	type found struct {
		ub    []float64
		xs    *block
		best  *relaxation
		final *backState
	}
	order := slices.Sorted(maps.Keys(groups))
	results := make([]found, len(order))
	for gi, t := range order {
		rows := groups[t]
		toks := make([]int, len(rows))
		dom := make([]*Bounds, len(rows))
		splits := make([]splitSet, len(rows))
		tokens := make([]tokenSet, len(rows))
		for r, ro := range rows {
			toks[r], dom[r], splits[r], tokens[r] = ro.tok, doms[ro.d].b, doms[ro.d].splits, doms[ro.d].tokens
		}
		c, k := g.head.marginRows(toks, 1)
		start := g.hidden[t]
		var cuts []rowCut
		if bd.cuts != nil {
			cuts = bd.cuts.rowCuts(g, dom, splits, tokens, start)
			for i, ct := range cuts { // a row's cuts are consecutive
				if i == 0 || ct.row != cuts[i-1].row {
					bd.cutRows++
				}
			}
		}
		var rx0 *relaxation
		if init != nil {
			rx0 = g.defaultRelaxation(dom, start)
			for r, ro := range rows {
				if p := init[ro.d]; p != nil && p.rx != nil && p.step == t {
					if pr := slices.Index(p.toks, ro.tok); pr >= 0 {
						rx0.copyRow(p.rx, r, pr, len(rows))
					}
				}
			}
		}
		ub, xs, best, final := g.optimise(dom, start, c, k, splits, cuts, rx0, opt)
		if ub == nil {
			return nil, false
		}
		results[gi] = found{ub, xs, best, final}
	}
	for i, d := range doms {
		d.step, d.toks = steps[i], toksOf[i]
		d.bound, d.vertex, d.rx = math.Inf(-1), nil, nil
	}
	for gi, t := range order {
		ub, xs, best, final := results[gi].ub, results[gi].xs, results[gi].best, results[gi].final
		for r, ro := range groups[t] {
			d := doms[ro.d]
			// The tighter margin is the domain's from now on (its children
			// inherit it); a token it rules out is no longer allowed here.
			tightenMargin(d.b, t, ro.tok, ub[r])
			if d.rx == nil {
				d.rx = newRelaxation(len(g.nodes))
			}
			for k, part := range best.parts() {
				appendRow(d.rx.parts()[k], part, r)
			}
			if ub[r] > d.bound {
				d.bound, d.vertex, d.worst = ub[r], append([]float64(nil), xs.row(r)...), ro.tok
				d.cands = g.candidates(final, r)
			}
		}
	}
	closed = make([]bool, len(doms))
	for i, d := range doms {
		d.bound = math.Max(d.bound, rest[i])
		if d.bound < 0 {
			closed[i] = true
			continue
		}
		d.bound = math.Min(d.bound, d.b.MarginBound())
		d.ok = len(d.cands) > 0
		if d.ok {
			d.next = d.cands[0]
		}
	}
	return closed, true
}

// tightenMargin lowers the upper bound of token z's margin at step t to
// ub in b (whose slices may be shared with its parent: they are copied),
// and disallows z there when ub < 0. Bounds computed from the larger
// allowed set still hold.
func tightenMargin(b *Bounds, t, z int, ub float64) {
	if ub >= b.Margin[t][z].Hi {
		return
	}
	b.Margin = slices.Clone(b.Margin)
	b.Margin[t] = slices.Clone(b.Margin[t])
	b.Margin[t][z].Hi = ub
	if ub < 0 && b.Allowed[t][z] {
		b.Allowed = slices.Clone(b.Allowed)
		b.Allowed[t] = slices.Clone(b.Allowed[t])
		b.Allowed[t][z] = false
		if !slices.Contains(b.Allowed[t], true) {
			b.Proven, b.ProvenAt = true, t
		}
	}
}

// copyRow copies row sr of src's parameters into row r of rx's: the
// relaxation parameters where rx has them (the same nodes), the β
// multipliers and terms into blocks of rows rows made where missing.
func (rx *relaxation) copyRow(src *relaxation, r, sr, rows int) {
	for id, b := range src.alpha {
		if b != nil && rx.alpha[id] != nil {
			copy(rx.alpha[id].row(r), b.row(sr))
		}
	}
	for k, part := range src.parts()[1:] {
		copyRowInto(rx.parts()[k+1], part, r, sr, rows)
	}
}

// appendRow appends row r of every block of src to dst's blocks.
func appendRow(dst, src []*block, r int) {
	for id, b := range src {
		if b == nil {
			continue
		}
		if dst[id] == nil {
			dst[id] = &block{cols: b.cols}
		}
		dst[id].v = append(dst[id].v, b.row(r)...)
		dst[id].rows++
	}
}

// candidates ranks the activations of row r's bound by their branching
// score (the operator's score of the coefficient its back-substitution
// put on the activation's output): the best fsbCandidates with a positive
// score, best first.
func (g *graph) candidates(s *backState, r int) []neuron {
	type scored struct {
		nu    neuron
		score float64
	}
	var all []scored
	for _, n := range g.nodes {
		coef := s.rec.coef[n.id]
		if n.act == nil || coef == nil {
			continue
		}
		pre := s.dom[r].Val[n.in[0]]
		for i, c := range coef.row(r) {
			if c == 0 {
				continue
			}
			if sc := n.act.score(c, pre[i]); sc > 0 {
				all = append(all, scored{neuron{n.id, i}, sc})
			}
		}
	}
	// An operator whose relaxation loosens with its inputs' ranges (a
	// product) credits what narrowing each input can remove to the
	// activation that produces it: splitting that activation narrows it.
	var at map[neuron]int
	for _, n := range g.nodes {
		sc, ok := n.op.(inputScorer)
		coef := s.rec.coef[n.id]
		if !ok || coef == nil {
			continue
		}
		if at == nil {
			at = map[neuron]int{}
			for k, c := range all {
				at[c.nu] = k
			}
		}
		ins := make([][]Interval, len(n.in))
		for k, p := range n.in {
			ins[k] = s.dom[r].Val[p]
		}
		out := make([]float64, len(n.in))
		for i, c := range coef.row(r) {
			if c == 0 {
				continue
			}
			sc.inputScores(c, ins, i, out)
			for k, p := range n.in {
				a := g.nodes[p]
				if a.act == nil || out[k] <= 0 || !a.act.unstable(s.dom[r].Val[a.in[0]][i]) {
					continue
				}
				nu := neuron{p, i}
				if j, ok := at[nu]; ok {
					all[j].score += out[k]
				} else {
					at[nu] = len(all)
					all = append(all, scored{nu, out[k]})
				}
			}
		}
	}
	slices.SortStableFunc(all, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	var out []neuron
	for _, c := range all[:min(len(all), fsbCandidates)] {
		out = append(out, c.nu)
	}
	return out
}

// brancher chooses the split of each domain of a batch.
type brancher struct{ g *graph }

// choose picks d.next among d.cands for every domain of the batch, as
// filtered smart branching does (De Palma et al., 2021): each candidate's
// two children are bounded cheaply — the candidate's pre-activation cut
// at its split point, every other bound the domain's, the domain's worst
// margin by one back-substitution with its parameters — and the neuron
// whose worse child is lowest is split. The intercept score alone ranks by
// what the split removes from the domain's own relaxation, not by what its
// children can prove. All candidates of the batch are one batch of rows.
// It reports false, having chosen nothing, when stop (nil: never) ended it.
func (br *brancher) choose(doms []*domain, stop func() bool) bool {
	g := br.g
	type rowOf struct {
		d, cand int
	}
	groups := map[int][]rowOf{}
	for i, d := range doms {
		if len(d.cands) < 2 || d.rx == nil {
			continue
		}
		for ci := range d.cands {
			for range 2 {
				groups[d.step] = append(groups[d.step], rowOf{i, ci})
			}
		}
	}
	worst := make([][]float64, len(doms))
	for i, d := range doms {
		worst[i] = make([]float64, len(d.cands))
		for ci := range worst[i] {
			worst[i][ci] = math.Inf(-1)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(groups)) {
		if stop != nil && stop() {
			return false
		}
		rows := groups[t]
		start := g.hidden[t]
		dom := make([]*Bounds, len(rows))
		toks := make([]int, len(rows))
		keep := make([]bool, len(rows))
		for r, ro := range rows {
			d := doms[ro.d]
			nu := d.cands[ro.cand]
			cut, ok := cutBounds(g, d.b, nu, d.splits.of(nu), r%2 == 0)
			dom[r], toks[r], keep[r] = cut, d.worst, ok
		}
		c, k := g.head.marginRows(toks, 1)
		rx := g.defaultRelaxation(dom, start)
		for r, ro := range rows {
			d := doms[ro.d]
			if pr := slices.Index(d.toks, d.worst); pr >= 0 {
				rx.copyRow(d.rx, r, pr, len(rows))
			}
		}
		s := g.newBack(dom, rx, false, false)
		s.run(start, c, k)
		ub := s.concretize(nil)
		s.release()
		for r, ro := range rows {
			if keep[r] {
				worst[ro.d][ro.cand] = math.Max(worst[ro.d][ro.cand], ub[r])
			}
		}
	}
	for i, d := range doms {
		if len(d.cands) < 2 || d.rx == nil {
			continue
		}
		best := math.Inf(1)
		for ci, w := range worst[i] {
			if w < best {
				best, d.next = w, d.cands[ci]
			}
		}
	}
	return true
}

// copyRowInto copies row sr of every block of src into row r of dst,
// making dst's missing blocks (rows rows, zero).
func copyRowInto(dst, src []*block, r, sr, rows int) {
	for id, b := range src {
		if b == nil {
			continue
		}
		if dst[id] == nil {
			dst[id] = newBlock(rows, b.cols)
		}
		copy(dst[id].row(r), b.row(sr))
	}
}

// childCut is the cut of neuron nu in the child of a domain with bounds
// b and cut c on side up of nu's split point.
func childCut(g *graph, b *Bounds, nu neuron, c cut, up bool) cut {
	n := g.nodes[nu.node]
	return c.side(n.act.splitAt(b.Val[n.in[0]][nu.index]), up)
}

// cutBounds returns b with neuron nu's pre-activation cut on side up of
// its split point (c its cut in b's domain), nothing else changed (sound
// for the child: its other bounds hold on a sub-domain); ok false when
// the side is empty.
func cutBounds(g *graph, b *Bounds, nu neuron, c cut, up bool) (*Bounds, bool) {
	p := g.nodes[nu.node].in[0]
	cb := *b
	cb.Val = slices.Clone(b.Val)
	cb.Val[p] = slices.Clone(b.Val[p])
	iv := &cb.Val[p][nu.index]
	*iv = childCut(g, b, nu, c, up).apply(*iv)
	return &cb, iv.Lo <= iv.Hi
}

// branch returns d's children: its two splits on d.next, or, with no
// activation left to split, one domain per token allowed at the earliest
// step whose token is not fixed yet and has a choice; nil when neither is
// left.
func (g *graph) branch(d *domain) []*domain {
	if d.ok {
		var out []*domain
		for _, up := range []bool{true, false} {
			s := maps.Clone(d.splits)
			s[d.next] = childCut(g, d.b, d.next, d.splits.of(d.next), up)
			out = append(out, &domain{splits: s, tokens: d.tokens, start: g.nodes[d.next.node].in[0], fixed: -1,
				added: true, last: d.next, up: up, path: append(slices.Clip(d.path), d.next)})
		}
		return out
	}
	return g.branchTokens(d)
}

// branchTokens returns one child per token allowed at the earliest step
// before d's worst step whose token is not fixed and has a choice (nil:
// none).
func (g *graph) branchTokens(d *domain) []*domain {
	for t, al := range d.b.Allowed {
		if t >= d.step && d.ok {
			break
		}
		if _, fixed := d.tokens[t]; fixed {
			continue
		}
		var out []*domain
		for z, ok := range al {
			if ok {
				tk := maps.Clone(d.tokens)
				if tk == nil {
					tk = tokenSet{}
				}
				tk[t] = z
				start := g.tokenNode(t + 1)
				out = append(out, &domain{splits: d.splits, tokens: tk, fixed: t, start: start, path: d.path})
			}
		}
		if len(out) > 1 {
			return out
		}
	}
	return nil
}

// babPhase runs search (a branch and bound begun on the root bounds, or
// resumed where an earlier phase left it) until every domain is closed
// (robust), a candidate replays (vulnerable), a domain is left with
// nothing to split, or ctx ends. It logs itself as the phase "bab" (Nodes:
// domains bounded; Bound: the largest open margin bound).
func babPhase(ctx context.Context, search *babSearch, res *Result) (done bool, bound float64, err error) {
	ph := Phase{Name: "bab", Status: "time limit"}
	start := time.Now()
	defer func() {
		ph.Seconds = time.Since(start).Seconds()
		res.Phases = append(res.Phases, ph)
	}()
	before := search.domains
	out, err := search.run(ctx)
	ph.Nodes = out.domains - before
	if c := search.cuts; c != nil {
		ph.Cuts, ph.Strengthened, ph.Pruned, ph.CutRows = c.learned, c.strengthened, c.pruned, search.bd.cutRows
	}
	if search.bd != nil {
		ph.Clipped = search.bd.clipped
	}
	if err != nil {
		return false, math.Inf(1), err
	}
	if !math.IsInf(out.bound, 1) {
		bound := out.bound
		ph.Bound = &bound
	}
	switch out.status {
	case babProven:
		ph.Status, ph.Bound = "proven", nil
		res.Verdict, res.Stage = Robust, "bab"
		res.Bound = math.Inf(-1)
		res.Reason = ""
		return true, math.Inf(-1), nil
	case babCandidate:
		ph.Status = "candidate"
		return true, out.bound, nil
	case babNoSplit:
		ph.Status = "no split left"
		res.Reason = fmt.Sprintf("branch and bound: a domain with every activation on its worst margin split and every token fixed stays open (margin ≤ %.3g)", out.bound)
	default:
		// Closed domains have no counterexample: the open ones' largest
		// margin bound bounds M* over the whole box. The reason names the
		// sample's bound, the record's proven_bound: a search stopped
		// before its root has none of its own (+Inf).
		res.Bound = math.Min(res.Bound, out.bound)
		res.Reason = fmt.Sprintf("time limit in branch and bound: %d domains open, margin ≤ %.3g", out.open, res.Bound)
	}
	return false, out.bound, nil
}

// babStatus is how a branch-and-bound search ended.
type babStatus int

const (
	babTimeLimit babStatus = iota // domains left open
	babProven                     // every domain closed
	babCandidate                  // a domain's vertex replayed as a counterexample
	babNoSplit                    // an open domain with nothing left to split
)

// babOutcome is what a branch-and-bound search found: its status, the
// largest open margin bound (when not proven), the open domains left and
// the domains bounded so far.
type babOutcome struct {
	status  babStatus
	bound   float64
	open    int
	domains int64
}

// babSearch is branch and bound from roots (each with its bounds set; its
// splits and tokens are kept by all its descendants), which together cover
// the set. One frontier holds every root's domains, so the time goes to
// the root whose domains have the largest margin bounds. A search that
// ran out of time keeps its frontier: run resumes it.
type babSearch struct {
	g         *graph
	bd        *bounder
	br        *brancher
	roots     []*domain // not examined yet
	open      frontier
	tried     map[uint64]bool
	candidate func([]float64) (bool, error)
	domains   int64
	final     *babOutcome // set once the search has ended for good
	// limit is the sample's time limit, looked at inside a batch's
	// bounding (between the optimiser's iterations); run's context, which
	// may be one slice of it, only between batches, so that a search cut
	// into slices bounds the same domains as a whole one. A batch that
	// limit ends is left as it was.
	limit context.Context
	// cuts are the nogoods learned from closed leaves (nil: off).
	cuts *cutPool
	// learnOpen, for tests only, learns nogoods from leaves left open
	// too: a pool with unsound cuts, which the tests must catch.
	learnOpen bool
	// queued are the children of the last batch split, not bounded yet,
	// with their parents: a search paused between splitting a batch and
	// bounding its children resumes with them, so no domain is bounded
	// twice and no parent split again.
	queued, parents []*domain
}

// newBaB starts a search over roots within limit (the sample's time
// limit); candidate replays a vertex.
func (g *graph) newBaB(limit context.Context, lo, hi []float64, opt Options, roots []*domain, candidate func([]float64) (bool, error)) *babSearch {
	for _, r := range roots {
		r.fixed = -1
	}
	s := &babSearch{g: g, bd: &bounder{g: g, lo: lo, hi: hi, method: opt.Bounds}, br: &brancher{g: g},
		roots: roots, tried: map[uint64]bool{}, candidate: candidate, limit: limit}
	if opt.Cuts || opt.CutMultipliers {
		s.cuts = &cutPool{}
		if opt.CutMultipliers {
			s.bd.cuts = s.cuts
		}
	}
	s.bd.clip = opt.Clip
	return s
}

// covered reports whether a learned nogood covers d (and counts it).
func (s *babSearch) covered(d *domain) bool {
	if s.cuts == nil || !s.cuts.covers(d) {
		return false
	}
	s.cuts.pruned++
	return true
}

// stopped reports whether the sample's time limit has passed.
func (s *babSearch) stopped() bool { return s.limit.Err() != nil }

// with is opt stopped by the sample's time limit.
func (s *babSearch) with(opt alphaOptions) alphaOptions {
	opt.stop = s.stopped
	return opt
}

// try decodes the vertices of a batch of domains and replays those that
// run past the property's last step without eos.
func (s *babSearch) try(doms []*domain) (bool, error) {
	var xs [][]float64
	for _, d := range doms {
		if d.vertex == nil {
			continue
		}
		h := fnv.New64a()
		for _, v := range d.vertex {
			b := math.Float64bits(v)
			h.Write([]byte{byte(b), byte(b >> 8), byte(b >> 16), byte(b >> 24), byte(b >> 32), byte(b >> 40), byte(b >> 48), byte(b >> 56)})
		}
		if key := h.Sum64(); !s.tried[key] {
			s.tried[key] = true
			xs = append(xs, d.vertex)
		}
	}
	if len(xs) == 0 {
		return false, nil
	}
	for i, long := range s.g.decodesPast(xs) {
		if long {
			if ok, err := s.candidate(append([]float64(nil), xs[i]...)); ok || err != nil {
				return ok, err
			}
		}
	}
	return false, nil
}

// run continues the search until every domain is closed, a domain's
// vertex replays, a domain has nothing left to split, or ctx ends.
func (s *babSearch) run(ctx context.Context) (babOutcome, error) {
	if s.final != nil {
		return *s.final, nil
	}
	open := &s.open
	end := func(st babStatus, bound float64) (babOutcome, error) {
		s.final = &babOutcome{status: st, bound: bound, open: open.Len(), domains: s.domains}
		return *s.final, nil
	}
	// pause leaves the search resumable: ctx ended with domains open. The
	// queued children are open with at most their parents' bounds.
	pause := func() (babOutcome, error) {
		bound := math.Inf(-1)
		if open.Len() > 0 {
			bound = (*open)[0].bound
		}
		for _, p := range s.parents {
			bound = math.Max(bound, p.bound)
		}
		if len(s.roots) > 0 {
			bound = math.Inf(1)
		}
		return babOutcome{bound: bound, open: open.Len() + len(s.queued) + len(s.roots), domains: s.domains}, nil
	}
	if len(s.roots) > 0 {
		if ctx.Err() != nil {
			return pause()
		}
		var live []*domain
		for _, r := range s.roots {
			if !r.b.Proven {
				live = append(live, r)
			}
		}
		closed, ok := s.bd.examine(live, nil, s.with(babAlpha), 0)
		if !ok {
			return pause()
		}
		for i, r := range live {
			if s.learnOpen {
				s.learn(r, r)
			}
			if !closed[i] {
				heap.Push(open, r)
			}
		}
		s.roots = nil
	}
	for {
		if len(s.queued) > 0 {
			if ctx.Err() != nil {
				return pause()
			}
			// Children a learned nogood covers are closed unbounded.
			var queued, parents []*domain
			for i, c := range s.queued {
				if s.covered(c) {
					s.domains++
					continue
				}
				queued, parents = append(queued, c), append(parents, s.parents[i])
			}
			s.queued, s.parents = queued, parents
			if !s.bd.children(s.queued, s.parents, s.stopped) {
				return pause()
			}
			var live, from []*domain
			for i, c := range s.queued {
				if c.b.Proven {
					continue
				}
				if s.bd.cuts != nil && s.cuts.coversByBounds(s.g, c) {
					// In a nogood's region once its bounds decide the
					// rest of the nogood's splits: closed unbounded.
					s.cuts.pruned++
					continue
				}
				live, from = append(live, c), append(from, s.parents[i])
			}
			closed, ok := s.bd.examine(live, from, s.with(babChildAlpha), babTokens)
			if !ok {
				return pause()
			}
			s.domains += int64(len(s.queued))
			for _, c := range s.queued {
				if c.b.Proven {
					s.learn(c, c.root)
				}
			}
			for i, c := range live {
				if !closed[i] {
					heap.Push(open, c)
				}
				if closed[i] || s.learnOpen {
					s.learn(c, c.root)
				}
			}
			s.queued, s.parents = nil, nil
		}
		if open.Len() == 0 {
			return end(babProven, math.Inf(1))
		}
		var batch []*domain
		for open.Len() > 0 && len(batch) < babBatch {
			if d := heap.Pop(open).(*domain); !s.covered(d) {
				batch = append(batch, d)
			}
		}
		if len(batch) == 0 {
			continue
		}
		putBack := func(doms []*domain) {
			for _, d := range doms {
				heap.Push(open, d)
			}
		}
		if ok, err := s.try(batch); err != nil || ok {
			putBack(batch)
			if err != nil {
				return babOutcome{}, err
			}
			return end(babCandidate, batch[0].bound)
		}
		if ctx.Err() != nil || !s.br.choose(batch, s.stopped) {
			putBack(batch)
			return pause()
		}
		for i, d := range batch {
			children := s.g.branch(d)
			if children == nil && !d.exhausted {
				// Nothing left to split: the relaxation of its worst margin
				// is exact and only the split constraints' multipliers are
				// left to converge. A long search, once, before giving up.
				was := *d
				closed, ok := s.bd.examine([]*domain{d}, []*domain{&was}, s.with(babFinalAlpha), 0)
				if !ok {
					putBack(batch[i:])
					return pause()
				}
				d.exhausted = true
				s.domains++
				if !closed[0] {
					heap.Push(open, d)
				} else {
					s.learn(d, d.root)
				}
				continue
			}
			if children == nil {
				putBack(batch[i:])
				return end(babNoSplit, d.bound)
			}
			for _, c := range children {
				c.root = rootOf(d)
				s.queued, s.parents = append(s.queued, c), append(s.parents, d)
			}
		}
	}
}
