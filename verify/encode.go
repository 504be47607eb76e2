package verify

import (
	"fmt"
	"math"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/model"
)

// neuron kinds of a ReLU under known pre-activation bounds.
const (
	inactive   = iota // hi ≤ 0: output 0, no variable
	active            // lo ≥ 0: output = pre-activation, continuous
	unstable          // big-M with one binary
	linear            // no ReLU
	relaxed           // unstable, encoded by its triangle relaxation (no binary)
	abstracted        // inside the encoder, replaced by linear bounds on i₀
)

// encodeOptions chooses how exact the MIP is.
type encodeOptions struct {
	// relaxGap: unstable ReLUs whose triangle relaxation is within this
	// of the ReLU everywhere (−l·u/(u−l) < relaxGap) get the relaxation
	// instead of a binary.
	relaxGap float64
	// abstract replaces the encoder layers below abstractAt by CROWN's
	// linear lower and upper bounds of layer abstractAt's pre-activations in
	// terms of the input: a far smaller MIP whose feasible set contains the
	// exact one. Layers from abstractAt on are encoded exactly.
	abstract   bool
	abstractAt int
	// box keeps only the interval bounds of the abstraction boundary (no
	// linear rows in x, no input variables): the decoder-sized MIP solves
	// in milliseconds where the linear rows over thousands of inputs make
	// every LP slow.
	box bool
}

// encoding is the MIP of "some input of the ball decodes more than K
// tokens" (docs/verification.md): the unrolled network with big-M ReLUs,
// a one-hot argmax over the non-eos tokens that can win at each step, the
// fed-back embedding as a linear function of the one-hot, and the margin
// m ≤ max_{z≠eos} o_t[z] − o_t[eos] for t = 0..K. The objective minimises
// −m.
type encoding struct {
	m     *mip.Model
	g     *graph
	b     *Bounds
	K     int
	x     []int   // input variables
	kind  [][]int // per spine layer, per neuron
	out   [][]int // output variable per neuron (−1: constant 0)
	bin   [][]int // binary per unstable neuron (−1 otherwise)
	logit [][]int // per step, per token: variable or −1
	delta [][]int // per step, per token: one-hot binary, −1 if not allowed; a lone allowed token is fixed (−2)
	omax  []int   // per step: max non-eos logit variable, −1 if a single token is allowed
	mvar  int
	// Binaries counts the binary variables (ReLUs and argmax).
	Binaries, ReLUBinaries int
	// Relaxed counts unstable ReLUs encoded by their triangle relaxation.
	Relaxed int
	// zpre holds the abstraction boundary's pre-activation variables.
	zpre   []int
	zpreAt int
}

// lin is a linear expression Σ coef·var + c.
type lin struct {
	idx  []int
	coef []float64
	c    float64
}

func (l *lin) add(v int, w float64) {
	if v >= 0 && w != 0 {
		l.idx = append(l.idx, v)
		l.coef = append(l.coef, w)
	}
}

// row adds the constraint v·a − expr (sense) rhs, i.e. a·v − expr ⋚ rhs.
func (e *encoding) rowVar(name string, v int, a float64, ex lin, extra []int, extraCoef []float64, sense mip.Sense, rhs float64) {
	idx := append([]int{v}, extra...)
	coef := append([]float64{a}, extraCoef...)
	for k, j := range ex.idx {
		idx = append(idx, j)
		coef = append(coef, -ex.coef[k])
	}
	e.m.AddRow(name, idx, coef, sense, rhs+ex.c)
}

// encode builds the MIP from the graph and its bounds, node by node, each
// operator adding its own variables and rows. With relaxations (see
// encodeOptions) the model over-approximates: a robustness proof stays
// sound, but a counterexample it finds may be spurious (it is replayed
// anyway).
func encode(g *graph, b *Bounds, K int, eo encodeOptions) (*encoding, error) {
	e := &encoding{m: mip.NewModel("lenspec"), g: g, b: b, K: K, zpreAt: -1}
	if eo.abstract {
		e.zpreAt = eo.abstractAt
	}
	if !eo.box {
		for i, iv := range b.Input {
			e.x = append(e.x, e.m.AddVar(fmt.Sprintf("x%d", i), iv.Lo, iv.Hi, mip.Continuous))
		}
	}
	prevOut := e.x
	for L, n := range g.nodes {
		pre := b.Pre[L]
		var zvar []int // abstraction boundary: pre-activation variables
		if eo.abstract && L < eo.abstractAt {
			e.kind, e.out, e.bin = append(e.kind, nil), append(e.out, nil), append(e.bin, nil)
			continue
		}
		if eo.abstract && L == eo.abstractAt && (L > 0 || eo.box) {
			zvar = e.abstractPre(L, eo.box)
		}
		kinds := make([]int, len(n.aff.rows))
		outs := make([]int, len(n.aff.rows))
		bins := make([]int, len(n.aff.rows))
		for j := range n.aff.rows {
			var ex lin
			if zvar != nil {
				ex = lin{idx: []int{zvar[j]}, coef: []float64{1}}
			} else {
				ex = n.aff.expr(j, prevOut)
			}
			if n.fb != nil {
				n.fb.expr(&ex, j, e.delta[n.step-1])
			}
			kinds[j], outs[j], bins[j] = n.act.encode(e, fmt.Sprintf("%s_%d", n.name, j), ex, pre[j], eo.relaxGap)
		}
		e.kind, e.out, e.bin = append(e.kind, kinds), append(e.out, outs), append(e.bin, bins)
		prevOut = outs
		if n.step < 0 {
			continue
		}
		if n.step == 0 {
			e.mvar = e.m.AddVar("m", math.Inf(-1), math.Inf(1), mip.Continuous)
		}
		g.head.encode(e, n.step, outs)
	}
	// m ≤ min over steps of the margin bounds; the objective minimises −m.
	e.m.SetBounds(e.mvar, math.Inf(-1), b.MarginBound())
	e.m.SetObjective([]int{e.mvar}, []float64{-1}, 0)
	if err := e.m.Err(); err != nil {
		return nil, fmt.Errorf("verify: encoding: %w", err)
	}
	return e, nil
}

// abstractPre creates variables for the pre-activations of encoder layer
// L, bounded by their intervals and (unless box) by CROWN's linear bounds
// in x, standing in for every layer below L.
func (e *encoding) abstractPre(L int, box bool) []int {
	g, b := e.g, e.b
	n := g.nodes[L]
	zs := make([]int, len(n.aff.rows))
	for j, r := range n.aff.rows {
		iv := b.Pre[L][j]
		name := fmt.Sprintf("%s_pre%d", n.name, j)
		zs[j] = e.m.AddVar(name, iv.Lo, iv.Hi, mip.Continuous)
		if box {
			continue
		}
		c := r.dense(n.aff.in)
		neg := make([]float64, len(c))
		for i, v := range c {
			neg[i] = -v
		}
		wu, ku := g.linearUpper(b, L-1, c, r.B)
		wl, kl := g.linearUpper(b, L-1, neg, -r.B) // −z ≤ wl·x + kl
		up, lo := lin{c: ku}, lin{c: -kl}
		for i, xi := range e.x {
			up.add(xi, wu[i])
			lo.add(xi, -wl[i])
		}
		e.rowVar(name+"_up", zs[j], 1, up, nil, nil, mip.LE, 0)
		e.rowVar(name+"_lo", zs[j], 1, lo, nil, nil, mip.GE, 0)
	}
	e.zpre = zs
	return zs
}

// input returns the input point of a MIP solution, or nil when the
// encoding has no input variables (the box abstraction).
func (e *encoding) input(sol []float64) []float64 {
	if len(e.x) == 0 {
		return nil
	}
	x := make([]float64, len(e.x))
	for i, v := range e.x {
		x[i] = sol[v]
	}
	return x
}

// assignment returns the MIP point of input x decoded along its path with
// the argmax taken over the non-eos tokens at each step (the path a
// counterexample follows; model.Greedy with NoEOS decodes it). ok is false
// when the path leaves the encoded set (a token outside Allowed), which
// happens only for inputs that are not counterexamples.
func (e *encoding) assignment(d64 model.Decoder[float64], x []float64) (v []float64, ok bool, err error) {
	tp := ad.NewTape[float64](false)
	path, err := model.Greedy(tp, d64, model.Input[float64]{X: tp.Const(ad.FromSlice(x, 1, len(x)))}, model.GreedyOptions[float64]{MaxSteps: e.K + 1, NoEOS: true})
	if err != nil {
		return nil, false, err
	}
	tokens := path[0].Tokens
	v = make([]float64, e.m.NumVars())
	for i, xi := range e.x {
		v[xi] = x[i]
	}
	tr := e.g.eval(x, tokens)
	set := func(L int, z []float64) {
		if e.kind[L] == nil { // abstracted encoder node
			return
		}
		if L == e.zpreAt && e.zpre != nil {
			for j, zj := range z {
				v[e.zpre[j]] = zj
			}
		}
		for j, zj := range z {
			out := e.g.nodes[L].act.eval(zj)
			if o := e.out[L][j]; o >= 0 {
				v[o] = out
			}
			if d := e.bin[L][j]; d >= 0 && zj > 0 {
				v[d] = 1
			}
		}
	}
	for L := 0; L <= e.g.enc; L++ {
		set(L, tr.pre[L])
	}
	eos := e.g.net.EOS
	m := math.Inf(1)
	for t, y := range tokens {
		set(e.g.hidden(t), tr.pre[e.g.hidden(t)])
		o := tr.logits[t]
		for q, oq := range o {
			if lv := e.logit[t][q]; lv >= 0 {
				v[lv] = oq
			}
		}
		if !e.b.Allowed[t][y] {
			return v, false, nil
		}
		if d := e.delta[t][y]; d >= 0 {
			v[d] = 1
		}
		if om := e.omax[t]; om >= 0 {
			v[om] = o[y]
		}
		m = math.Min(m, o[y]-o[eos])
	}
	v[e.mvar] = m
	return v, true, nil
}
