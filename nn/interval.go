package nn

import (
	"fmt"

	"github.com/lenspec/lenspec/ad"
)

// Interval interprets a description on boxes, centre and radius, on an
// autodiff tape: interval bound propagation, differentiable, for certified
// training (the verifier's rules are package verify's, in float64 and
// rounded outward). A nil radius is an exact value (a token's embedding, a
// constant), so that exact inputs cost no radius arithmetic.
type Interval[T ad.Float] struct {
	tp *ad.Tape[T]
	// Tokens are the tokens Embed reads, one per example.
	Tokens []int
	// Rows is the number of examples, for Row and Const.
	Rows int
	// Relax, if set, is asked first for each activation's output box from its
	// input box (name as described): a certified loss that bounds some
	// pre-activations more tightly than intervals do (CROWN-IBP) takes
	// them there (ok true), and a loss on the pre-activations (stability)
	// reads them. With ok false the interval rule applies.
	Relax func(name string, a Activation, c, r *ad.Node[T]) (oc, or *ad.Node[T], ok bool)
	vals  []ibox[T]
}

type ibox[T ad.Float] struct{ c, r *ad.Node[T] }

// NewInterval returns an interpreter onto tp for rows examples.
func NewInterval[T ad.Float](tp *ad.Tape[T], rows int) *Interval[T] {
	return &Interval[T]{tp: tp, Rows: rows}
}

// Input binds the box c ± r (r nil: exact) as a Value.
func (iv *Interval[T]) Input(c, r *ad.Node[T]) Value {
	return iv.put(c, r, c.Value.Len()/max(c.Value.Shape[0], 1))
}

// Box returns v's centre and radius (nil: exact).
func (iv *Interval[T]) Box(v Value) (c, r *ad.Node[T]) {
	if v.ID < 1 || v.ID > len(iv.vals) {
		panic(fmt.Sprintf("nn.Interval: value %d is not of this interpreter", v.ID))
	}
	b := iv.vals[v.ID-1]
	return b.c, b.r
}

func (iv *Interval[T]) put(c, r *ad.Node[T], width int) Value {
	iv.vals = append(iv.vals, ibox[T]{c, r})
	return Value{ID: len(iv.vals), Width: width}
}

// each applies f to v's centre and, if v is not exact, its radius.
func (iv *Interval[T]) each(v Value, width int, f func(*ad.Node[T]) *ad.Node[T]) Value {
	c, r := iv.Box(v)
	if r != nil {
		r = f(r)
	}
	return iv.put(f(c), r, width)
}

// Dense: centre W·c + b, radius |W|·r.
func (iv *Interval[T]) Dense(_ string, x Value, w, b Tensor, out int) Value {
	c, r := iv.flat(x)
	wn := bind(iv.tp, w, out, x.Width)
	mid := iv.tp.Linear(c, wn, bind(iv.tp, b, out))
	if r != nil {
		r = iv.tp.Linear(r, iv.tp.Abs(wn), nil)
	}
	return iv.put(mid, r, out)
}

// Conv: centre conv(c) + b, radius conv(r) with |W|.
func (iv *Interval[T]) Conv(_ string, x Value, w, b Tensor, in [3]int, out int, g ad.ConvGeom) Value {
	c, r := iv.Box(x)
	shape := func(n *ad.Node[T]) *ad.Node[T] {
		if n == nil || len(n.Value.Shape) == 4 {
			return n
		}
		return iv.tp.Reshape(n, n.Value.Shape[0], in[0], in[1], in[2])
	}
	c, r = shape(c), shape(r)
	wn := bind(iv.tp, w, out, in[0], g.Kernel, g.Kernel)
	mid := iv.tp.Conv2D(c, wn, bind(iv.tp, b, out), g)
	if r != nil {
		r = iv.tp.Conv2D(r, iv.tp.Abs(wn), nil, g)
	}
	return iv.put(mid, r, out*g.Out(in[1])*g.Out(in[2]))
}

// flat returns x's box as [Rows, Width].
func (iv *Interval[T]) flat(x Value) (c, r *ad.Node[T]) {
	c, r = iv.Box(x)
	f := func(n *ad.Node[T]) *ad.Node[T] {
		if n == nil || len(n.Value.Shape) == 2 {
			return n
		}
		return iv.tp.Reshape(n, n.Value.Shape[0], x.Width)
	}
	return f(c), f(r)
}

// Add sums the centres and the radii.
func (iv *Interval[T]) Add(_ string, xs ...Value) Value {
	c, r := iv.Box(xs[0])
	for _, x := range xs[1:] {
		xc, xr := iv.Box(x)
		c = iv.tp.Add(c, xc)
		r = iv.addRad(r, xr)
	}
	return iv.put(c, r, xs[0].Width)
}

func (iv *Interval[T]) addRad(a, b *ad.Node[T]) *ad.Node[T] {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return iv.tp.Add(a, b)
}

// Sub: centre cx − cy, radius rx + ry.
func (iv *Interval[T]) Sub(_ string, x, y Value) Value {
	cx, rx := iv.Box(x)
	cy, ry := iv.Box(y)
	return iv.put(iv.tp.Sub(cx, cy), iv.addRad(rx, ry), x.Width)
}

// Mul: every x·y with |x − cx| ≤ rx and |y − cy| ≤ ry lies within
// cx·cy ± (|cx|·ry + |cy|·rx + rx·ry), since x·y − cx·cy = cx·(y − cy) +
// cy·(x − cx) + (x − cx)·(y − cy).
func (iv *Interval[T]) Mul(_ string, x, y Value) Value {
	tp := iv.tp
	cx, rx := iv.Box(x)
	cy, ry := iv.Box(y)
	var rad *ad.Node[T]
	if ry != nil {
		rad = tp.AddTo(rad, tp.Mul(tp.Abs(cx), ry))
	}
	if rx != nil {
		rad = tp.AddTo(rad, tp.Mul(tp.Abs(cy), rx))
	}
	if rx != nil && ry != nil {
		rad = tp.AddTo(rad, tp.Mul(rx, ry))
	}
	return iv.put(tp.Mul(cx, cy), rad, x.Width)
}

// Act maps the box's ends through the (increasing) activation:
// [f(c − r), f(c + r)], again as centre and radius.
func (iv *Interval[T]) Act(name string, a Activation, x Value) Value {
	tp := iv.tp
	c, r := iv.Box(x)
	if iv.Relax != nil && r != nil {
		if oc, or, ok := iv.Relax(name, a, c, r); ok {
			return iv.put(oc, or, x.Width)
		}
	}
	var f func(*ad.Node[T]) *ad.Node[T]
	switch a {
	case ReLU:
		f = tp.ReLU
	case Sigmoid:
		f = tp.Sigmoid
	case Tanh:
		f = tp.Tanh
	default:
		panic(fmt.Sprintf("nn.Interval: unknown activation %q", a))
	}
	if r == nil {
		return iv.put(f(c), nil, x.Width)
	}
	lo, hi := f(tp.Sub(c, r)), f(tp.Add(c, r))
	return iv.put(tp.Scale(tp.Add(lo, hi), 0.5), tp.Scale(tp.Sub(hi, lo), 0.5), x.Width)
}

// Concat lays the boxes end to end (an exact part gets radius 0 when
// another part has one).
func (iv *Interval[T]) Concat(_ string, xs ...Value) Value {
	cs, rs := make([]*ad.Node[T], len(xs)), make([]*ad.Node[T], len(xs))
	exact, w := true, 0
	for k, x := range xs {
		cs[k], rs[k] = iv.flat(x)
		exact = exact && rs[k] == nil
		w += x.Width
	}
	if exact {
		return iv.put(iv.tp.Concat(1, cs...), nil, w)
	}
	for k := range rs {
		if rs[k] == nil {
			rs[k] = iv.tp.Scale(cs[k], 0)
		}
	}
	return iv.put(iv.tp.Concat(1, cs...), iv.tp.Concat(1, rs...), w)
}

// Slice is the box's [from:to].
func (iv *Interval[T]) Slice(_ string, x Value, from, to int) Value {
	c, r := iv.flat(x)
	if r != nil {
		r = iv.tp.Slice(r, 1, from, to)
	}
	return iv.put(iv.tp.Slice(c, 1, from, to), r, to-from)
}

// Const is exact.
func (iv *Interval[T]) Const(name string, v Tensor) Value {
	return iv.exact(func(ev *Eval[T]) Value { return ev.Const(name, v) })
}

// Row is exact.
func (iv *Interval[T]) Row(name string, table Tensor, id, dim int) Value {
	return iv.exact(func(ev *Eval[T]) Value { return ev.Row(name, table, id, dim) })
}

// Embed is exact: the token is the one fed back.
func (iv *Interval[T]) Embed(name string, table Tensor, rows, dim int) Value {
	return iv.exact(func(ev *Eval[T]) Value { return ev.Embed(name, table, rows, dim) })
}

// exact binds the value Eval computes as an exact box (radius nil).
func (iv *Interval[T]) exact(f func(*Eval[T]) Value) Value {
	ev := &Eval[T]{tp: iv.tp, Rows: iv.Rows, Tokens: iv.Tokens}
	v := f(ev)
	return iv.put(ev.Node(v), nil, v.Width)
}

// Dropout is the identity: boxes are of the model as it decodes.
func (iv *Interval[T]) Dropout(_ string, x Value) Value { return x }
