package verify

// The verifier's IR is a DAG of operators: a model lowers once into a Net
// (lower.go) and newGraph unrolls it for the steps a property needs. The
// operators' contract is in op.go; each operator (op_*.go) keeps together
// its evaluation, interval rule, relaxation with its free parameters,
// split point and branching score, and MIP encoding, and the driver
// (crown.go, alpha.go, bab.go, encode.go) runs them through that contract.

// node is one operator application of the unrolled network.
type node struct {
	id    int
	name  string
	op    op // nil for the input
	in    []int
	width int
	// step is the decoder step the node computes (−1 in the encoder);
	// token the step whose emitted token the node reads (−1: none).
	step, token int
	act         activation // op as an activation (nil otherwise)
	lin         backOp     // op with a backward rule of its own (nil otherwise)
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
	// fb[t] is the first node of step t that reads a token (−1: none).
	fb   []int
	pool pool
}

// add appends a node and returns its id.
func (g *graph) add(name string, o op, width, step int, in ...int) int {
	n := &node{id: len(g.nodes), name: name, op: o, in: in, width: width, step: step, token: -1}
	n.act, _ = o.(activation)
	n.lin, _ = o.(backOp)
	g.nodes = append(g.nodes, n)
	return n.id
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
		if n.token >= 0 {
			tok = tr.tokens[n.token]
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
func (g *graph) tokenStart() int { return g.tokenNode(1) }

// tokenNode is the first node of step t or later that reads a token
// (len(g.nodes): none).
func (g *graph) tokenNode(t int) int {
	for ; t < len(g.fb); t++ {
		if g.fb[t] >= 0 {
			return g.fb[t]
		}
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
