package verify

import "math"

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
	g := &graph{net: net, head: newHead(net)}
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
	Method   string
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
)

// computeBounds bounds the graph over the input box, node by node,
// stopping early if eos provably wins at some step.
func computeBounds(g *graph, lo, hi []float64, method BoundMethod) *Bounds {
	b := &Bounds{Method: string(method)}
	for i := range lo {
		b.Input = append(b.Input, Interval{lo[i], hi[i]})
	}
	crown := method == BoundCROWN || method == BoundAlphaCROWN
	out := b.Input // bounds of the previous node's output
	for L, n := range g.nodes {
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
			if crown && L > 0 {
				iv = intersect(iv, g.crownNeuron(b, L, j))
			}
			pre[j] = iv
		}
		b.Pre = append(b.Pre, pre)
		out = make([]Interval, len(pre))
		for j, iv := range pre {
			out[j] = n.act.interval(iv)
			if n.act.unstable(iv) {
				b.NumUnstable++
			}
		}
		if n.step < 0 {
			continue
		}
		logits, margin, al, any := g.head.bound(g, b, L, out, crown, method == BoundAlphaCROWN)
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
	n := g.nodes[L]
	iv := g.crownLinear(b, L-1, n.aff.rows[j])
	if n.fb != nil {
		tl, th := n.fb.interval(j, b.Allowed[n.step-1])
		iv = Interval{iv.Lo + tl, iv.Hi + th}
	}
	return iv
}

// crownLinear bounds a linear function r of node L's output (L = −1: of
// the input).
func (g *graph) crownLinear(b *Bounds, L int, r Row) Interval {
	c := r.dense(g.width(b, L))
	up := g.upper(b, L, append([]float64(nil), c...), r.B)
	for i := range c {
		c[i] = -c[i]
	}
	return Interval{-g.upper(b, L, c, -r.B), up}
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
// for rounding (abs and absc: the absolute values of the terms so far).
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
		abs += absc[i] * math.Max(math.Abs(iv.Lo), math.Abs(iv.Hi))
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
// al, if set, holds α-CROWN's lower slopes per node and neuron (nil rows:
// CROWN's choice); rec, if set, records what the gradient in α needs.
func (g *graph) back(b *Bounds, L int, c []float64, k float64, al [][]float64, rec *backRecord) (xc []float64, kk, abs float64, absc []float64) {
	abs = math.Abs(k)
	absc = make([]float64, len(c))
	for i, v := range c {
		absc[i] = math.Abs(v)
	}
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
			if al != nil && al[L] != nil {
				alpha = al[L][i]
			} else {
				alpha = n.act.slope(iv)
			}
			s, d := n.act.relax(ci, iv, alpha)
			if rec != nil {
				rec.slope[L][i], rec.shift[L][i] = s, d/ci
			}
			c[i] = ci * s
			absc[i] *= math.Abs(s)
			k += d
			abs += math.Abs(d)
			any = any || c[i] != 0
		}
		var best, bestAbs float64
		if n.fb != nil && any {
			var tok int
			best, bestAbs, tok = n.fb.back(c, b.Allowed[n.step-1])
			if rec != nil {
				rec.token[L] = tok
			}
		}
		c, absc, k, abs = n.aff.back(c, absc, k, abs)
		// The token term's constant goes in after the biases: the order
		// the sums were always taken in, so bounds stay bit-identical.
		k += best
		abs += bestAbs
	}
	return c, k, abs, absc
}
