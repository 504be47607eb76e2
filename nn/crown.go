package nn

import (
	"github.com/lenspec/lenspec/ad"
)

// CROWN interprets a description as Interval does, and records it, so that
// a linear function of any of its values can be bounded by
// back-substitution (CROWN, Zhang et al. 2018) to the boxes of its inputs,
// each activation and product relaxed by linear bounds on its interval
// box: CROWN-IBP (Zhang et al. 2020), differentiable on the tape, for
// certified training. Values without a rule of their own here (a
// convolution) are concretised by their interval box.
type CROWN[T ad.Float] struct {
	*Interval[T]
	// Tighten bounds every activation's pre-activations by
	// back-substitution too, not by intervals alone (CROWN's intermediate
	// bounds): tighter, at 2·width back-substitution rows per example per
	// activation.
	Tighten bool
	rec     []crownOp[T]
	// eyes are SignedEye's rows by width, constants of the tape.
	eyes map[int]*ad.Node[T]
}

// crownOp is how a value was made: its operator and inputs.
type crownOp[T ad.Float] struct {
	kind     string // "input", "dense", "add", "sub", "mul", "act", "slice", "concat", "box"
	in       []Value
	w, b     *ad.Node[T]
	act      Activation
	from, to int
}

// NewCROWN returns an interpreter onto tp for rows examples.
func NewCROWN[T ad.Float](tp *ad.Tape[T], rows int) *CROWN[T] {
	return &CROWN[T]{Interval: NewInterval(tp, rows)}
}

func (cr *CROWN[T]) note(v Value, op crownOp[T]) Value {
	for len(cr.rec) < v.ID {
		cr.rec = append(cr.rec, crownOp[T]{kind: "box"})
	}
	if v.ID >= 1 {
		cr.rec[v.ID-1] = op
	}
	return v
}

// Input binds the box c ± r (r nil: exact) as a Value: back-substitution
// ends there.
func (cr *CROWN[T]) Input(c, r *ad.Node[T]) Value {
	return cr.note(cr.Interval.Input(c, r), crownOp[T]{kind: "input"})
}

// Dense records W·x + b.
func (cr *CROWN[T]) Dense(name string, x Value, w, b Tensor, out int) Value {
	v := cr.Interval.Dense(name, x, w, b, out)
	return cr.note(v, crownOp[T]{kind: "dense", in: []Value{x}, w: bind(cr.tp, w, out, x.Width), b: bind(cr.tp, b, out)})
}

// Add records the sum.
func (cr *CROWN[T]) Add(name string, xs ...Value) Value {
	return cr.note(cr.Interval.Add(name, xs...), crownOp[T]{kind: "add", in: xs})
}

// Sub records x − y.
func (cr *CROWN[T]) Sub(name string, x, y Value) Value {
	return cr.note(cr.Interval.Sub(name, x, y), crownOp[T]{kind: "sub", in: []Value{x, y}})
}

// Mul records x ⊙ y.
func (cr *CROWN[T]) Mul(name string, x, y Value) Value {
	return cr.note(cr.Interval.Mul(name, x, y), crownOp[T]{kind: "mul", in: []Value{x, y}})
}

// Act records an activation. With Tighten set, the pre-activation's box is
// first intersected with back-substitution's bounds of each of its
// neurons (CROWN's intermediate bounds), so that this activation's
// relaxation and every later one that reads it use the tighter box.
func (cr *CROWN[T]) Act(name string, a Activation, x Value) Value {
	if cr.Tighten {
		cr.tighten(x)
	}
	return cr.note(cr.Interval.Act(name, a, x), crownOp[T]{kind: "act", in: []Value{x}, act: a})
}

// tighten intersects x's box with back-substitution's bounds: rows +I and
// −I for each example give its neurons' upper and (negated) lower bounds.
func (cr *CROWN[T]) tighten(x Value) {
	tp := cr.tp
	c, r := cr.flat(x)
	if r == nil || x.ID > len(cr.rec) || cr.rec[x.ID-1].kind == "input" || cr.rec[x.ID-1].kind == "box" {
		return // exact, or a box back-substitution would only give back
	}
	w := x.Width
	if cr.eyes == nil {
		cr.eyes = map[int]*ad.Node[T]{}
	}
	eye := cr.eyes[w]
	if eye == nil {
		eye = tp.Const(SignedEye[T](cr.Rows, w))
		cr.eyes[w] = eye
	}
	parts := tp.Split(tp.Reshape(cr.Upper(eye, x), cr.Rows, 2*w), 1, w, w)
	lo := Maximum(tp, tp.Sub(c, r), tp.Scale(parts[1], -1))
	hi := Minimum(tp, tp.Add(c, r), parts[0])
	cr.vals[x.ID-1] = ibox[T]{tp.Scale(tp.Add(lo, hi), 0.5), tp.Scale(tp.Sub(hi, lo), 0.5)}
}

// SignedEye returns [I; −I] (width × width each) for each of rows
// examples, [rows·2·width, width]: the specification rows of a vector's
// upper bounds and of its negated lower bounds, as Upper takes them.
func SignedEye[T ad.Float](rows, width int) *ad.Tensor[T] {
	eye := ad.New[T](rows*2*width, width)
	for i := range rows {
		for k := range width {
			eye.Data[((i*2*width)+k)*width+k] = 1
			eye.Data[((i*2*width)+width+k)*width+k] = -1
		}
	}
	return eye
}

// Minimum is the element-wise min(a, b) = a − ReLU(a − b) on the tape; its
// gradient goes to the smaller one.
func Minimum[T ad.Float](tp *ad.Tape[T], a, b *ad.Node[T]) *ad.Node[T] {
	return tp.Sub(a, tp.ReLU(tp.Sub(a, b)))
}

// Maximum is the element-wise max(a, b) = a + ReLU(b − a) on the tape.
func Maximum[T ad.Float](tp *ad.Tape[T], a, b *ad.Node[T]) *ad.Node[T] {
	return tp.Add(a, tp.ReLU(tp.Sub(b, a)))
}

// Slice records x[from:to].
func (cr *CROWN[T]) Slice(name string, x Value, from, to int) Value {
	return cr.note(cr.Interval.Slice(name, x, from, to), crownOp[T]{kind: "slice", in: []Value{x}, from: from, to: to})
}

// Concat records xs laid end to end.
func (cr *CROWN[T]) Concat(name string, xs ...Value) Value {
	return cr.note(cr.Interval.Concat(name, xs...), crownOp[T]{kind: "concat", in: xs})
}

// The remaining operators are values of their own: exact ones (Const,
// Row, Embed) and a convolution are concretised by their box.

// Conv is Interval's, concretised by its box.
func (cr *CROWN[T]) Conv(name string, x Value, w, b Tensor, in [3]int, out int, g ad.ConvGeom) Value {
	return cr.note(cr.Interval.Conv(name, x, w, b, in, out, g), crownOp[T]{kind: "box"})
}

// Const is exact.
func (cr *CROWN[T]) Const(name string, v Tensor) Value {
	return cr.note(cr.Interval.Const(name, v), crownOp[T]{kind: "box"})
}

// Row is exact.
func (cr *CROWN[T]) Row(name string, table Tensor, id, dim int) Value {
	return cr.note(cr.Interval.Row(name, table, id, dim), crownOp[T]{kind: "box"})
}

// Embed is exact.
func (cr *CROWN[T]) Embed(name string, table Tensor, rows, dim int) Value {
	return cr.note(cr.Interval.Embed(name, table, rows, dim), crownOp[T]{kind: "box"})
}

// Upper returns upper bounds [R] of lam·v over the inputs' boxes, for
// coefficients lam [R, v.Width] whose rows come in groups of R/Rows, one
// group per example (as ad.Tape.RowDot takes them); k, if not nil, is
// added. The bound is sound for every point of the boxes, whatever the
// relaxations' slopes; gradients flow into lam, the weights and the
// boxes.
func (cr *CROWN[T]) Upper(lam *ad.Node[T], v Value) *ad.Node[T] {
	tp := cr.tp
	R := lam.Value.Shape[0]
	per := R / cr.Rows
	rows := make([]int, R)
	for r := range rows {
		rows[r] = r / per
	}
	// spread gives a per-example [Rows, w] tensor one row per
	// specification.
	spread := func(x *ad.Node[T]) *ad.Node[T] { return tp.Gather(x, rows) }
	coef := make([]*ad.Node[T], v.ID)
	coef[v.ID-1] = lam
	var k *ad.Node[T]
	box := func(id int, l *ad.Node[T]) {
		c, r := cr.flat(Value{ID: id + 1, Width: l.Value.Shape[1]})
		k = tp.AddTo(k, tp.RowDot(l, c))
		if r != nil {
			k = tp.AddTo(k, tp.RowDot(tp.Abs(l), r))
		}
	}
	into := func(x Value, l *ad.Node[T]) { coef[x.ID-1] = tp.AddTo(coef[x.ID-1], l) }
	for id := v.ID - 1; id >= 0; id-- {
		l := coef[id]
		if l == nil {
			continue
		}
		op := crownOp[T]{kind: "box"}
		if id < len(cr.rec) {
			op = cr.rec[id]
		}
		switch op.kind {
		case "dense":
			into(op.in[0], tp.MatMul(l, op.w))
			if op.b != nil {
				k = tp.AddTo(k, tp.RowDot(l, tp.Reshape(op.b, 1, op.b.Value.Len())))
			}
		case "add":
			for _, x := range op.in {
				into(x, l)
			}
		case "sub":
			into(op.in[0], l)
			into(op.in[1], tp.Scale(l, -1))
		case "slice":
			w := op.in[0].Width
			parts := []*ad.Node[T]{}
			if op.from > 0 {
				parts = append(parts, tp.Const(ad.New[T](R, op.from)))
			}
			parts = append(parts, l)
			if op.to < w {
				parts = append(parts, tp.Const(ad.New[T](R, w-op.to)))
			}
			into(op.in[0], tp.Concat(1, parts...))
		case "concat":
			at := 0
			for _, x := range op.in {
				into(x, tp.Slice(l, 1, at, at+x.Width))
				at += x.Width
			}
		case "mul":
			cr.backMul(op, l, spread, into, &k)
		case "act":
			cr.backAct(op, l, into, &k)
		default: // an input, an exact value or a box
			box(id, l)
		}
	}
	if k == nil {
		return tp.Const(ad.New[T](R))
	}
	return k
}

// backMul relaxes x ⊙ y by McCormick's planes on the boxes [lx, ux] and
// [ly, uy]: x·y ≤ uy·x + lx·y − lx·uy where a coefficient is positive,
// x·y ≥ ly·x + lx·y − lx·ly where negative.
func (cr *CROWN[T]) backMul(op crownOp[T], l *ad.Node[T], spread func(*ad.Node[T]) *ad.Node[T], into func(Value, *ad.Node[T]), k **ad.Node[T]) {
	tp := cr.tp
	lx, _ := cr.ends(op.in[0])
	ly, uy := cr.ends(op.in[1])
	pos := tp.ReLU(l)
	neg := tp.Sub(l, pos)
	slx := spread(lx)
	into(op.in[0], tp.Add(tp.Mul(pos, spread(uy)), tp.Mul(neg, spread(ly))))
	into(op.in[1], tp.Mul(l, slx))
	*k = tp.AddTo(*k, tp.Scale(tp.Add(tp.RowDot(pos, tp.Mul(lx, uy)), tp.RowDot(neg, tp.Mul(lx, ly))), -1))
}

// ends returns a value's box as lower and upper ends ([Rows, Width]).
func (cr *CROWN[T]) ends(x Value) (lo, hi *ad.Node[T]) {
	c, r := cr.flat(x)
	if r == nil {
		return c, c
	}
	return cr.tp.Sub(c, r), cr.tp.Add(c, r)
}

// backAct relaxes an activation on its pre-activation box: ReLU by
// ad.Tape.RelaxReLU (the chord above, CROWN's adaptive line below), σ and
// tanh by ad.Tape.RelaxSShape (two lines of the chord's slope through the
// extremes of f(x) − s·x over the box); gradients reach the boxes through
// the lines as well as through the concretisation.
func (cr *CROWN[T]) backAct(op crownOp[T], l *ad.Node[T], into func(Value, *ad.Node[T]), k **ad.Node[T]) {
	tp := cr.tp
	lo, hi := cr.ends(op.in[0])
	var c, kk *ad.Node[T]
	switch op.act {
	case ReLU:
		c, kk = tp.RelaxReLU(l, lo, hi)
	case Sigmoid:
		c, kk = tp.RelaxSShape(ad.SigmoidShape, l, lo, hi)
	case Tanh:
		c, kk = tp.RelaxSShape(ad.TanhShape, l, lo, hi)
	default:
		panic("nn.CROWN: unknown activation " + string(op.act))
	}
	into(op.in[0], c)
	*k = tp.AddTo(*k, kk)
}
