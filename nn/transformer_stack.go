package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
)

// TransformerEncoder is PyTorch's nn.TransformerEncoder: a stack of
// encoder layers (prefix.layers.0, prefix.layers.1, …) and, if Norm is not
// nil, a final layer normalisation (prefix.norm; nn.Transformer always has
// one).
type TransformerEncoder[T ad.Float] struct {
	Layers []*TransformerEncoderLayer[T]
	Norm   *LayerNorm[T]
}

// NewTransformerEncoder returns n layers named prefix.layers.i, with the
// final normalisation prefix.norm if norm is set.
func NewTransformerEncoder[T ad.Float](prefix string, c TransformerConfig, n int, norm bool, rng *rand.Rand) *TransformerEncoder[T] {
	e := &TransformerEncoder[T]{}
	for i := 0; i < n; i++ {
		e.Layers = append(e.Layers, NewTransformerEncoderLayer[T](qualify(prefix, fmt.Sprintf("layers.%d", i)), c, rng))
	}
	if norm {
		e.Norm = newNorm[T](prefix, "norm", c)
	}
	return e
}

// Forward encodes x [S, B, Dim] with the padding flags pad [B, S] (or nil).
func (e *TransformerEncoder[T]) Forward(tp *ad.Tape[T], x *ad.Node[T], pad []bool, drop Dropout) *ad.Node[T] {
	for _, l := range e.Layers {
		x = l.Forward(tp, x, pad, drop)
	}
	return finalNorm(tp, e.Norm, x)
}

// Params lists the stack's parameters in PyTorch's state_dict order.
func (e *TransformerEncoder[T]) Params() []*ad.Param[T] {
	var ps []*ad.Param[T]
	for _, l := range e.Layers {
		ps = append(ps, l.Params()...)
	}
	return appendNorm(ps, e.Norm)
}

// TransformerDecoder is PyTorch's nn.TransformerDecoder: a stack of
// decoder layers (prefix.layers.i) and, if Norm is not nil, a final layer
// normalisation (prefix.norm).
type TransformerDecoder[T ad.Float] struct {
	Layers []*TransformerDecoderLayer[T]
	Norm   *LayerNorm[T]
}

// NewTransformerDecoder returns n layers named prefix.layers.i, with the
// final normalisation prefix.norm if norm is set.
func NewTransformerDecoder[T ad.Float](prefix string, c TransformerConfig, n int, norm bool, rng *rand.Rand) *TransformerDecoder[T] {
	d := &TransformerDecoder[T]{}
	for i := 0; i < n; i++ {
		d.Layers = append(d.Layers, NewTransformerDecoderLayer[T](qualify(prefix, fmt.Sprintf("layers.%d", i)), c, rng))
	}
	if norm {
		d.Norm = newNorm[T](prefix, "norm", c)
	}
	return d
}

// Forward decodes the whole target x [T, B, Dim] at once (causally) over
// the memory [S, B, Dim]; tgtPad [B, T] and memPad [B, S] may be nil.
func (d *TransformerDecoder[T]) Forward(tp *ad.Tape[T], x, mem *ad.Node[T], tgtPad, memPad []bool, drop Dropout) *ad.Node[T] {
	for _, l := range d.Layers {
		x = l.Forward(tp, x, mem, tgtPad, memPad, drop)
	}
	return finalNorm(tp, d.Norm, x)
}

// Params lists the stack's parameters in PyTorch's state_dict order.
func (d *TransformerDecoder[T]) Params() []*ad.Param[T] {
	var ps []*ad.Param[T]
	for _, l := range d.Layers {
		ps = append(ps, l.Params()...)
	}
	return appendNorm(ps, d.Norm)
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

func appendNorm[T ad.Float](ps []*ad.Param[T], norm *LayerNorm[T]) []*ad.Param[T] {
	if norm == nil {
		return ps
	}
	return append(ps, norm.Params()...)
}
