package nn

import "github.com/lenspec/lenspec/ad"

// Lowering: a layer describes its computation to the verifier as a graph
// of operators, through a Builder that the verifier implements (package
// verify). Each layer's Lower sits beside its forward pass, so that what a
// layer computes and what the verifier is told it computes are read
// together; the verifier owns the operators' bound rules.

// Value is one vector of a graph under construction: the handle a
// Builder gives an operator's output. The zero Value is no vector: a
// recurrent state that is still zero (a decoder's first step).
type Value struct{ ID, Width int }

// Valid reports whether v is a vector rather than the zero Value.
func (v Value) Valid() bool { return v.Width > 0 }

// Activation names an element-wise nonlinearity the verifier has rules
// for.
type Activation string

// The activations a Builder takes.
const (
	ReLU    Activation = "relu"
	Sigmoid Activation = "sigmoid"
	Tanh    Activation = "tanh"
)

// Builder receives a computation as a graph of operators. Weights are
// float64 (a float32 weight is exact in float64) and row-major; the
// builder keeps its own copies. Names are local to the graph being built
// (a decoder step's names are prefixed by the step when it is unrolled)
// and must be unique within it. A Builder records the first problem (a
// width mismatch, an unknown activation) and returns the zero Value from
// then on; its owner reports the problem.
type Builder interface {
	// Dense is W·x + b with W [out × x.Width] (b nil: no bias).
	Dense(name string, x Value, w, b []float64, out int) Value
	// Conv is a 2-D convolution of x, shaped in = [C, H, W] (flattened in
	// that order), with weight [out, C, k, k] and bias [out].
	Conv(name string, x Value, w, b []float64, in [3]int, out int, g ad.ConvGeom) Value
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
	// Const is the constant vector v.
	Const(name string, v []float64) Value
	// Token is table[y] for the token y the previous decoder step
	// emitted (every row of table has the same width): the token fed
	// back. Only a decoder step after the first reads one.
	Token(name string, table [][]float64) Value
}

// CellInput is what a decoder cell reads at one step of a lowering: the
// vector X (the image embedding at the first step), or, with Emb set, the
// embedding Emb[y] of the token y the previous step emitted. A cell folds
// its input weights into the embedding table (W·Emb[y] per token) so that
// the verifier ranges over the tokens, not over a box around their
// embeddings.
type CellInput struct {
	X   Value
	Emb [][]float64
}

// Float64s converts a tensor's values for a Builder.
func Float64s[T ad.Float](v []T) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// fold returns W·Emb[z] (+ b) for every token z: W [rows × e] row-major,
// each embedding e wide; b nil for none.
func fold(w []float64, rows, e int, emb [][]float64, b []float64) [][]float64 {
	out := make([][]float64, len(emb))
	for z, x := range emb {
		p := make([]float64, rows)
		for j := range p {
			for k := 0; k < e; k++ {
				p[j] += w[j*e+k] * x[k]
			}
			if b != nil {
				p[j] += b[j]
			}
		}
		out[z] = p
	}
	return out
}

// sumBias returns a + b element-wise (a cell's two biases, which the
// verifier sees as one).
func sumBias[T ad.Float](a, b *ad.Param[T]) []float64 {
	out := Float64s(a.W.Data)
	for j, v := range b.W.Data {
		out[j] += float64(v)
	}
	return out
}

// Lower describes the layer to b: W·x + b.
func (l *Linear[T]) Lower(b Builder, name string, x Value) Value {
	var bias []float64
	if l.B != nil {
		bias = Float64s(l.B.W.Data)
	}
	return b.Dense(name, x, Float64s(l.W.W.Data), bias, l.Out)
}

// Lower describes the convolution to b: x shaped in = [C, H, W].
func (c *Conv2D[T]) Lower(b Builder, name string, x Value, in [3]int) Value {
	return b.Conv(name, x, Float64s(c.W.W.Data), Float64s(c.B.W.Data), in, c.Out, c.Geom)
}

// Rows returns the embedding table's rows, for a cell's CellInput.
func (e *Embedding[T]) Rows() [][]float64 {
	out := make([][]float64, e.Vocab)
	for z := range out {
		out[z] = Float64s(e.W.W.Data[z*e.Dim : (z+1)*e.Dim])
	}
	return out
}

// Scope returns a Builder that names every operator prefix.name (prefix
// alone for the name ""): a layer lowered twice into one graph, as a
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

func (s scoped) Dense(name string, x Value, w, b []float64, out int) Value {
	return s.b.Dense(s.name(name), x, w, b, out)
}

func (s scoped) Conv(name string, x Value, w, b []float64, in [3]int, out int, g ad.ConvGeom) Value {
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

func (s scoped) Const(name string, v []float64) Value { return s.b.Const(s.name(name), v) }

func (s scoped) Token(name string, table [][]float64) Value { return s.b.Token(s.name(name), table) }
