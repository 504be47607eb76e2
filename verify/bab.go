package verify

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// Branch and bound over ReLU splits and tokens (the engine of α,β-CROWN,
// with the decoder's tokens as a second kind of split): a domain fixes the
// sign of some unstable ReLUs' pre-activations and the token of some steps;
// its bounds are the graph's bounds with those neurons cut at 0 and those
// steps restricted to their token (computeSplitBounds), and its worst
// margins are bounded by α,β-CROWN, whose multipliers carry the splits back
// to the input. A domain is closed when every margin of its worst step is
// below 0 (eos wins there for all its inputs) or its bounds show it empty;
// the property holds when every domain is closed, since a neuron's two
// splits, and a step's allowed tokens, cover every counterexample of their
// parent. The open domain with the largest margin bound is split next, on
// the neuron whose relaxation costs that margin most (a BaBSR-style score),
// or on tokens once no neuron is left. Each domain's maximising vertex is
// decoded as a counterexample candidate; nothing is claimed on it before
// the float64 replay.

// domain is one open branch-and-bound domain with its bounds and what
// bounding it found: the margin bound that orders the frontier, the
// neuron to split next (ok false: no unstable neuron left to split) and
// the box vertex that maximises its worst margin.
type domain struct {
	splits splitSet
	tokens tokenSet
	b      *Bounds
	bound  float64
	next   neuron
	ok     bool
	vertex []float64
	// rx is where the slope and multiplier search of the domain's worst
	// margin ended: its children's searches start there.
	rx    *relaxation
	fixed int // the step whose token this domain fixed last (children of a token branch)
	// step and token are the worst margin's; cands the neurons with the
	// best branching scores, best first (next is the first).
	step, token int
	cands       []neuron
}

// fsbCandidates is how many of the best-scored neurons chooseSplit tries.
const fsbCandidates = 16

// branch returns d's children: its two ReLU splits on d.next, or, with no
// ReLU left to split, one domain per token allowed at the earliest step
// whose token is not fixed yet and has a choice; nil when neither is left.
func (g *graph) branch(d *domain) []*domain {
	if d.ok {
		var out []*domain
		for _, active := range []bool{true, false} {
			s := maps.Clone(d.splits)
			s[d.next] = active
			out = append(out, &domain{splits: s, tokens: d.tokens})
		}
		return out
	}
	for t, al := range d.b.Allowed {
		if _, fixed := d.tokens[t]; fixed || g.hidden(t+1) >= len(g.nodes) {
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
				out = append(out, &domain{splits: d.splits, tokens: tk, fixed: t})
			}
		}
		if len(out) > 1 {
			return out
		}
	}
	return nil
}

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

// worstMargin is the step and token of a domain's margin bound (the step
// whose best allowed margin is smallest, and that token): the objective
// the domain must be split for.
func worstMargin(b *Bounds) (step, token int) {
	ub := math.Inf(1)
	step, token = -1, -1
	for t, al := range b.Allowed {
		best, bz := math.Inf(-1), -1
		for z, ok := range al {
			if ok && b.Margin[t][z].Hi > best {
				best, bz = b.Margin[t][z].Hi, z
			}
		}
		if best < ub {
			ub, step, token = best, t, bz
		}
	}
	return step, token
}

// examine bounds d's worst step by α,β-CROWN, every token allowed there,
// and reports whether that closes the domain (every such margin below 0).
// Otherwise it fills d's bound (the largest of those margins), the
// candidate vertex that attains it, and the neuron to split: the unstable
// ReLU with the largest |c|·(−l·u/(u−l)) in CROWN's bound of that margin,
// its coefficient times the height of its triangle relaxation, the most its
// split can remove from the bound (BaBSR's intercept score).
func (g *graph) examine(d *domain, init *relaxation, opt alphaOptions) (closed bool) {
	b := d.b
	t, _ := worstMargin(b)
	L := g.hidden(t)
	d.bound, d.vertex = math.Inf(-1), nil
	z := -1
	for tok, ok := range b.Allowed[t] {
		if !ok {
			continue
		}
		ub, x, rx := g.optimisedUpper(b, L, g.head.margin[tok], d.splits, init, opt)
		if ub > d.bound {
			d.bound, d.vertex, d.rx, z = ub, x, rx, tok
		}
	}
	if d.bound < 0 {
		return true
	}
	d.bound = math.Min(d.bound, b.MarginBound())
	d.step, d.token = t, z
	rec := newBackRecord(L + 1)
	r := g.head.margin[z]
	g.back(b, L, r.dense(g.width(b, L)), r.B, nil, rec)
	type scored struct {
		nu    neuron
		score float64
	}
	var all []scored
	for l := 0; l <= L; l++ {
		for i, c := range rec.coef[l] {
			iv := b.Pre[l][i]
			if c == 0 || !g.nodes[l].act.unstable(iv) {
				continue
			}
			if s := math.Abs(c) * (-iv.Lo * iv.Hi / (iv.Hi - iv.Lo)); s > 0 {
				all = append(all, scored{neuron{l, i}, s})
			}
		}
	}
	slices.SortStableFunc(all, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	d.cands = nil
	for _, c := range all[:min(len(all), fsbCandidates)] {
		d.cands = append(d.cands, c.nu)
	}
	d.ok = len(d.cands) > 0
	if d.ok {
		d.next = d.cands[0]
	}
	return false
}

// chooseSplit picks d.next among d.cands as filtered smart branching does
// (De Palma et al., 2021): each candidate's two children are bounded
// cheaply — the nodes after the split by intervals within d's bounds, then
// d's worst margin by one back-substitution with d's slopes and
// multipliers — and the neuron whose worse child is lowest is split. The
// intercept score alone ranks by what the split removes from d's own
// relaxation, not by what its children can prove.
func (g *graph) chooseSplit(d *domain, lo, hi []float64) {
	if len(d.cands) < 2 || d.rx == nil {
		return
	}
	L := g.hidden(d.step)
	r := g.head.margin[d.token]
	rx := &relaxation{alpha: d.rx.alpha, beta: d.rx.beta, unpadded: true}
	best := math.Inf(1)
	for _, nu := range d.cands {
		worst := math.Inf(-1)
		for _, active := range []bool{true, false} {
			s := maps.Clone(d.splits)
			s[nu] = active
			cb := computeSplitBounds(context.Background(), g, lo, hi, BoundInterval, s, d.tokens, d.b, nu.node, true)
			if cb.Proven {
				continue
			}
			xc, k, _, _ := g.back(cb, L, r.dense(g.width(cb, L)), r.B, rx, nil)
			worst = math.Max(worst, concretize(cb, xc, k, 0, nil, nil))
		}
		if worst < best {
			best, d.next = worst, nu
		}
	}
}

// babPhase runs search (a branch and bound begun on the root bounds, or
// resumed where an earlier phase left it) until every domain is closed
// (robust), a candidate replays (vulnerable), a domain is left with
// nothing to split, or ctx ends. It logs itself as the phase "bab" (Nodes:
// domains bounded; Bound: the largest open margin bound).
func babPhase(ctx context.Context, search *babSearch, res *Result) (done bool, err error) {
	ph := Phase{Name: "bab", Status: "time limit"}
	start := time.Now()
	defer func() {
		ph.Seconds = time.Since(start).Seconds()
		res.Phases = append(res.Phases, ph)
	}()
	before := search.domains
	out, err := search.run(ctx)
	ph.Nodes = out.domains - before
	if err != nil {
		return false, err
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
		return true, nil
	case babCandidate:
		ph.Status = "candidate"
		return true, nil
	case babNoSplit:
		ph.Status = "no split left"
		res.Reason = fmt.Sprintf("branch and bound: a domain with every ReLU on its worst margin split and every token fixed stays open (margin ≤ %.3g)", out.bound)
	default:
		// Closed domains have no counterexample: the open ones' largest
		// margin bound bounds M* over the whole box.
		res.Bound = math.Min(res.Bound, out.bound)
		res.Reason = fmt.Sprintf("time limit in branch and bound: %d domains open, margin ≤ %.3g", out.open, out.bound)
	}
	return false, nil
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
	lo, hi    []float64
	opt       Options
	roots     []*domain // not examined yet
	open      frontier
	tried     map[string]bool
	candidate func([]float64) (bool, error)
	domains   int64
	final     *babOutcome // set once the search has ended for good
	// parent is the domain last split and queued its children not bounded
	// yet: a search paused between them resumes with the rest, so no child
	// is bounded twice and the parent is not split again.
	parent *domain
	queued []*domain
}

// newBaB starts a search over roots; candidate replays a vertex.
func (g *graph) newBaB(lo, hi []float64, opt Options, roots []*domain, candidate func([]float64) (bool, error)) *babSearch {
	return &babSearch{g: g, lo: lo, hi: hi, opt: opt, roots: roots, tried: map[string]bool{}, candidate: candidate}
}

// try decodes d's maximising vertex and, if it runs past the property's
// last step without eos, replays it.
func (s *babSearch) try(d *domain) (bool, error) {
	g, x := s.g, d.vertex
	key := fmt.Sprint(x)
	if s.tried[key] {
		return false, nil
	}
	s.tried[key] = true
	tr := g.eval(x, nil)
	for _, y := range tr.tokens {
		if y == g.net.EOS {
			return false, nil
		}
	}
	if len(tr.tokens) <= g.nodes[len(g.nodes)-1].step {
		return false, nil
	}
	return s.candidate(append([]float64(nil), x...))
}

// run continues the search until every domain is closed, a domain's
// vertex replays, a domain has nothing left to split, or ctx ends.
func (s *babSearch) run(ctx context.Context) (babOutcome, error) {
	if s.final != nil {
		return *s.final, nil
	}
	g, open := s.g, &s.open
	// A domain's bounds are never cut (computeSplitBounds): a paused search
	// resumes with the bounds it would have had.
	uncut := context.WithoutCancel(ctx)
	end := func(st babStatus, bound float64) (babOutcome, error) {
		s.final = &babOutcome{status: st, bound: bound, open: open.Len(), domains: s.domains}
		return *s.final, nil
	}
	// pause leaves the search resumable: ctx ended with domains open. The
	// queued children are open with at most their parent's bound.
	pause := func() (babOutcome, error) {
		bound := math.Inf(1)
		if open.Len() > 0 && len(s.roots) == 0 {
			bound = (*open)[0].bound
		}
		if len(s.queued) > 0 {
			bound = math.Max(bound, s.parent.bound)
		}
		return babOutcome{bound: bound, open: open.Len() + len(s.queued) + len(s.roots), domains: s.domains}, nil
	}
	for len(s.roots) > 0 {
		if ctx.Err() != nil {
			return pause()
		}
		r := s.roots[0]
		s.roots = s.roots[1:]
		if !r.b.Proven && !g.examine(r, nil, babAlpha) {
			heap.Push(open, r)
		}
	}
	for {
		for len(s.queued) > 0 {
			if ctx.Err() != nil {
				return pause()
			}
			d, c := s.parent, s.queued[0]
			s.queued = s.queued[1:]
			start := d.next.node
			if !d.ok {
				start = g.hidden(c.fixed + 1)
			}
			c.b = computeSplitBounds(uncut, g, s.lo, s.hi, s.opt.Bounds, c.splits, c.tokens, d.b, start, true)
			s.domains++
			if !c.b.Proven && !g.examine(c, d.rx, babChildAlpha) {
				heap.Push(open, c)
			}
		}
		s.parent = nil
		if open.Len() == 0 {
			return end(babProven, math.Inf(1))
		}
		top := (*open)[0]
		if ok, err := s.try(top); err != nil {
			return babOutcome{}, err
		} else if ok {
			return end(babCandidate, top.bound)
		}
		if ctx.Err() != nil {
			return pause()
		}
		d := heap.Pop(open).(*domain)
		if d.ok {
			g.chooseSplit(d, s.lo, s.hi)
		}
		children := g.branch(d)
		if children == nil {
			heap.Push(open, d)
			return end(babNoSplit, d.bound)
		}
		s.parent, s.queued = d, children
	}
}
