package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
)

// MultiheadAttention is PyTorch's nn.MultiheadAttention with its default
// layout: one packed input projection in_proj_weight [3·Dim, Dim] and
// in_proj_bias [3·Dim] (the query's rows, then the key's, then the
// value's), the output projection out_proj.weight [Dim, Dim] and
// out_proj.bias, Heads heads of Dim/Heads columns each, scores scaled by
// 1/√(Dim/Heads). Inputs are time-major, [T, B, Dim] (batch_first=False).
// Dropout on the attention weights is the options' (ad.AttentionOptions).
type MultiheadAttention[T ad.Float] struct {
	Dim, Heads int
	InW, InB   *ad.Param[T]
	Out        *Linear[T]
}

// NewMultiheadAttention returns the attention named prefix, initialised
// as PyTorch does: the input projection Xavier-uniform, the output
// projection U(±1/√Dim), both biases zero (zero for a nil rng). Dim must
// be a multiple of heads.
func NewMultiheadAttention[T ad.Float](prefix string, dim, heads int, rng *rand.Rand) *MultiheadAttention[T] {
	if heads < 1 || dim%heads != 0 {
		panic(fmt.Sprintf("nn.NewMultiheadAttention: %d heads for width %d", heads, dim))
	}
	m := &MultiheadAttention[T]{Dim: dim, Heads: heads,
		InW: ad.NewParam[T](qualify(prefix, "in_proj_weight"), 3*dim, dim),
		InB: ad.NewParam[T](qualify(prefix, "in_proj_bias"), 3*dim),
		Out: &Linear[T]{In: dim, Out: dim,
			W: ad.NewParam[T](qualify(prefix, "out_proj.weight"), dim, dim),
			B: ad.NewParam[T](qualify(prefix, "out_proj.bias"), dim)}}
	initUniform(m.InW, math.Sqrt(6/float64(dim+3*dim)), rng)
	initUniform(m.Out.W, 1/math.Sqrt(float64(dim)), rng)
	return m
}

// initUniform fills p with U(±bound) from rng (leaves it for a nil rng).
func initUniform[T ad.Float](p *ad.Param[T], bound float64, rng *rand.Rand) {
	if rng == nil {
		return
	}
	for i := range p.W.Data {
		p.W.Data[i] = T((2*rng.Float64() - 1) * bound)
	}
}

// Project applies parts consecutive ones of the three input projections
// (0 query, 1 key, 2 value), starting at first, to x [T, B, Dim] in one
// GEMM, and returns them [T, B, Dim] each: Project(tp, x, 0, 3) is a
// self-attention's query, key and value, Project(tp, mem, 1, 2) a
// cross-attention's keys and values of the memory.
func (m *MultiheadAttention[T]) Project(tp *ad.Tape[T], x *ad.Node[T], first, parts int) []*ad.Node[T] {
	w, b := m.Projection(tp, first, parts)
	y := tp.Linear(x, w, b)
	if parts == 1 {
		return []*ad.Node[T]{y}
	}
	sizes := make([]int, parts)
	for i := range sizes {
		sizes[i] = m.Dim
	}
	return tp.Split(y, len(y.Value.Shape)-1, sizes...)
}

// Projection is the weight and bias of parts consecutive input projections
// from first (see Project): rows of in_proj_weight and in_proj_bias, a copy
// unless all three. A decoder that projects one step at a time takes its
// query's once.
func (m *MultiheadAttention[T]) Projection(tp *ad.Tape[T], first, parts int) (w, b *ad.Node[T]) {
	if first < 0 || parts < 1 || first+parts > 3 {
		panic(fmt.Sprintf("nn.MultiheadAttention: projections %d to %d of 3", first, first+parts))
	}
	w, b = tp.Param(m.InW), tp.Param(m.InB)
	if parts < 3 {
		w = tp.Slice(w, 0, first*m.Dim, (first+parts)*m.Dim)
		b = tp.Slice(b, 0, first*m.Dim, (first+parts)*m.Dim)
	}
	return w, b
}

// Attend is the attention of projected queries q [Tq, B, Dim] over
// projected keys and values [Tk, B, Dim], through the output projection.
func (m *MultiheadAttention[T]) Attend(tp *ad.Tape[T], q, k, v *ad.Node[T], mask ad.AttentionOptions) *ad.Node[T] {
	return m.Out.Forward(tp, tp.Attention(q, k, v, m.Heads, mask))
}

// Forward is PyTorch's forward(query, key, value) for time-major inputs
// (query [Tq, B, Dim], key and value [Tk, B, Dim]) with the mask's
// key_padding_mask and causal attn_mask. A self-attention (one node for
// all three) or a key that is also the value is projected in one GEMM.
func (m *MultiheadAttention[T]) Forward(tp *ad.Tape[T], query, key, value *ad.Node[T], mask ad.AttentionOptions) *ad.Node[T] {
	var q, k, v *ad.Node[T]
	switch {
	case query == key && key == value:
		p := m.Project(tp, query, 0, 3)
		q, k, v = p[0], p[1], p[2]
	case key == value:
		q = m.Project(tp, query, 0, 1)[0]
		p := m.Project(tp, key, 1, 2)
		k, v = p[0], p[1]
	default:
		q, k, v = m.Project(tp, query, 0, 1)[0], m.Project(tp, key, 1, 1)[0], m.Project(tp, value, 2, 1)[0]
	}
	return m.Attend(tp, q, k, v, mask)
}

// Params lists the layer's parameters in PyTorch's state_dict order.
func (m *MultiheadAttention[T]) Params() []*ad.Param[T] {
	return []*ad.Param[T]{m.InW, m.InB, m.Out.W, m.Out.B}
}
