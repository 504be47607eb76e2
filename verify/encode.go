package verify

import (
	"context"
	"fmt"
	"math"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/model"
)

// encodeOptions chooses how exact the MIP is.
type encodeOptions struct {
	// relaxGap: unstable ReLUs whose triangle relaxation is within this
	// of the ReLU everywhere (−l·u/(u−l) < relaxGap) get the relaxation
	// instead of a binary.
	relaxGap float64
	// abstract replaces the nodes before node abstractAt (an affine node
	// of the encoder) by CROWN's linear lower and upper bounds of its
	// outputs in terms of the input: a far smaller MIP whose feasible set
	// contains the exact one. Nodes from abstractAt on are encoded
	// exactly.
	abstract   bool
	abstractAt int
	// box keeps only the interval bounds of the abstraction boundary (no
	// linear rows in x, no input variables): the decoder-sized MIP solves
	// in milliseconds where the linear rows over thousands of inputs make
	// every LP slow.
	box bool
}

// encode builds the MIP from the graph and its bounds. With relaxations
// (see encodeOptions) the model over-approximates: a robustness proof
// stays sound, but a counterexample it finds may be spurious (it is
// replayed anyway). Encoding a Show-and-Tell graph takes seconds (0.6–3 s
// on an AVX2 machine), so ctx is checked at every node: a MIP stage that
// starts just before its sample's time limit ends at the limit, not seconds
// after it. The error is then ctx's own.
func encode(ctx context.Context, g *graph, b *Bounds, K int, eo encodeOptions) (*encoding, error) {
	e := &encoding{m: mip.NewModel("lenspec"), g: g, b: b, K: K, relaxGap: eo.relaxGap,
		vars: make([][]int, len(g.nodes)), abstractAt: -1}
	exprs := make([][]lin, len(g.nodes))
	if !eo.box {
		exprs[0] = make([]lin, len(b.Input))
		for i, iv := range b.Input {
			v := e.m.AddVar(fmt.Sprintf("x%d", i), iv.Lo, iv.Hi, mip.Continuous)
			e.x = append(e.x, v)
			exprs[0][i] = varExpr(v)
		}
		e.vars[0] = e.x
	}
	readByAffine := make([]bool, len(g.nodes))
	for _, n := range g.nodes {
		if _, ok := n.op.(wideReader); ok {
			readByAffine[n.in[0]] = true
		}
	}
	// live marks the nodes before the abstraction point that a node after
	// it reads: a chain (the ReLU RNN's encoder) has none, but a cell's
	// second state made in the encoder (Show-and-Tell's c at step −1)
	// crosses the cut beside it, and each such node is abstracted too.
	live := make([]bool, len(g.nodes))
	if eo.abstract {
		e.abstractAt = eo.abstractAt
		for _, n := range g.nodes[eo.abstractAt+1:] {
			for _, p := range n.in {
				live[p] = p < eo.abstractAt
			}
		}
		if live[0] && eo.box {
			exprs[0] = make([]lin, len(b.Input))
			for i, iv := range b.Input {
				exprs[0][i] = varExpr(e.m.AddVar(fmt.Sprintf("x%d", i), iv.Lo, iv.Hi, mip.Continuous))
			}
			e.vars[0] = varsOf(exprs[0])
		}
	}
	for _, n := range g.nodes[1:] {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		switch {
		case eo.abstract && n.id < eo.abstractAt && !live[n.id]:
			continue
		case eo.abstract && n.id <= eo.abstractAt:
			var err error
			if exprs[n.id], err = e.abstractNode(ctx, n, eo.box); err != nil {
				return nil, err
			}
		default:
			ins := make([][]lin, len(n.in))
			for k, p := range n.in {
				ins[k] = exprs[p]
			}
			out := n.op.encode(e, n, ins)
			if n.act == nil && readByAffine[n.id] {
				for j, ex := range out {
					if varsOf(out[j : j+1])[0] < 0 { // a variable already (a product's) needs none
						out[j] = e.materialise(e.name(n, j), ex, b.Val[n.id][j])
					}
				}
			}
			exprs[n.id] = out
		}
		e.vars[n.id] = varsOf(exprs[n.id])
		if n.step < 0 || g.hidden[n.step] != n.id {
			continue
		}
		if n.step == 0 {
			e.mvar = e.m.AddVar("m", math.Inf(-1), math.Inf(1), mip.Continuous)
		}
		g.head.encode(e, n.step, exprs[n.id])
	}
	// m ≤ min over steps of the margin bounds; the objective minimises −m.
	e.m.SetBounds(e.mvar, math.Inf(-1), b.MarginBound())
	e.m.SetObjective([]int{e.mvar}, []float64{-1}, 0)
	if err := e.m.Err(); err != nil {
		return nil, fmt.Errorf("verify: encoding: %w", err)
	}
	return e, nil
}

// varsOf returns the variable each expression is (−1 where it is not a
// single variable with coefficient 1).
func varsOf(ex []lin) []int {
	out := make([]int, len(ex))
	for j, x := range ex {
		out[j] = -1
		if len(x.idx) == 1 && x.coef[0] == 1 && x.c == 0 {
			out[j] = x.idx[0]
		}
	}
	return out
}

// abstractNode creates variables for the outputs of node n, bounded by
// their intervals and (unless box) by CROWN's linear bounds in x, standing
// in for every node before it. The linear bounds come abstractChunk
// outputs at a time, ctx checked between: on Show-and-Tell's encoder all
// of them take a second or more.
func (e *encoding) abstractNode(ctx context.Context, n *node, box bool) ([]lin, error) {
	out := make([]lin, n.width)
	for j, iv := range e.b.Val[n.id] {
		out[j] = varExpr(e.m.AddVar(e.name(n, j), iv.Lo, iv.Hi, mip.Continuous))
	}
	if box {
		return out, nil
	}
	for from := 0; from < len(out); from += abstractChunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		outs := make([]int, min(abstractChunk, len(out)-from))
		for i := range outs {
			outs[i] = from + i
		}
		up, lo := e.g.linearBounds(e.b, n.id, outs)
		for i, j := range outs {
			v := out[j].idx[0]
			e.rowVar(e.name(n, j)+"_up", v, 1, up[i].over(e.x), nil, nil, mip.LE, 0)
			e.rowVar(e.name(n, j)+"_lo", v, 1, lo[i].over(e.x), nil, nil, mip.GE, 0)
		}
	}
	return out, nil
}

// abstractChunk is how many outputs' linear bounds abstractNode computes
// between two looks at its context.
const abstractChunk = 8

// affineBound is w·x + k.
type affineBound struct {
	w []float64
	k float64
}

func (a affineBound) over(x []int) lin {
	ex := lin{c: a.k}
	for i, v := range x {
		ex.add(v, a.w[i])
	}
	return ex
}

// linearBounds returns CROWN's linear upper and lower bounds of the
// outputs outs of node id in the input over the box: z_j ≤ up[i]·x and
// z_j ≥ lo[i]·x on it for j = outs[i], their constants padded for rounding
// (the padding assumes |x| ≤ max(|lo|, |hi|)).
func (g *graph) linearBounds(b *Bounds, id int, outs []int) (up, lo []affineBound) {
	c := unitRows(outs, g.nodes[id].width)
	s := g.newBack(sameDomain(b, c.rows), nil, true, false)
	s.run(id, c, make([]float64, c.rows))
	for r := 0; r < c.rows; r++ {
		xc := make([]float64, len(b.Input))
		if s.coef[0] != nil {
			copy(xc, s.coef[0].row(r))
		}
		a := affineBound{xc, s.paddedConst(r, b.Input)}
		if r%2 == 0 {
			up = append(up, a)
		} else { // −z ≤ a·x: z ≥ −a·x
			for i := range a.w {
				a.w[i] = -a.w[i]
			}
			a.k = -a.k
			lo = append(lo, a)
		}
	}
	return up, lo
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
	tr := e.g.eval(x, tokens)
	for id, vs := range e.vars {
		if vs == nil || id >= len(tr.val) {
			continue
		}
		for j, vj := range vs {
			if vj >= 0 {
				v[vj] = tr.val[id][j]
			}
		}
	}
	for _, in := range e.ind {
		if in.nu.node < len(tr.val) && tr.val[e.g.nodes[in.nu.node].in[0]][in.nu.index] > in.at {
			v[in.v] = 1
		}
	}
	eos := e.g.net.EOS
	m := math.Inf(1)
	for t, y := range tokens {
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
