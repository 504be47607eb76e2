package nn

import (
	"github.com/lenspec/lenspec/ad"
)

// A layer is written once, as a description: a function of its inputs that
// applies the operators of a Builder to them. Interpreters give the
// description its meanings: Eval runs it on an autodiff tape (training,
// decoding, replay in float64), Interval propagates boxes through it on a
// tape (certified training), and the verifier records it as a graph of its
// operators, whose bound rules are package verify's. A new layer is one
// description here; a new operator is a Builder method, one rule per
// interpreter.

// Value is one vector per example of a computation being described: the
// handle a Builder gives an operator's output. The zero Value is no vector:
// a recurrent state that is still zero (a decoder's first step, as the
// verifier describes it).
type Value struct{ ID, Width int }

// Valid reports whether v is a vector rather than the zero Value.
func (v Value) Valid() bool { return v.Width > 0 }

// Activation names an element-wise nonlinearity.
type Activation string

// The activations a Builder takes.
const (
	ReLU    Activation = "relu"
	Sigmoid Activation = "sigmoid"
	Tanh    Activation = "tanh"
)

// Tensor is a parameter as a description hands it to a Builder: the
// layer's own *ad.Param, which the tape interpreters differentiate, or
// fixed Values. Values are row-major; the verifier reads them as float64
// (every float32 is exact in float64).
type Tensor interface {
	// Float64s returns a copy of the values as float64.
	Float64s() []float64
}

// Values is a fixed Tensor: a constant a description builds itself.
type Values []float64

// Float64s returns a copy of v.
func (v Values) Float64s() []float64 { return append([]float64(nil), v...) }

// param returns p as a Tensor, nil for a nil parameter (a layer without
// a bias), so that a Builder can test the bias against nil.
func param[T ad.Float](p *ad.Param[T]) Tensor {
	if p == nil {
		return nil
	}
	return p
}

// Builder receives a description. Names are local to the computation being
// described (a decoder step's names are prefixed by the step when the
// verifier unrolls it) and must be unique within it. A Builder records the
// first problem (a width mismatch, an unknown activation) and returns the
// zero Value from then on; its owner reports the problem.
type Builder interface {
	// Dense is W·x + b with W [out × x.Width] (b nil: no bias).
	Dense(name string, x Value, w, b Tensor, out int) Value
	// Conv is a 2-D convolution of x, shaped in = [C, H, W] (flattened in
	// that order), with weight [out, C, k, k] and bias [out].
	Conv(name string, x Value, w, b Tensor, in [3]int, out int, g ad.ConvGeom) Value
	// Add is the element-wise sum of xs (all the same width).
	Add(name string, xs ...Value) Value
	// Sub is x − y.
	Sub(name string, x, y Value) Value
	// Mul is the element-wise product x ⊙ y.
	Mul(name string, x, y Value) Value
	// Act applies an activation element-wise.
	Act(name string, a Activation, x Value) Value
	// Concat is xs laid end to end: a state that grows by a vector per
	// step (a cache of the tokens emitted so far) appends it so.
	Concat(name string, xs ...Value) Value
	// Slice is x[from:to].
	Slice(name string, x Value, from, to int) Value
	// Const is the constant vector v, the same for every example.
	Const(name string, v Tensor) Value
	// Row is row id of table [·, dim], the same for every example (a start
	// token's embedding).
	Row(name string, table Tensor, id, dim int) Value
	// Embed is table[y] for the token y the previous decoder step emitted,
	// one of table's first rows rows (each dim wide): the token fed back.
	// Only a decoder step after the first reads one.
	Embed(name string, table Tensor, rows, dim int) Value
	// Dropout is x with a share of its values zeroed and the rest scaled up
	// while training, x itself otherwise.
	Dropout(name string, x Value) Value
}

// Scope returns a Builder that names every operator prefix.name (prefix
// alone for the name ""): a layer described twice into one graph, as a
// decoder's cell run once in its encoder, keeps its names apart.
func Scope(b Builder, prefix string) Builder { return scoped{b, prefix} }

type scoped struct {
	b      Builder
	prefix string
}

func (s scoped) name(n string) string {
	if n == "" {
		return s.prefix
	}
	return s.prefix + "." + n
}

func (s scoped) Dense(name string, x Value, w, b Tensor, out int) Value {
	return s.b.Dense(s.name(name), x, w, b, out)
}

func (s scoped) Conv(name string, x Value, w, b Tensor, in [3]int, out int, g ad.ConvGeom) Value {
	return s.b.Conv(s.name(name), x, w, b, in, out, g)
}

func (s scoped) Add(name string, xs ...Value) Value { return s.b.Add(s.name(name), xs...) }

func (s scoped) Sub(name string, x, y Value) Value { return s.b.Sub(s.name(name), x, y) }

func (s scoped) Mul(name string, x, y Value) Value { return s.b.Mul(s.name(name), x, y) }

func (s scoped) Act(name string, a Activation, x Value) Value { return s.b.Act(s.name(name), a, x) }

func (s scoped) Concat(name string, xs ...Value) Value { return s.b.Concat(s.name(name), xs...) }

func (s scoped) Slice(name string, x Value, from, to int) Value {
	return s.b.Slice(s.name(name), x, from, to)
}

func (s scoped) Const(name string, v Tensor) Value { return s.b.Const(s.name(name), v) }

func (s scoped) Row(name string, table Tensor, id, dim int) Value {
	return s.b.Row(s.name(name), table, id, dim)
}

func (s scoped) Embed(name string, table Tensor, rows, dim int) Value {
	return s.b.Embed(s.name(name), table, rows, dim)
}

func (s scoped) Dropout(name string, x Value) Value { return s.b.Dropout(s.name(name), x) }

// LSTMUpdate is the fused LSTM update that Eval runs as one kernel (see
// lstmUpdate); other Builders take the operators.
func (s scoped) LSTMUpdate(gates, c Value) (Value, Value, bool) {
	if f, ok := s.b.(lstmFuser); ok {
		return f.LSTMUpdate(gates, c)
	}
	return Value{}, Value{}, false
}
