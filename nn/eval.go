package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
)

// Eval interprets a description on an autodiff tape: what training
// differentiates, what decoding runs and what replay evaluates in float64.
// A Dense or Conv followed by a ReLU runs as one fused kernel (the ReLU is
// taken when the pre-activation is read by nothing else first), and an LSTM
// update as one (LSTMUpdate); the values are those of the operators one by
// one.
type Eval[T ad.Float] struct {
	tp *ad.Tape[T]
	// Tokens are the tokens Embed reads, one per example.
	Tokens []int
	// Rows is the number of examples, for Row and Const.
	Rows int
	// Drop is the dropout rate while training (Dropout), drawn from Rng.
	Drop float64
	Rng  *rand.Rand
	vals []evalValue[T]
}

// evalValue is a Value's node, or the affine map waiting for the ReLU that
// may be fused with it.
type evalValue[T ad.Float] struct {
	n    *ad.Node[T]
	pend *pending[T]
}

type pending[T ad.Float] struct {
	x, w, b *ad.Node[T]
	conv    bool
	geom    ad.ConvGeom
}

// NewEval returns an interpreter onto tp for rows examples.
func NewEval[T ad.Float](tp *ad.Tape[T], rows int) *Eval[T] { return &Eval[T]{tp: tp, Rows: rows} }

// Input binds a tape node [Rows, …] as a Value of the description.
func (e *Eval[T]) Input(n *ad.Node[T]) Value {
	e.vals = append(e.vals, evalValue[T]{n: n})
	return Value{ID: len(e.vals), Width: n.Value.Len() / max(n.Value.Shape[0], 1)}
}

// Node returns v's tape node.
func (e *Eval[T]) Node(v Value) *ad.Node[T] {
	if v.ID < 1 || v.ID > len(e.vals) {
		panic(fmt.Sprintf("nn.Eval: value %d is not of this interpreter", v.ID))
	}
	ev := &e.vals[v.ID-1]
	if ev.pend != nil {
		p := ev.pend
		if p.conv {
			ev.n = e.tp.Conv2D(p.x, p.w, p.b, p.geom)
		} else {
			ev.n = e.tp.Linear(p.x, p.w, p.b)
		}
		ev.pend = nil
	}
	return ev.n
}

func (e *Eval[T]) put(n *ad.Node[T], width int) Value {
	e.vals = append(e.vals, evalValue[T]{n: n})
	return Value{ID: len(e.vals), Width: width}
}

// tensor binds a description's Tensor onto e's tape (bind).
func (e *Eval[T]) tensor(t Tensor, shape ...int) *ad.Node[T] { return bind(e.tp, t, shape...) }

// bind puts a description's Tensor on tp: a parameter as a parameter of
// the tape, fixed values as a constant of the given shape, nil as nil.
func bind[T ad.Float](tp *ad.Tape[T], t Tensor, shape ...int) *ad.Node[T] {
	switch t := t.(type) {
	case nil:
		return nil
	case *ad.Param[T]:
		return tp.Param(t)
	default:
		v := t.Float64s()
		c := ad.New[T](shape...)
		for i := range c.Data {
			c.Data[i] = T(v[i])
		}
		return tp.Const(c)
	}
}

// flat returns x as [Rows, Width].
func (e *Eval[T]) flat(x Value) *ad.Node[T] {
	n := e.Node(x)
	if len(n.Value.Shape) != 2 {
		n = e.tp.Reshape(n, n.Value.Shape[0], x.Width)
	}
	return n
}

// Dense is W·x + b.
func (e *Eval[T]) Dense(_ string, x Value, w, b Tensor, out int) Value {
	xn := e.flat(x)
	e.vals = append(e.vals, evalValue[T]{pend: &pending[T]{x: xn, w: e.tensor(w, out, x.Width), b: e.tensor(b, out)}})
	return Value{ID: len(e.vals), Width: out}
}

// Conv is a convolution of x shaped in.
func (e *Eval[T]) Conv(_ string, x Value, w, b Tensor, in [3]int, out int, g ad.ConvGeom) Value {
	xn := e.Node(x)
	if len(xn.Value.Shape) != 4 {
		xn = e.tp.Reshape(xn, xn.Value.Shape[0], in[0], in[1], in[2])
	}
	e.vals = append(e.vals, evalValue[T]{pend: &pending[T]{x: xn, w: e.tensor(w, out, in[0], g.Kernel, g.Kernel), b: e.tensor(b, out), conv: true, geom: g}})
	return Value{ID: len(e.vals), Width: out * g.Out(in[1]) * g.Out(in[2])}
}

// Add sums xs.
func (e *Eval[T]) Add(_ string, xs ...Value) Value {
	sum := e.Node(xs[0])
	for _, x := range xs[1:] {
		sum = e.tp.Add(sum, e.Node(x))
	}
	return e.put(sum, xs[0].Width)
}

// Sub is x − y.
func (e *Eval[T]) Sub(_ string, x, y Value) Value {
	return e.put(e.tp.Sub(e.Node(x), e.Node(y)), x.Width)
}

// Mul is x ⊙ y.
func (e *Eval[T]) Mul(_ string, x, y Value) Value {
	return e.put(e.tp.Mul(e.Node(x), e.Node(y)), x.Width)
}

// Act applies a; a ReLU of a Dense or Conv not yet read runs fused with it.
func (e *Eval[T]) Act(_ string, a Activation, x Value) Value {
	if p := e.vals[x.ID-1].pend; p != nil && a == ReLU {
		var n *ad.Node[T]
		if p.conv {
			n = e.tp.Conv2DReLU(p.x, p.w, p.b, p.geom)
		} else {
			n = e.tp.LinearReLU(p.x, p.w, p.b)
		}
		return e.put(n, x.Width)
	}
	xn := e.Node(x)
	switch a {
	case ReLU:
		return e.put(e.tp.ReLU(xn), x.Width)
	case Sigmoid:
		return e.put(e.tp.Sigmoid(xn), x.Width)
	case Tanh:
		return e.put(e.tp.Tanh(xn), x.Width)
	}
	panic(fmt.Sprintf("nn.Eval: unknown activation %q", a))
}

// Concat lays xs end to end.
func (e *Eval[T]) Concat(_ string, xs ...Value) Value {
	ns := make([]*ad.Node[T], len(xs))
	w := 0
	for k, x := range xs {
		ns[k], w = e.flat(x), w+x.Width
	}
	return e.put(e.tp.Concat(1, ns...), w)
}

// Slice is x[from:to].
func (e *Eval[T]) Slice(_ string, x Value, from, to int) Value {
	return e.put(e.tp.Slice(e.flat(x), 1, from, to), to-from)
}

// Const is v for every example.
func (e *Eval[T]) Const(_ string, v Tensor) Value {
	vals := v.Float64s()
	c := ad.New[T](e.Rows, len(vals))
	for i := range e.Rows {
		for j, x := range vals {
			c.Data[i*len(vals)+j] = T(x)
		}
	}
	return e.put(e.tp.Const(c), len(vals))
}

// Row is table's row id for every example.
func (e *Eval[T]) Row(_ string, table Tensor, id, dim int) Value {
	ids := make([]int, e.Rows)
	for i := range ids {
		ids[i] = id
	}
	return e.gather(table, ids, dim)
}

// Embed is table[Tokens[i]] for every example i.
func (e *Eval[T]) Embed(_ string, table Tensor, _, dim int) Value {
	if len(e.Tokens) != e.Rows {
		panic(fmt.Sprintf("nn.Eval: %d tokens for %d examples", len(e.Tokens), e.Rows))
	}
	return e.gather(table, e.Tokens, dim)
}

func (e *Eval[T]) gather(table Tensor, ids []int, dim int) Value {
	t := e.tensor(table)
	if t == nil {
		panic("nn.Eval: a lookup in fixed values")
	}
	return e.put(e.tp.Gather(t, ids), dim)
}

// Dropout drops at rate Drop (none at 0).
func (e *Eval[T]) Dropout(_ string, x Value) Value {
	if e.Drop <= 0 {
		return x
	}
	return e.put(e.tp.Dropout(e.Node(x), e.Drop, e.Rng), x.Width)
}

// LSTMUpdate runs the LSTM update as one kernel.
func (e *Eval[T]) LSTMUpdate(gates, c Value) (Value, Value, bool) {
	h, cn := e.tp.LSTMCell(e.Node(gates), e.Node(c))
	return e.put(h, c.Width), e.put(cn, c.Width), true
}
