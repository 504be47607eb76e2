package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
)

// Stack is a stack of transformer layers as PyTorch's
// nn.TransformerEncoder and nn.TransformerDecoder hold them: the layers
// (prefix.layers.0, prefix.layers.1, …) and, if Norm is not nil, a final
// layer normalisation (prefix.norm; nn.Transformer always has one).
type Stack[T ad.Float, L interface{ Params() []*ad.Param[T] }] struct {
	Layers []L
	Norm   *LayerNorm[T]
}

// newStack returns n layers built by build under the names
// prefix.layers.i, and the final normalisation prefix.norm if norm is set.
func newStack[T ad.Float, L interface{ Params() []*ad.Param[T] }](prefix string, c TransformerConfig, n int, norm bool, build func(name string) L) Stack[T, L] {
	s := Stack[T, L]{Layers: make([]L, n)}
	for i := range s.Layers {
		s.Layers[i] = build(qualify(prefix, fmt.Sprintf("layers.%d", i)))
	}
	if norm {
		s.Norm = newNorm[T](prefix, "norm", c)
	}
	return s
}

// Params lists the stack's parameters in PyTorch's state_dict order.
func (s *Stack[T, L]) Params() []*ad.Param[T] {
	var ps []*ad.Param[T]
	for _, l := range s.Layers {
		ps = append(ps, l.Params()...)
	}
	if s.Norm != nil {
		ps = append(ps, s.Norm.Params()...)
	}
	return ps
}

// TransformerEncoder is PyTorch's nn.TransformerEncoder: a Stack of
// encoder layers.
type TransformerEncoder[T ad.Float] struct {
	Stack[T, *TransformerEncoderLayer[T]]
}

// NewTransformerEncoder returns n layers named prefix.layers.i, with the
// final normalisation prefix.norm if norm is set.
func NewTransformerEncoder[T ad.Float](prefix string, c TransformerConfig, n int, norm bool, rng *rand.Rand) *TransformerEncoder[T] {
	return &TransformerEncoder[T]{newStack(prefix, c, n, norm, func(name string) *TransformerEncoderLayer[T] {
		return NewTransformerEncoderLayer[T](name, c, rng)
	})}
}

// Forward encodes x [S, B, Dim] with the padding flags pad [B, S] (or nil).
func (e *TransformerEncoder[T]) Forward(tp *ad.Tape[T], x *ad.Node[T], pad []bool, drop Dropout) *ad.Node[T] {
	for _, l := range e.Layers {
		x = l.Forward(tp, x, pad, drop)
	}
	return finalNorm(tp, e.Norm, x)
}

// TransformerDecoder is PyTorch's nn.TransformerDecoder: a Stack of
// decoder layers.
type TransformerDecoder[T ad.Float] struct {
	Stack[T, *TransformerDecoderLayer[T]]
}

// NewTransformerDecoder returns n layers named prefix.layers.i, with the
// final normalisation prefix.norm if norm is set.
func NewTransformerDecoder[T ad.Float](prefix string, c TransformerConfig, n int, norm bool, rng *rand.Rand) *TransformerDecoder[T] {
	return &TransformerDecoder[T]{newStack(prefix, c, n, norm, func(name string) *TransformerDecoderLayer[T] {
		return NewTransformerDecoderLayer[T](name, c, rng)
	})}
}

// Forward decodes the whole target x [T, B, Dim] at once (causally) over
// the memory [S, B, Dim]; tgtPad [B, T] and memPad [B, S] may be nil.
func (d *TransformerDecoder[T]) Forward(tp *ad.Tape[T], x, mem *ad.Node[T], tgtPad, memPad []bool, drop Dropout) *ad.Node[T] {
	for _, l := range d.Layers {
		x = l.Forward(tp, x, mem, tgtPad, memPad, drop)
	}
	return finalNorm(tp, d.Norm, x)
}

// DecoderCache is a TransformerDecoder's state between greedy steps: each
// layer's cache.
type DecoderCache[T ad.Float] struct{ Layers []*DecoderLayerCache[T] }

// Start returns the caches before the first step over the memory [S, B,
// Dim], with buffers for capacity steps.
func (d *TransformerDecoder[T]) Start(tp *ad.Tape[T], mem *ad.Node[T], memPad []bool, capacity int) *DecoderCache[T] {
	c := &DecoderCache[T]{}
	for _, l := range d.Layers {
		c.Layers = append(c.Layers, l.Start(tp, mem, memPad, capacity))
	}
	return c
}

// Step decodes the next steps x [n, B, Dim] (or one, [B, Dim]) after those
// in c: their outputs, shaped as x, equal Forward's at their positions.
func (d *TransformerDecoder[T]) Step(tp *ad.Tape[T], x *ad.Node[T], c *DecoderCache[T], drop Dropout) (*ad.Node[T], *DecoderCache[T]) {
	next := &DecoderCache[T]{Layers: make([]*DecoderLayerCache[T], len(d.Layers))}
	for i, l := range d.Layers {
		x, next.Layers[i] = l.Step(tp, x, c.Layers[i], drop)
	}
	return finalNorm(tp, d.Norm, x), next
}

// Rows returns the caches of the batch rows idx (State.Rows).
func (c *DecoderCache[T]) Rows(tp *ad.Tape[T], idx []int) *DecoderCache[T] {
	next := &DecoderCache[T]{Layers: make([]*DecoderLayerCache[T], len(c.Layers))}
	for i, l := range c.Layers {
		next.Layers[i] = l.Rows(tp, idx)
	}
	return next
}

func finalNorm[T ad.Float](tp *ad.Tape[T], norm *LayerNorm[T], x *ad.Node[T]) *ad.Node[T] {
	if norm == nil {
		return x
	}
	return norm.Forward(tp, x)
}
