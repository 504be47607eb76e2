package verify

import (
	"fmt"
	"strconv"

	"github.com/lenspec/lenspec/model"
)

// The verifier's IR is a DAG of operators. An architecture lowers once to a
// Net — the operators of its encoder and of one decoder step — and
// newGraph unrolls that for the steps a property needs. Every operator
// (op_*.go) keeps together its float64 evaluation, its interval rule, its
// linear relaxation (the CROWN backward rule, with its free parameters and
// their gradient for activations), its split point and branching score,
// and its MIP encoding; the driver (crown.go, alpha.go, bab.go, encode.go)
// runs them node by node and never looks inside one. A new operator is one
// file and its row in ops_test.go's rule tests.

// op is an operator of the IR.
type op interface {
	// eval is the float64 forward pass on one point: ins are the inputs'
	// values, tok the token fed back (token feedback only).
	eval(ins [][]float64, tok int) []float64
	// interval bounds the output from the inputs' bounds; allowed are the
	// tokens a token feedback can take (nil elsewhere).
	interval(ins [][]Interval, allowed []bool) []Interval
	// encode adds the operator's MIP encoding given its inputs' linear
	// expressions and returns its output's.
	encode(e *encoding, n *node, ins [][]lin) []lin
}

// linearOp is an operator whose output is an affine function of its
// inputs (a token feedback is affine in its step's one-hot): its backward
// rule is exact.
type linearOp interface {
	op
	// back moves node n's coefficients in s to its inputs (and its
	// constant term to s's constants).
	back(s *backState, n *node)
	// forward evaluates the operator on a batch of points: ins' rows are
	// the points' inputs. For the gradients of relaxation parameters s is
	// the back-substitution whose relaxed network is evaluated (the token
	// a feedback took, the line a relaxed operator took, for each row).
	forward(s *backState, n *node, ins []*block) *block
}

// activation is an element-wise nonlinear operator, relaxed by linear
// bounds. The parameter α of relax is the free lower slope where the
// relaxation has one (an unstable ReLU), which α-CROWN optimises; the
// gradient of a bound in it is the coefficient times the pre-activation
// in the relaxed network (alpha.go).
type activation interface {
	op
	// apply is the function on one value.
	apply(z float64) float64
	// outInterval bounds the output over the pre-activations iv.
	outInterval(iv Interval) Interval
	// unstable reports whether the operator is not linear over iv: its
	// relaxation is loose there and a split can help.
	unstable(iv Interval) bool
	// relax is the CROWN rule: for a coefficient c on the output, slope s
	// and constant d with c·f(z) ≤ c·s·z + d for every z in iv, using the
	// lower slope alpha where the relaxation has a free one.
	relax(c float64, iv Interval, alpha float64) (s, d float64)
	// slope is CROWN's choice of the free lower slope on iv.
	slope(iv Interval) float64
	// gradAlpha is the derivative in alpha of c·(s·z + d), relax's line
	// at the pre-activation z (0 where relax does not use alpha).
	gradAlpha(c float64, iv Interval, alpha, z float64) float64
	// splitAt is where a branch-and-bound split cuts iv in two.
	splitAt(iv Interval) float64
	// score is how much of a bound with coefficient c on the output the
	// relaxation on iv may cost: what a split can remove (branching).
	score(c float64, iv Interval) float64
}

// node is one operator application of the unrolled network.
type node struct {
	id    int
	name  string
	op    op // nil for the input
	in    []int
	width int
	// step is the decoder step whose hidden state the node computes (−1
	// in the encoder); for a token feedback, the step whose token it
	// feeds back.
	step int
	act  activation // op as an activation (nil otherwise)
	lin  linearOp   // op as a linear operator (nil otherwise)
}

// graph is a Net unrolled for decoder steps 0..K: node 0 is the input,
// nodes are in topological order, hidden[t] is the node whose output is
// h_{t+1}, the hidden state step t's logits read.
type graph struct {
	net    *Net
	nodes  []*node
	enc    int   // the encoder's last node (i₀)
	hidden []int // per step
	head   *head
	// fb[t] is the token feedback node of step t ≥ 1 (fb[0] = −1).
	fb   []int
	pool pool
}

// add appends a node and returns its id.
func (g *graph) add(name string, o op, width, step int, in ...int) int {
	n := &node{id: len(g.nodes), name: name, op: o, in: in, width: width, step: step}
	n.act, _ = o.(activation)
	n.lin, _ = o.(linearOp)
	g.nodes = append(g.nodes, n)
	return n.id
}

// Net is a model lowered for verification: the operators of its encoder,
// from the input to i₀, and of one decoder step, in float64 (every
// float32 weight is exact in float64). Lower builds it once per model;
// each property unrolls it (newGraph).
type Net struct {
	InputSize     int
	InMin, InMax  float64
	EOS           int
	Hidden, Vocab int
	encoder       []encLayer
	// One ReLU RNN step: h' = ReLU(Wih·i + Whh·h + b), with i = i₀ at
	// step 0 and emb[y] after; first is Wih with b, rec Whh with b, fb
	// the fed-back tokens' Wih·emb[y]; out gives the logits.
	first, rec *dense
	fb         *feedback
	out        *dense
}

// encLayer is an encoder layer: an affine operator and whether a ReLU
// follows.
type encLayer struct {
	name string
	op   linearOp
	out  int
	relu bool
}

// Lower converts d into a Net. Only decoders made of affine maps and
// ReLUs around a ReLU RNN (model.ReLUDecoder) are lowered today; others
// are refused with the reason.
func Lower(d model.Decoder[float64]) (*Net, error) {
	rd, ok := d.(model.ReLUDecoder)
	if !ok {
		return nil, fmt.Errorf("verify: architecture %s is not made of affine maps and ReLUs: the verifier has no bound rules for it yet", d.Config().Architecture)
	}
	emb, cell, out, err := rd.ReLURNN()
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	in := d.Input()
	if in.Kind != model.Continuous {
		return nil, fmt.Errorf("verify: %s reads %v inputs; only continuous inputs are verified", d.Config().Architecture, in.Kind)
	}
	n := &Net{InputSize: in.Size(), EOS: d.EOS(), Hidden: cell.Hidden, Vocab: d.Vocab(), InMin: in.Min, InMax: in.Max}
	for _, el := range rd.EncoderLayers() {
		switch {
		case el.Conv != nil:
			c := newConv(el.Conv.W.W.Data, el.Conv.B.W.Data, el.InShape, el.Conv.Out, el.Conv.Geom)
			n.encoder = append(n.encoder, encLayer{el.Name, c, c.outSize(), el.ReLU})
		case el.Linear != nil:
			l := newDense(el.Linear.W.W.Data, el.Linear.B.W.Data, el.Linear.In, el.Linear.Out)
			n.encoder = append(n.encoder, encLayer{el.Name, l, el.Linear.Out, el.ReLU})
		default:
			return nil, fmt.Errorf("verify: encoder layer %q has no weights", el.Name)
		}
	}
	h, e := cell.Hidden, cell.In
	b := make([]float64, h)
	for j := range b {
		b[j] = cell.Bih.W.Data[j] + cell.Bhh.W.Data[j]
	}
	n.first = newDense(cell.Wih.W.Data, b, e, h)
	n.rec = newDense(cell.Whh.W.Data, b, h, h)
	n.fb = newFeedback(cell.Wih.W.Data, emb.W.W.Data, h, e, d.Vocab())
	n.out = newDense(out.W.W.Data, out.B.W.Data, h, d.Vocab())
	return n, nil
}

// newGraph unrolls net for steps 0..K (K+1 decoder steps):
//
//	encoder:  z = A·a + b per layer, a = ReLU(z) where the layer has one
//	step 0:   h₁ = ReLU(W_ih·i₀ + b)
//	step t:   h_{t+1} = ReLU(W_hh·h_t + b + W_ih·emb[y_{t−1}])   (an add of
//	          the recurrent term and the token feedback)
//
// with the greedy head (logits, margins, argmax) on every h_{t+1}.
func newGraph(net *Net, K int) *graph {
	g := &graph{net: net, head: newHead(net), pool: pool{}}
	prev := g.add("input", nil, net.InputSize, -1)
	for _, l := range net.encoder {
		prev = g.add(l.name, l.op, l.out, -1, prev)
		if l.relu {
			prev = g.add(l.name+".relu", relu{}, l.out, -1, prev)
		}
	}
	g.enc = prev
	g.fb = append(g.fb, -1)
	for t := 0; t <= K; t++ {
		name := "h" + strconv.Itoa(t+1)
		var z int
		if t == 0 {
			z = g.add(name+".pre", net.first, net.Hidden, t, prev)
		} else {
			r := g.add(name+".rec", net.rec, net.Hidden, t, prev)
			f := g.add(name+".token", net.fb, net.Hidden, t)
			g.fb = append(g.fb, f)
			z = g.add(name+".pre", add{}, net.Hidden, t, r, f)
		}
		prev = g.add(name, relu{}, net.Hidden, t, z)
		g.hidden = append(g.hidden, prev)
	}
	return g
}

// steps is the number of decoder steps unrolled (K + 1).
func (g *graph) steps() int { return len(g.hidden) }

// activations lists the ids of the activation nodes.
func (g *graph) activations() []int {
	var out []int
	for _, n := range g.nodes {
		if n.act != nil {
			out = append(out, n.id)
		}
	}
	return out
}

// trace is one input's pass through the graph: every node's output, the
// logits of each step and the tokens fed back.
type trace struct {
	val, logits [][]float64
	tokens      []int
}

// eval runs the graph on x in float64, the IR's forward pass (tested
// against the model's). Step t ≥ 1 is fed path[t−1] for t ≤ len(path);
// without a path it decodes greedily (lowest index on ties) and stops after
// eos. It runs at most the graph's K + 1 steps.
func (g *graph) eval(x []float64, path []int) trace {
	tr := trace{val: make([][]float64, 0, len(g.nodes))}
	tr.val = append(tr.val, x)
	step := -1
	for _, n := range g.nodes[1:] {
		if n.step > step {
			// The first node of a step: the path, or the previous step's
			// token, decides whether there is one.
			if path != nil && n.step >= len(path) || path == nil && n.step > 0 && tr.tokens[n.step-1] == g.net.EOS {
				break
			}
			step = n.step
		}
		ins := make([][]float64, len(n.in))
		for k, p := range n.in {
			ins[k] = tr.val[p]
		}
		tok := -1
		if _, ok := n.op.(*feedback); ok {
			tok = tr.tokens[n.step-1]
		}
		tr.val = append(tr.val, n.op.eval(ins, tok))
		if n.step >= 0 && g.hidden[n.step] == n.id {
			o := g.head.eval(tr.val[n.id])
			tr.logits = append(tr.logits, o)
			y := -1
			if n.step < len(path) {
				y = path[n.step]
			}
			if y < 0 {
				y = argmax(o)
			}
			tr.tokens = append(tr.tokens, y)
		}
	}
	return tr
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

// tokenStart is the first node whose bounds depend on the tokens emitted
// (step 1's token feedback): a domain that fixes tokens recomputes from
// there.
func (g *graph) tokenStart() int {
	if len(g.fb) > 1 {
		return g.fb[1]
	}
	return len(g.nodes)
}

// decodesPast reports, for each input, whether its greedy decoding runs
// past the graph's last step without eos (a counterexample candidate).
func (g *graph) decodesPast(xs [][]float64) []bool {
	out := make([]bool, len(xs))
	for i, x := range xs {
		tr := g.eval(x, nil)
		out[i] = len(tr.tokens) == g.steps() && tr.tokens[len(tr.tokens)-1] != g.net.EOS
	}
	return out
}
