package verify

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nn"
)

// Lowering. An architecture describes itself (model.Lowerer) through an
// nn.Builder: its encoder once, its first decoder step and a later
// decoder step, each recorded as a template of operator applications
// whose inputs are nodes of the same template or placeholders (the input,
// a named state). A property's graph unrolls the templates: the encoder,
// the first step on the encoder's state, then the later step again and
// again, each on the state the step before wrote. A state may grow (a
// cache of every token emitted so far, appended to by Concat): a later
// step is then recorded anew for each step, on the widths the step before
// wrote, so step t's graph reads its t cached entries; the unrolling and
// the driver see only operators.

// Net is a model lowered for verification: its encoder and decoder step
// as templates of operators in float64 (every float32 weight is exact in
// float64), and its output layer. Lower builds it once per model; each
// property unrolls it (newGraph).
type Net struct {
	InputSize    int
	InMin, InMax float64
	EOS, Vocab   int
	enc, first   *template
	// later[k] is decoder step k+1's template; when fixed, the last
	// serves every step after it too. lw records more as unrollings need
	// them (stepTemplate), under mu.
	mu    sync.Mutex
	later []*template
	fixed bool
	lw    model.Lowerer
	arch  string
	// outW, outB are the output layer, logits = outW·h + outB over the
	// step's output h, width wide.
	outW, outB []float64
	width      int
}

// tnode is an operator application of a template. A placeholder (op nil)
// stands for the input or a state the template reads.
type tnode struct {
	name  string
	op    op
	in    []int // template nodes
	width int
	state string // a placeholder's state ("" for the input)
	token bool   // reads the token the step before emitted
}

// template is one recorded part of a lowering.
type template struct {
	nodes []tnode
	// out is the node the output layer reads (steps); next the state each
	// name is written by.
	out  int
	next map[string]int
}

// recorder implements nn.Builder, recording into a template. Values are
// template nodes + 1 (the zero Value is none).
type recorder struct {
	t      *template
	tokens bool // Token is allowed: a decoder step after the first
	err    error
	names  map[string]bool
}

func (r *recorder) fail(format string, args ...any) nn.Value {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
	return nn.Value{}
}

// placeholder adds a node standing for the input or state name.
func (r *recorder) placeholder(state string, width int) nn.Value {
	r.t.nodes = append(r.t.nodes, tnode{name: state, width: width, state: state})
	return nn.Value{ID: len(r.t.nodes), Width: width}
}

// node records an operator over xs, each of which must be a value of
// this template (and as wide as want, where want ≥ 0).
func (r *recorder) node(name string, o op, width int, want int, xs ...nn.Value) nn.Value {
	if r.err != nil {
		return nn.Value{}
	}
	if r.names[name] {
		return r.fail("lowering: operator name %q used twice", name)
	}
	in := make([]int, len(xs))
	for k, x := range xs {
		if x.ID < 1 || x.ID > len(r.t.nodes) || r.t.nodes[x.ID-1].width != x.Width {
			return r.fail("lowering: %s reads a vector that is not of this graph", name)
		}
		if want >= 0 && x.Width != want {
			return r.fail("lowering: %s reads a vector of width %d, want %d", name, x.Width, want)
		}
		in[k] = x.ID - 1
	}
	if width <= 0 {
		return r.fail("lowering: %s has width %d", name, width)
	}
	r.names[name] = true
	r.t.nodes = append(r.t.nodes, tnode{name: name, op: o, in: in, width: width})
	return nn.Value{ID: len(r.t.nodes), Width: width}
}

// Dense records W·x + b. Over a token fed back (or a constant) it records
// the token's term instead, W·table[y] + b for every token y (W·v + b): the
// verifier ranges over the tokens, not over a box around their
// embeddings.
func (r *recorder) Dense(name string, x nn.Value, w, b nn.Tensor, out int) nn.Value {
	wv, bv := w.Float64s(), floats(b)
	if out <= 0 || len(wv) != out*x.Width || bv != nil && len(bv) != out {
		return r.fail("lowering: %s: weight of %d values and bias of %d for %d×%d", name, len(wv), len(bv), out, x.Width)
	}
	if r.err == nil && x.ID >= 1 && x.ID <= len(r.t.nodes) {
		switch o := r.t.nodes[x.ID-1].op.(type) {
		case *feedback:
			return r.token(name, affineRows(wv, bv, out, o.tokens))
		case constant:
			return r.node(name, constant{v: affineRows(wv, bv, out, [][]float64{o.v})[0]}, out, -1)
		}
	}
	return r.node(name, newDense(wv, bv, x.Width, out), out, -1, x)
}

// floats is t's values, nil for no tensor.
func floats(t nn.Tensor) []float64 {
	if t == nil {
		return nil
	}
	return t.Float64s()
}

// affineRows returns W·v + b (b nil: none) for every row v of rows, W
// [out × len(v)] row-major.
func affineRows(w, b []float64, out int, rows [][]float64) [][]float64 {
	res := make([][]float64, len(rows))
	for z, v := range rows {
		p := make([]float64, out)
		for j := range p {
			for k, x := range v {
				p[j] += w[j*len(v)+k] * x
			}
			if b != nil {
				p[j] += b[j]
			}
		}
		res[z] = p
	}
	return res
}

// Conv records a convolution of x shaped in.
func (r *recorder) Conv(name string, x nn.Value, w, b nn.Tensor, in [3]int, out int, g ad.ConvGeom) nn.Value {
	wv, bv := w.Float64s(), floats(b)
	if in[0]*in[1]*in[2] != x.Width || out <= 0 || len(wv) != out*in[0]*g.Kernel*g.Kernel || len(bv) != out || g.Kernel <= 0 || g.Stride <= 0 {
		return r.fail("lowering: %s: convolution of %v into %d channels does not fit its weights or input", name, in, out)
	}
	c := newConv(wv, bv, in[:], out, g)
	return r.node(name, c, c.outSize(), -1, x)
}

// Add records the element-wise sum. A constant added to one other term
// (a bias) joins that term's own constant when it is a Dense, a token's
// term or a constant.
func (r *recorder) Add(name string, xs ...nn.Value) nn.Value {
	if len(xs) == 0 {
		return r.fail("lowering: %s adds nothing", name)
	}
	if len(xs) == 2 && r.err == nil {
		for k, x := range xs {
			c, ok := r.op(x).(constant)
			if !ok || x.Width != xs[1-k].Width {
				continue
			}
			switch o := r.op(xs[1-k]).(type) {
			case *dense:
				return r.node(name, newDense(o.w, plus(o.b, c.v), o.in, o.out), o.out, -1, r.inputs(xs[1-k])...)
			case *feedback:
				rows := make([][]float64, len(o.tokens))
				for z, row := range o.tokens {
					rows[z] = plus(row, c.v)
				}
				return r.token(name, rows)
			case constant:
				return r.node(name, constant{v: plus(o.v, c.v)}, len(c.v), -1)
			}
		}
	}
	return r.node(name, add{}, xs[0].Width, xs[0].Width, xs...)
}

// op is the operator recorded for x (nil for a placeholder or a value not
// of this template).
func (r *recorder) op(x nn.Value) op {
	if x.ID < 1 || x.ID > len(r.t.nodes) {
		return nil
	}
	return r.t.nodes[x.ID-1].op
}

// inputs are the values x's operator reads.
func (r *recorder) inputs(x nn.Value) []nn.Value {
	var out []nn.Value
	for _, p := range r.t.nodes[x.ID-1].in {
		out = append(out, nn.Value{ID: p + 1, Width: r.t.nodes[p].width})
	}
	return out
}

// plus is a + b element-wise, in a new slice.
func plus(a, b []float64) []float64 {
	out := slices.Clone(a)
	for j, v := range b {
		out[j] += v
	}
	return out
}

// Sub records x − y.
func (r *recorder) Sub(name string, x, y nn.Value) nn.Value {
	return r.node(name, add{w: []float64{1, -1}}, x.Width, x.Width, x, y)
}

// Mul records x ⊙ y.
func (r *recorder) Mul(name string, x, y nn.Value) nn.Value {
	return r.node(name, mul{}, x.Width, x.Width, x, y)
}

// activations maps nn's names to the operators.
var activations = map[nn.Activation]activation{nn.ReLU: relu{}, nn.Sigmoid: newSigmoid(), nn.Tanh: newTanh()}

// Act records an activation.
func (r *recorder) Act(name string, a nn.Activation, x nn.Value) nn.Value {
	op, ok := activations[a]
	if !ok {
		return r.fail("lowering: %s: the verifier has no rules for activation %q", name, a)
	}
	return r.node(name, op, x.Width, -1, x)
}

// Concat records xs laid end to end.
func (r *recorder) Concat(name string, xs ...nn.Value) nn.Value {
	if len(xs) == 0 {
		return r.fail("lowering: %s concatenates nothing", name)
	}
	c := concat{widths: make([]int, len(xs))}
	width := 0
	for k, x := range xs {
		c.widths[k] = x.Width
		width += x.Width
	}
	return r.node(name, c, width, -1, xs...)
}

// Slice records x[from:to].
func (r *recorder) Slice(name string, x nn.Value, from, to int) nn.Value {
	if from < 0 || to > x.Width || from >= to {
		return r.fail("lowering: %s: slice [%d:%d] of a vector of width %d", name, from, to, x.Width)
	}
	return r.node(name, slice{from: from, to: to}, to-from, -1, x)
}

// Const records a constant vector.
func (r *recorder) Const(name string, v nn.Tensor) nn.Value {
	vals := v.Float64s()
	return r.node(name, constant{v: vals}, len(vals), -1)
}

// Row records row id of table as a constant.
func (r *recorder) Row(name string, table nn.Tensor, id, dim int) nn.Value {
	vals := table.Float64s()
	if dim <= 0 || id < 0 || (id+1)*dim > len(vals) {
		return r.fail("lowering: %s: row %d of a table of %d values %d wide", name, id, len(vals), dim)
	}
	return r.node(name, constant{v: vals[id*dim : (id+1)*dim]}, dim, -1)
}

// Embed records the token fed back: table's first rows rows.
func (r *recorder) Embed(name string, table nn.Tensor, rows, dim int) nn.Value {
	vals := table.Float64s()
	if rows <= 0 || dim <= 0 || rows*dim > len(vals) {
		return r.fail("lowering: %s: %d rows %d wide of a table of %d values", name, rows, dim, len(vals))
	}
	t := make([][]float64, rows)
	for z := range t {
		t[z] = vals[z*dim : (z+1)*dim]
	}
	return r.token(name, t)
}

// Dropout is the identity: the verifier bounds the model as it decodes.
func (r *recorder) Dropout(_ string, x nn.Value) nn.Value { return x }

// token records a token's term, table[y] for the token y fed back.
func (r *recorder) token(name string, table [][]float64) nn.Value {
	if !r.tokens {
		return r.fail("lowering: %s: only a decoder step after the first reads a token", name)
	}
	if len(table) == 0 || len(table[0]) == 0 {
		return r.fail("lowering: %s: an empty token table", name)
	}
	for _, row := range table {
		if len(row) != len(table[0]) {
			return r.fail("lowering: %s: token rows of widths %d and %d", name, len(table[0]), len(row))
		}
	}
	v := r.node(name, newFeedback(table), len(table[0]), -1)
	if v.Valid() {
		r.t.nodes[v.ID-1].token = true
	}
	return v
}

// Lower converts d into a Net through its lowering (model.Lowerer);
// architectures without one, and inputs that are not continuous, are
// refused with the reason.
func Lower(d model.Decoder[float64]) (*Net, error) {
	lw, ok := d.(model.Lowerer)
	if !ok {
		return nil, fmt.Errorf("verify: architecture %s does not lower itself into the verifier's operators (model.Lowerer)", d.Config().Architecture)
	}
	in := d.Input()
	if in.Kind != model.Continuous {
		return nil, fmt.Errorf("verify: %s reads %v inputs; only continuous inputs are verified", d.Config().Architecture, in.Kind)
	}
	n := &Net{InputSize: in.Size(), EOS: d.EOS(), Vocab: d.Vocab(), InMin: in.Min, InMax: in.Max, lw: lw, arch: d.Config().Architecture}
	// The encoder, from the input placeholder.
	rec := &recorder{t: &template{}, names: map[string]bool{}}
	x := rec.placeholder("", n.InputSize)
	state, err := lw.LowerEncoder(rec, x)
	if err = errors.Join(err, rec.err); err != nil {
		return nil, n.wrap("encoder", err)
	}
	if rec.t.next, err = rec.outputs(state); err != nil {
		return nil, n.wrap("encoder", err)
	}
	rec.t.prune(false)
	n.enc = rec.t
	// The first step reads the encoder's state.
	if n.first, err = n.record(0, rec.t.writes()); err != nil {
		return nil, err
	}
	n.width = n.first.nodes[n.first.out].width
	// A later step reads the first step's state. Two are recorded here, so
	// that a lowering whose state grows shows its faults now; a state of
	// fixed width stops at one.
	for t := 1; t <= 2; t++ {
		if _, err := n.stepTemplate(t); err != nil {
			return nil, err
		}
	}
	n.outW, n.outB = lw.LowerLogits()
	if len(n.outW) != n.Vocab*n.width || len(n.outB) != n.Vocab {
		return nil, n.wrap("output layer", fmt.Errorf("%d weights and %d biases for %d tokens over %d values", len(n.outW), len(n.outB), n.Vocab, n.width))
	}
	return n, nil
}

func (n *Net) wrap(what string, err error) error {
	return fmt.Errorf("verify: lowering %s's %s: %w", n.arch, what, err)
}

// record records decoder step t (0: the first) on placeholders for the
// state widths it reads.
func (n *Net) record(t int, widths map[string]int) (*template, error) {
	first := t == 0
	rec := &recorder{t: &template{}, tokens: !first, names: map[string]bool{}}
	in := map[string]nn.Value{}
	for _, name := range sortedKeys(widths) {
		in[name] = rec.placeholder(name, widths[name])
	}
	what := "first decoder step"
	if !first {
		what = "decoder step " + strconv.Itoa(t)
	}
	out, next, err := n.lw.LowerStep(rec, first, in)
	if err = errors.Join(err, rec.err); err != nil {
		return nil, n.wrap(what, err)
	}
	if !out.Valid() || out.ID > len(rec.t.nodes) {
		return nil, n.wrap(what, errors.New("no output vector"))
	}
	rec.t.out = out.ID - 1
	if rec.t.next, err = rec.outputs(next); err != nil {
		return nil, n.wrap(what, err)
	}
	rec.t.prune(true)
	if !first {
		// Unrolling feeds a later step's state to the next: it must write
		// back what it reads (wider, for a state that grows).
		for name, w := range widths {
			if _, ok := next[name]; !ok {
				return nil, n.wrap(what, fmt.Errorf("state %q of width %d read but not written back", name, w))
			}
		}
		if w := rec.t.nodes[rec.t.out].width; w != n.width {
			return nil, n.wrap("decoder", fmt.Errorf("the first step's output is %d wide, step %d's %d", n.width, t, w))
		}
	}
	return rec.t, nil
}

// stepTemplate returns decoder step t's template (t ≥ 1). A later step
// that writes back the states it reads at the widths it reads them (an
// RNN's h) is recorded once and serves every step; one whose state grows
// (a cache of the tokens emitted so far) is recorded again for each step,
// on the widths the step before wrote, when an unrolling first needs it.
func (n *Net) stepTemplate(t int) (*template, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for len(n.later) < t && !n.fixed {
		prev := n.first
		if k := len(n.later); k > 0 {
			prev = n.later[k-1]
		}
		reads := prev.writes()
		tmpl, err := n.record(len(n.later)+1, reads)
		if err != nil {
			return nil, err
		}
		n.later = append(n.later, tmpl)
		n.fixed = maps.Equal(tmpl.writes(), reads)
	}
	return n.later[min(t, len(n.later))-1], nil
}

// outputs maps a lowering's state to template nodes.
func (r *recorder) outputs(state map[string]nn.Value) (map[string]int, error) {
	out := map[string]int{}
	for name, v := range state {
		if !v.Valid() || v.ID > len(r.t.nodes) || r.t.nodes[v.ID-1].width != v.Width {
			return nil, fmt.Errorf("state %q is not a vector of this graph", name)
		}
		out[name] = v.ID - 1
	}
	return out, nil
}

// prune drops the operators nothing the template writes reads (what a
// folded Dense or bias left behind, a lookup folded into its token term),
// keeping the placeholders; out counts as written for a step.
func (t *template) prune(step bool) {
	live := make([]bool, len(t.nodes))
	var mark func(int)
	mark = func(i int) {
		if live[i] {
			return
		}
		live[i] = true
		for _, p := range t.nodes[i].in {
			mark(p)
		}
	}
	for i, tn := range t.nodes {
		if tn.op == nil {
			live[i] = true
		}
	}
	for _, id := range t.next {
		mark(id)
	}
	if step {
		mark(t.out)
	}
	idx := make([]int, len(t.nodes))
	var kept []tnode
	for i, tn := range t.nodes {
		if !live[i] {
			continue
		}
		idx[i] = len(kept)
		for k, p := range tn.in {
			tn.in[k] = idx[p]
		}
		kept = append(kept, tn)
	}
	t.nodes = kept
	t.out = idx[t.out]
	for name, id := range t.next {
		t.next[name] = idx[id]
	}
}

// writes are the widths of the state t writes.
func (t *template) writes() map[string]int {
	w := map[string]int{}
	for name, id := range t.next {
		w[name] = t.nodes[id].width
	}
	return w
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// instantiate adds template t's operators to g for decoder step step (−1:
// the encoder), naming them under prefix, with its placeholders bound to
// the input (node 0) and the state nodes state; it returns the ids of the
// template's nodes.
func (g *graph) instantiate(t *template, step int, prefix string, state map[string]int) []int {
	ids := make([]int, len(t.nodes))
	for i, tn := range t.nodes {
		if tn.op == nil {
			if tn.state == "" {
				ids[i] = 0
			} else {
				ids[i] = state[tn.state]
			}
			continue
		}
		in := make([]int, len(tn.in))
		for k, p := range tn.in {
			in[k] = ids[p]
		}
		name := tn.name
		switch {
		case prefix != "" && name == "":
			name = prefix
		case prefix != "":
			name = prefix + "." + name
		}
		ids[i] = g.add(name, tn.op, tn.width, step, in...)
		if tn.token {
			g.nodes[ids[i]].token = step - 1
			if g.fb[step] < 0 {
				g.fb[step] = ids[i]
			}
		}
	}
	return ids
}

// newGraph unrolls net for steps 0..K (K+1 decoder steps): the encoder,
// the first step on the encoder's state, then the later step K times,
// each on the state the one before wrote; hidden[t] is the node step t's
// logits read.
func newGraph(net *Net, K int) *graph {
	g := &graph{net: net, head: newHead(net), pool: pool{}}
	g.add("input", nil, net.InputSize, -1)
	ids := g.instantiate(net.enc, -1, "", nil)
	g.enc = len(g.nodes) - 1
	state := map[string]int{}
	for name, id := range net.enc.next {
		state[name] = ids[id]
	}
	g.fb = append(g.fb, -1)
	for t := 0; t <= K; t++ {
		tmpl := net.first
		if t > 0 {
			var err error
			if tmpl, err = net.stepTemplate(t); err != nil {
				// Verify records the steps first and returns the
				// error: only a test's unrolling gets here.
				panic(err)
			}
		}
		if t > 0 {
			g.fb = append(g.fb, -1) // set by the step's first token node
		}
		ids := g.instantiate(tmpl, t, "h"+strconv.Itoa(t+1), state)
		g.hidden = append(g.hidden, ids[tmpl.out])
		next := map[string]int{}
		for name, id := range tmpl.next {
			next[name] = ids[id]
		}
		state = next
	}
	return g
}
