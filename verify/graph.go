package verify

import (
	"context"
	"math"
)

// graph is the verifier's IR: the network unrolled for decoder steps
// 0..K as a chain of nodes,
//
//	encoder:  z_L = A_L·a_{L−1} + b_L,                  a_L = act(z_L)
//	decoder:  z   = W_hh·h_t + W_ih·emb[y_{t−1}] + b,  h_{t+1} = ReLU(z)
//	          (step 0: z = W_ih·i₀ + b, i₀ the encoder's output)
//
// with a greedy head (logits, margins, argmax) on each decoder node. Every
// operator — affine (op_affine.go), activation (op_relu.go,
// op_identity.go), token feedback (op_feedback.go), head (op_head.go) —
// keeps its float64 evaluation, interval rule, CROWN backward rule and MIP
// encoding together; the graph runs them in order for each method. An
// architecture supplies its lowering (Lower, through model.ReLUDecoder).
type graph struct {
	net   *Net
	nodes []node
	enc   int // index of the encoder's last node (i₀)
	head  *head
	bufs  *buffers // back-substitution's vectors, recycled
}

// node is an affine map of the previous node's output, plus the fed-back
// token's term at decoder steps t ≥ 1, followed by an activation.
type node struct {
	name string
	step int // decoder step t, −1 in the encoder
	aff  *affine
	fb   *feedback // nil in the encoder and at step 0
	act  activation
}

// newGraph unrolls net for steps 0..K (K+1 decoder nodes).
func newGraph(net *Net, K int) *graph {
	g := &graph{net: net, head: newHead(net), bufs: &buffers{}}
	for _, l := range net.Encoder {
		var act activation = identity{}
		if l.ReLU {
			act = relu{}
		}
		g.nodes = append(g.nodes, node{name: l.Name, step: -1, aff: &affine{in: l.In, rows: l.Rows}, act: act})
	}
	g.enc = len(g.nodes) - 1
	e := len(net.Emb[0])
	fb := &feedback{}
	for z := range net.Emb {
		p := make([]float64, net.Hidden)
		for j := range p {
			for k := 0; k < e; k++ {
				p[j] += net.Wih[j][k] * net.Emb[z][k]
			}
		}
		fb.tokens = append(fb.tokens, p)
	}
	first, next := &affine{in: e}, &affine{in: net.Hidden}
	for j := 0; j < net.Hidden; j++ {
		first.rows = append(first.rows, denseRow(net.Wih[j], net.Bih[j]+net.Bhh[j]))
		next.rows = append(next.rows, denseRow(net.Whh[j], net.Bih[j]+net.Bhh[j]))
	}
	for t := 0; t <= K; t++ {
		n := node{name: "h" + itoa(t+1), step: t, aff: first, act: relu{}}
		if t > 0 {
			n.aff, n.fb = next, fb
		}
		g.nodes = append(g.nodes, n)
	}
	return g
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// hidden returns the node index of h_{t+1}, whose output feeds the logits
// of step t.
func (g *graph) hidden(t int) int { return g.enc + 1 + t }

// trace is one input's pass through the graph: every node's
// pre-activations, the logits of each step, and the tokens fed back.
type trace struct {
	pre, logits [][]float64
	tokens      []int
}

// eval runs the graph on x in float64, the IR's forward pass (tested
// against the model's). Step t ≥ 1 is fed path[t−1] for t ≤ len(path);
// without a path it decodes greedily (lowest index on ties) and stops after
// eos. It runs at most the graph's K + 1 steps.
func (g *graph) eval(x []float64, path []int) trace {
	var tr trace
	in := x
	for L := 0; L <= g.enc; L++ {
		in = g.apply(L, in, -1, &tr)
	}
	i0 := in
	var h []float64
	for t := 0; g.hidden(t) < len(g.nodes); t++ {
		if path != nil && t >= len(path) {
			break
		}
		prev := -1
		if t > 0 {
			prev = tr.tokens[t-1]
		}
		if t == 0 {
			h = g.apply(g.hidden(0), i0, -1, &tr)
		} else {
			h = g.apply(g.hidden(t), h, prev, &tr)
		}
		o := g.head.eval(h)
		tr.logits = append(tr.logits, o)
		y := path0(path, t)
		if y < 0 {
			y = argmax(o)
		}
		tr.tokens = append(tr.tokens, y)
		if path == nil && y == g.net.EOS {
			break
		}
	}
	return tr
}

// apply runs node L on its input (token: the fed-back token, −1 for none),
// recording the pre-activations.
func (g *graph) apply(L int, in []float64, token int, tr *trace) []float64 {
	n := g.nodes[L]
	z := n.aff.eval(in)
	if n.fb != nil {
		for j, v := range n.fb.eval(token) {
			z[j] += v
		}
	}
	tr.pre = append(tr.pre, z)
	out := make([]float64, len(z))
	for j, v := range z {
		out[j] = n.act.eval(v)
	}
	return out
}

func path0(path []int, t int) int {
	if t < len(path) {
		return path[t]
	}
	return -1
}

// argmax with the lowest index winning ties, as greedy decoding does.
func argmax(o []float64) int {
	best := 0
	for z, v := range o {
		if v > o[best] {
			best = z
		}
	}
	return best
}

// Bounds holds sound bounds of every quantity of the unrolled network.
type Bounds struct {
	Input []Interval
	// Pre[L] bounds the pre-activations of node L.
	Pre [][]Interval
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
	// NumUnstable counts neurons whose bounds need a binary in the MIP
	// (ReLUs whose bounds straddle 0).
	NumUnstable int
}

// MarginBound is the bounds' upper bound on M*, the max over the set of
// min over steps of the best non-eos margin: the smallest over steps of
// the largest margin an allowed token can reach (+Inf before any step).
func (b *Bounds) MarginBound() float64 {
	ub := math.Inf(1)
	for t, al := range b.Allowed {
		best := math.Inf(-1)
		for z, ok := range al {
			if ok {
				best = math.Max(best, b.Margin[t][z].Hi)
			}
		}
		ub = math.Min(ub, best)
	}
	return ub
}

// BoundMethod selects how pre-activation bounds are computed.
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
	// BoundAlphaCROWNFull also optimises the slopes for the bounds of each
	// unstable intermediate neuron (as α-CROWN's authors do), in every node
	// with at most maxAlphaNeurons of them: every later node and margin is
	// then bounded with tighter relaxations, which is where CROWN's
	// looseness compounds over the unrolled steps. Nodes with more unstable
	// neurons (the first convolutions) keep CROWN's bounds: there the cost
	// grows with their number and the gain, measured, is small.
	BoundAlphaCROWNFull BoundMethod = "alpha-crown-full"
)

// boundMethods lists the bound methods, cheapest first.
var boundMethods = []BoundMethod{BoundInterval, BoundCROWN, BoundAlphaCROWN, BoundAlphaCROWNFull}

// maxAlphaNeurons caps the unstable neurons of a node whose bounds
// BoundAlphaCROWNFull optimises, two slope searches each.
const maxAlphaNeurons = 64

// optimised reports whether the method optimises the margins' slopes.
func (m BoundMethod) optimised() bool { return m == BoundAlphaCROWN || m == BoundAlphaCROWNFull }

// computeBounds bounds the graph over the input box, node by node,
// stopping early if eos provably wins at some step. Once ctx ends, the
// neurons and margins not yet bounded get interval bounds alone: still
// sound, and the caller's time limit holds (one CROWN pass over a wide
// ball's convolutions can take seconds).
func computeBounds(ctx context.Context, g *graph, lo, hi []float64, method BoundMethod) *Bounds {
	return computeSplitBounds(ctx, g, lo, hi, method, nil, nil, nil, 0, false)
}

// empty marks b as a domain with no input: closed, nothing to bound.
func (b *Bounds) empty() *Bounds {
	b.Proven, b.Empty, b.ProvenAt = true, true, -1
	return b
}

// neuron names one pre-activation of the graph: node and index.
type neuron struct{ node, index int }

// splitSet fixes the sign of some ReLU pre-activations, a branch-and-bound
// domain: true means z ≥ 0 (active), false z ≤ 0 (inactive). The inputs
// of the box whose network satisfies every split form the domain; a
// neuron's two splits cover the box between them.
type splitSet map[neuron]bool

// tokenSet fixes the token emitted at some decoder steps (step → token), the
// other kind of domain: a counterexample emits at each step one of the
// tokens the bounds allow there, so one domain per allowed token covers
// them all.
type tokenSet map[int]int

// restrict keeps only token tok of allowed (and reports whether it was
// allowed at all).
func restrict(allowed []bool, tok int) ([]bool, bool) {
	out := make([]bool, len(allowed))
	out[tok] = allowed[tok]
	return out, allowed[tok]
}

// computeSplitBounds bounds the graph over the inputs of the box that
// satisfy splits and emit tokens at the steps it fixes: each split
// neuron's bounds are cut at 0 on its side, so that everything after it is
// bounded with it stable, and a fixed step allows only its token. With
// parent (the bounds of a domain these extend, differing only at nodes ≥
// start), nodes before start are taken from it rather than recomputed. An
// empty domain (a split against its neuron's bounds, a token the bounds do
// not allow) is Proven, with Empty set. With inherit, the intermediate
// nodes from start on are bounded by intervals intersected with the
// parent's bounds (which hold on a sub-domain) instead of by CROWN: far
// cheaper, and branch and bound's β multipliers carry the splits to the
// input anyway; the logits and margins are intersected with the parent's
// too, and the method then bounds only the margins' upper ends (measured:
// 35 % more domains a second, the lower ends being read by nothing).
// ctx's end cuts the rest to interval bounds, as in computeBounds: the
// domains of a search that may be paused and resumed are bounded under a
// context that does not end, so that they do not depend on when it was.
func computeSplitBounds(ctx context.Context, g *graph, lo, hi []float64, method BoundMethod, splits splitSet, tokens tokenSet, parent *Bounds, start int, inherit bool) *Bounds {
	b := &Bounds{Method: string(method)}
	if parent == nil {
		start = 0
		for i := range lo {
			b.Input = append(b.Input, Interval{lo[i], hi[i]})
		}
	} else {
		b.Input = parent.Input
		b.Pre = parent.Pre[:start:start]
		for L, pre := range b.Pre {
			b.NumUnstable += g.unstable(L, pre)
		}
		for t := range parent.Logits {
			if g.hidden(t) >= start {
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
	crown := method != BoundInterval
	inheriting := inherit && parent != nil
	out := b.Input // bounds of the previous node's output
	if start > 0 {
		out = make([]Interval, len(b.Pre[start-1]))
		for j, iv := range b.Pre[start-1] {
			out[j] = g.nodes[start-1].act.interval(iv)
		}
	}
	for L := start; L < len(g.nodes); L++ {
		n := g.nodes[L]
		var allowed []bool
		if n.fb != nil {
			allowed = b.Allowed[n.step-1]
		}
		pre := make([]Interval, len(n.aff.rows))
		for j := range pre {
			iv := n.aff.interval(out, j)
			if n.fb != nil {
				tl, th := n.fb.interval(j, allowed)
				iv = Interval{iv.Lo + tl, iv.Hi + th}
			}
			switch {
			case inheriting:
				iv = intersect(iv, parent.Pre[L][j])
			case crown && L > 0 && ctx.Err() == nil: // cut: intervals alone
				iv = intersect(iv, g.crownNeuron(b, L, j))
			}
			if active, ok := splits[neuron{L, j}]; ok {
				if active {
					iv.Lo = math.Max(iv.Lo, 0)
				} else {
					iv.Hi = math.Min(iv.Hi, 0)
				}
				if iv.Lo > iv.Hi {
					return b.empty()
				}
			}
			pre[j] = iv
		}
		if method == BoundAlphaCROWNFull && L > 0 && !inheriting && !g.tightenNode(ctx, b, L, pre) {
			return b.empty()
		}
		b.Pre = append(b.Pre, pre)
		out = make([]Interval, len(pre))
		for j, iv := range pre {
			out[j] = n.act.interval(iv)
		}
		b.NumUnstable += g.unstable(L, pre)
		if n.step < 0 {
			continue
		}
		var within *stepBounds
		if inheriting && n.step < len(parent.Margin) {
			within = &stepBounds{parent.Logits[n.step], parent.Margin[n.step]}
		}
		live := ctx.Err() == nil
		logits, margin, al, any, empty := g.head.bound(g, b, L, out, crown && live, method.optimised() && live, within)
		if empty {
			return b.empty()
		}
		if tok, ok := tokens[n.step]; ok && any {
			if al, any = restrict(al, tok); !any {
				return b.empty()
			}
		}
		b.Logits = append(b.Logits, logits)
		b.Margin = append(b.Margin, margin)
		b.Allowed = append(b.Allowed, al)
		if !any {
			b.Proven, b.ProvenAt = true, n.step
			return b
		}
	}
	return b
}

// crownNeuron bounds pre-activation j of node L by back-substitution.
func (g *graph) crownNeuron(b *Bounds, L, j int) Interval {
	return g.withToken(b, L, j, g.crownLinear(b, L-1, g.nodes[L].aff.rows[j]))
}

// withToken adds to iv, a bound of node L's affine term j, the range of
// its fed-back token's term (none in the encoder and at step 0).
func (g *graph) withToken(b *Bounds, L, j int, iv Interval) Interval {
	n := g.nodes[L]
	if n.fb == nil {
		return iv
	}
	tl, th := n.fb.interval(j, b.Allowed[n.step-1])
	return Interval{iv.Lo + tl, iv.Hi + th}
}

// tightenNode intersects the bounds pre of node L's unstable neurons with
// α-CROWN's (alphaNeuron), when there are at most maxAlphaNeurons of them
// and until ctx ends. It reports false when a bound crosses its other end:
// a split domain with no input.
func (g *graph) tightenNode(ctx context.Context, b *Bounds, L int, pre []Interval) bool {
	if g.unstable(L, pre) > maxAlphaNeurons {
		return true
	}
	act := g.nodes[L].act
	for j, iv := range pre {
		if !act.unstable(iv) || ctx.Err() != nil {
			continue
		}
		if pre[j] = intersect(iv, g.alphaNeuron(b, L, j)); pre[j].Lo > pre[j].Hi {
			return false
		}
	}
	return true
}

// unstable counts node L's neurons whose bounds pre leave them unstable.
func (g *graph) unstable(L int, pre []Interval) int {
	n := 0
	for _, iv := range pre {
		if g.nodes[L].act.unstable(iv) {
			n++
		}
	}
	return n
}

// alphaStart is the first node whose BoundAlphaCROWNFull bounds can differ
// from those in b, CROWN's (or α-CROWN's) bounds of the same box: before it
// no node has 1..maxAlphaNeurons unstable neurons and no step has margins,
// so a tightening of b can reuse those nodes instead of bounding them
// again (the convolutions' CROWN bounds are most of the cost).
func (g *graph) alphaStart(b *Bounds) int {
	end := min(len(b.Pre), g.hidden(0))
	for L := 1; L < end; L++ {
		if n := g.unstable(L, b.Pre[L]); n > 0 && n <= maxAlphaNeurons {
			return L
		}
	}
	return end
}

// alphaNeuron bounds pre-activation j of node L by α-CROWN: each end by its
// own slope search, both starting from CROWN's slopes.
func (g *graph) alphaNeuron(b *Bounds, L, j int) Interval {
	r := g.nodes[L].aff.rows[j]
	return g.withToken(b, L, j, Interval{-g.alphaUpper(b, L-1, r.neg(), defaultAlpha), g.alphaUpper(b, L-1, r, defaultAlpha)})
}

// crownLinear bounds a linear function r of node L's output (L = −1: of
// the input).
func (g *graph) crownLinear(b *Bounds, L int, r Row) Interval {
	return Interval{-g.crownUpper(b, L, r.neg()), g.crownUpper(b, L, r)}
}

// crownUpper is the upper end of crownLinear alone.
func (g *graph) crownUpper(b *Bounds, L int, r Row) float64 {
	return g.upper(b, L, r.dense(g.width(b, L)), r.B)
}

// width is the size of node L's output (L = −1: the input's).
func (g *graph) width(b *Bounds, L int) int {
	if L < 0 {
		return len(b.Input)
	}
	return len(g.nodes[L].aff.rows)
}

// upper returns a sound upper bound of c·a_L + k over the input box, where
// a_L is node L's output (L = −1: the input itself). c is overwritten.
func (g *graph) upper(b *Bounds, L int, c []float64, k float64) float64 {
	xc, k, abs, absc := g.back(b, L, c, k, nil, nil)
	return concretize(b, xc, k, abs, absc, nil)
}

// concretize is the largest value of xc·x + k over the input box, padded
// for rounding (abs and absc: the absolute values of the terms so far;
// absc nil: not padded, for an unpadded back-substitution).
// If xs is not nil it receives the vertex that attains it.
func concretize(b *Bounds, xc []float64, k, abs float64, absc, xs []float64) float64 {
	for i, ci := range xc {
		iv := b.Input[i]
		v := iv.Lo
		if ci >= 0 {
			v = iv.Hi
		}
		k += ci * v
		if xs != nil {
			xs[i] = v
		}
		if absc != nil {
			abs += absc[i] * math.Max(math.Abs(iv.Lo), math.Abs(iv.Hi))
		}
	}
	if absc == nil {
		return k // unpadded: an optimiser's iterate, not a bound
	}
	return k + relPad*abs + absPad
}

// linearUpper returns coefficients w and constant k with c·a_L + k₀ ≤ w·x + k
// for every input x of the box: CROWN's linear upper bound, its constant
// padded for rounding (the padding assumes |x| ≤ max(|lo|, |hi|)).
func (g *graph) linearUpper(b *Bounds, L int, c []float64, k float64) ([]float64, float64) {
	xc, k, abs, absc := g.back(b, L, c, k, nil, nil)
	for i := range xc {
		iv := b.Input[i]
		abs += absc[i] * math.Max(math.Abs(iv.Lo), math.Abs(iv.Hi))
	}
	return xc, k + relPad*abs + absPad
}

// back back-substitutes c·a_L + k to the input, applying each node's
// operators' backward rules in turn (activation, token feedback, affine):
// it returns coefficients over x, the constant, the absolute sum of the
// constant's terms and the absolute coefficients (for rounding allowances).
// rx, if set, holds α-CROWN's lower slopes and β-CROWN's split
// multipliers; rec, if set, records what their gradient needs.
func (g *graph) back(b *Bounds, L int, c []float64, k float64, rx *relaxation, rec *backRecord) (xc []float64, kk, abs float64, absc []float64) {
	abs = math.Abs(k)
	if rx == nil || !rx.unpadded {
		absc = make([]float64, len(c))
		for i, v := range c {
			absc[i] = math.Abs(v)
		}
	}
	owned := false
	for ; L >= 0; L-- {
		n := g.nodes[L]
		if rec != nil {
			rec.coef[L] = append([]float64(nil), c...)
			rec.slope[L] = make([]float64, len(c))
			rec.shift[L] = make([]float64, len(c))
		}
		any := false
		for i, ci := range c {
			if ci == 0 {
				continue
			}
			iv := b.Pre[L][i]
			alpha := math.NaN()
			if rx != nil && rx.alpha != nil && rx.alpha[L] != nil {
				alpha = rx.alpha[L][i]
			} else {
				alpha = n.act.slope(iv)
			}
			s, d := n.act.relax(ci, iv, alpha)
			if rec != nil {
				rec.slope[L][i], rec.shift[L][i] = s, d/ci
			}
			c[i] = ci * s
			if absc != nil {
				absc[i] *= math.Abs(s)
			}
			k += d
			abs += math.Abs(d)
			any = any || c[i] != 0
		}
		if rx != nil && rx.beta != nil && rx.beta[L] != nil {
			// β-CROWN: + β·z for a split z ≥ 0, − β·z for z ≤ 0 (signed in
			// beta), which is ≥ 0 on the domain and so keeps the bound.
			for i, bv := range rx.beta[L] {
				if bv != 0 {
					c[i] += bv
					if absc != nil {
						absc[i] += math.Abs(bv)
					}
					any = true
				}
			}
		}
		var best, bestAbs float64
		if n.fb != nil && any {
			var tok int
			best, bestAbs, tok = n.fb.back(c, b.Allowed[n.step-1])
			if rec != nil {
				rec.token[L] = tok
			}
		}
		nc, nabs, k2, abs2 := n.aff.back(c, absc, k, abs, g.bufs)
		if owned { // the caller's c and absc are not ours to recycle
			g.bufs.put(c)
			g.bufs.put(absc)
		}
		c, absc, k, abs, owned = nc, nabs, k2, abs2, true
		// The token term's constant goes in after the biases: the order
		// the sums were always taken in, so bounds stay bit-identical.
		k += best
		abs += bestAbs
	}
	return c, k, abs, absc
}
