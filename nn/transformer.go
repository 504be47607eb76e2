package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
)

// TransformerConfig is the shape of torch.nn.Transformer's layers: the
// arguments of nn.TransformerEncoderLayer and nn.TransformerDecoderLayer
// that change what a layer computes (dropout changes only training).
type TransformerConfig struct {
	// Dim is d_model, Heads nhead (a divisor of Dim), FF dim_feedforward.
	Dim, Heads, FF int
	// NormFirst puts each layer normalisation before its sublayer, inside
	// the residual branch (pre-norm); false (PyTorch's default) after the
	// residual sum (post-norm).
	NormFirst bool
	// Activation is the feed-forward block's: "relu" (PyTorch's default,
	// also for "") or "gelu" (exact, erf form).
	Activation string
	// Eps is layer_norm_eps; 0 means PyTorch's 1e-5.
	Eps float64
}

// Validate refuses a configuration no layer can be built from, naming
// PyTorch's argument.
func (c TransformerConfig) Validate() error {
	switch {
	case c.Dim < 1:
		return fmt.Errorf("transformer: d_model %d is not positive", c.Dim)
	case c.Heads < 1 || c.Dim%c.Heads != 0:
		return fmt.Errorf("transformer: nhead %d does not divide d_model %d", c.Heads, c.Dim)
	case c.FF < 1:
		return fmt.Errorf("transformer: dim_feedforward %d is not positive", c.FF)
	case c.Activation != "" && c.Activation != "relu" && c.Activation != "gelu":
		return fmt.Errorf("transformer: activation %q is neither relu nor gelu", c.Activation)
	case c.Eps < 0 || math.IsNaN(c.Eps) || math.IsInf(c.Eps, 0):
		return fmt.Errorf("transformer: layer_norm_eps %v is not a positive number", c.Eps)
	}
	return nil
}

func (c TransformerConfig) eps() float64 {
	if c.Eps == 0 {
		return 1e-5
	}
	return c.Eps
}

// mustValid panics on an invalid configuration: a caller reading one from
// a file checks it with Validate first.
func (c TransformerConfig) mustValid(who string) {
	if err := c.Validate(); err != nil {
		panic("nn." + who + ": " + err.Error())
	}
}

// Dropout is a training forward pass's dropout: probability P, masks drawn
// from Rng. The zero value, inference, drops nothing.
type Dropout struct {
	P   float64
	Rng *rand.Rand
}

// attention is o with the dropout of the attention weights (PyTorch's
// layers give their attentions their own dropout).
func (d Dropout) attention(o ad.AttentionOptions) ad.AttentionOptions {
	if d.P > 0 {
		o.Dropout, o.Rng = d.P, d.Rng
	}
	return o
}

func dropout[T ad.Float](tp *ad.Tape[T], x *ad.Node[T], d Dropout) *ad.Node[T] {
	if d.P <= 0 {
		return x
	}
	return tp.Dropout(x, d.P, d.Rng)
}

// FeedForward is a transformer layer's position-wise block,
// linear2(dropout(activation(linear1(x)))), with PyTorch's tensor names
// (prefix.linear1, prefix.linear2: the layer's own prefix).
type FeedForward[T ad.Float] struct {
	Linear1, Linear2 *Linear[T]
	// GELU selects the activation: GELU, else ReLU.
	GELU bool
}

// NewFeedForward returns the block of the layer named prefix, initialised
// as PyTorch's nn.Linear: weights and biases U(±1/√in).
func NewFeedForward[T ad.Float](prefix string, c TransformerConfig, rng *rand.Rand) *FeedForward[T] {
	c.mustValid("NewFeedForward")
	f := &FeedForward[T]{GELU: c.Activation == "gelu",
		Linear1: &Linear[T]{In: c.Dim, Out: c.FF,
			W: ad.NewParam[T](qualify(prefix, "linear1.weight"), c.FF, c.Dim),
			B: ad.NewParam[T](qualify(prefix, "linear1.bias"), c.FF)},
		Linear2: &Linear[T]{In: c.FF, Out: c.Dim,
			W: ad.NewParam[T](qualify(prefix, "linear2.weight"), c.Dim, c.FF),
			B: ad.NewParam[T](qualify(prefix, "linear2.bias"), c.Dim)}}
	for _, l := range []*Linear[T]{f.Linear1, f.Linear2} {
		for _, p := range l.Params() {
			initUniform(p, 1/math.Sqrt(float64(l.In)), rng)
		}
	}
	return f
}

// Forward applies the block to x [..., Dim].
func (f *FeedForward[T]) Forward(tp *ad.Tape[T], x *ad.Node[T], drop Dropout) *ad.Node[T] {
	var h *ad.Node[T]
	if f.GELU {
		h = tp.GELU(f.Linear1.Forward(tp, x))
	} else {
		h = f.Linear1.ForwardReLU(tp, x)
	}
	return f.Linear2.Forward(tp, dropout(tp, h, drop))
}

// Params lists the block's parameters.
func (f *FeedForward[T]) Params() []*ad.Param[T] {
	return append(f.Linear1.Params(), f.Linear2.Params()...)
}

// residual is one sublayer with its residual connection and layer
// normalisation: norm(x + dropout(f(x))) after (post-norm) or
// x + dropout(f(norm(x))) before (pre-norm).
func residual[T ad.Float](tp *ad.Tape[T], normFirst bool, norm *LayerNorm[T], x *ad.Node[T], drop Dropout, f func(*ad.Node[T]) *ad.Node[T]) *ad.Node[T] {
	if normFirst {
		return tp.Add(x, dropout(tp, f(norm.Forward(tp, x)), drop))
	}
	return norm.Forward(tp, tp.Add(x, dropout(tp, f(x), drop)))
}

// TransformerEncoderLayer is PyTorch's nn.TransformerEncoderLayer:
// self-attention (prefix.self_attn) and the feed-forward block
// (prefix.linear1, prefix.linear2), each with its residual connection and
// layer normalisation (prefix.norm1, prefix.norm2).
type TransformerEncoderLayer[T ad.Float] struct {
	Config       TransformerConfig
	SelfAttn     *MultiheadAttention[T]
	FF           *FeedForward[T]
	Norm1, Norm2 *LayerNorm[T]
}

// NewTransformerEncoderLayer returns the layer named prefix ("" for
// PyTorch's names of a lone layer), initialised as PyTorch's. It panics on
// a configuration Validate refuses.
func NewTransformerEncoderLayer[T ad.Float](prefix string, c TransformerConfig, rng *rand.Rand) *TransformerEncoderLayer[T] {
	c.mustValid("NewTransformerEncoderLayer")
	return &TransformerEncoderLayer[T]{Config: c,
		SelfAttn: NewMultiheadAttention[T](qualify(prefix, "self_attn"), c.Dim, c.Heads, rng),
		FF:       NewFeedForward[T](prefix, c, rng),
		Norm1:    newNorm[T](prefix, "norm1", c), Norm2: newNorm[T](prefix, "norm2", c)}
}

func newNorm[T ad.Float](prefix, name string, c TransformerConfig) *LayerNorm[T] {
	n := NewLayerNorm[T](qualify(prefix, name), c.Dim)
	n.Eps = c.eps()
	return n
}

// Forward encodes x [S, B, Dim]; pad, if not nil, flags the padding
// positions [B, S] (src_key_padding_mask), which no position attends to.
func (l *TransformerEncoderLayer[T]) Forward(tp *ad.Tape[T], x *ad.Node[T], pad []bool, drop Dropout) *ad.Node[T] {
	nf := l.Config.NormFirst
	x = residual(tp, nf, l.Norm1, x, drop, func(h *ad.Node[T]) *ad.Node[T] {
		return l.SelfAttn.Forward(tp, h, h, h, drop.attention(ad.AttentionOptions{KeyPad: pad}))
	})
	return residual(tp, nf, l.Norm2, x, drop, func(h *ad.Node[T]) *ad.Node[T] { return l.FF.Forward(tp, h, drop) })
}

// Params lists the layer's parameters in PyTorch's state_dict order.
func (l *TransformerEncoderLayer[T]) Params() []*ad.Param[T] {
	ps := append(l.SelfAttn.Params(), l.FF.Params()...)
	return append(append(ps, l.Norm1.Params()...), l.Norm2.Params()...)
}

// TransformerDecoderLayer is PyTorch's nn.TransformerDecoderLayer: causal
// self-attention (prefix.self_attn), attention over the encoder's memory
// (prefix.multihead_attn) and the feed-forward block (prefix.linear1,
// prefix.linear2), each with its residual connection and layer
// normalisation (prefix.norm1, norm2, norm3).
type TransformerDecoderLayer[T ad.Float] struct {
	Config              TransformerConfig
	SelfAttn, CrossAttn *MultiheadAttention[T]
	FF                  *FeedForward[T]
	Norm1, Norm2, Norm3 *LayerNorm[T]
}

// NewTransformerDecoderLayer returns the layer named prefix ("" for
// PyTorch's names of a lone layer), initialised as PyTorch's. It panics on
// a configuration Validate refuses.
func NewTransformerDecoderLayer[T ad.Float](prefix string, c TransformerConfig, rng *rand.Rand) *TransformerDecoderLayer[T] {
	c.mustValid("NewTransformerDecoderLayer")
	return &TransformerDecoderLayer[T]{Config: c,
		SelfAttn:  NewMultiheadAttention[T](qualify(prefix, "self_attn"), c.Dim, c.Heads, rng),
		CrossAttn: NewMultiheadAttention[T](qualify(prefix, "multihead_attn"), c.Dim, c.Heads, rng),
		FF:        NewFeedForward[T](prefix, c, rng),
		Norm1:     newNorm[T](prefix, "norm1", c), Norm2: newNorm[T](prefix, "norm2", c), Norm3: newNorm[T](prefix, "norm3", c)}
}

// Params lists the layer's parameters in PyTorch's state_dict order.
func (l *TransformerDecoderLayer[T]) Params() []*ad.Param[T] {
	ps := append(l.SelfAttn.Params(), l.CrossAttn.Params()...)
	ps = append(ps, l.FF.Params()...)
	return append(append(append(ps, l.Norm1.Params()...), l.Norm2.Params()...), l.Norm3.Params()...)
}

// Forward decodes the whole target x [T, B, Dim] at once (teacher
// forcing), each position attending to itself and those before it (the
// causal tgt_mask) and to the memory [S, B, Dim]. tgtPad [B, T] and memPad
// [B, S], if not nil, flag padding positions (tgt_key_padding_mask,
// memory_key_padding_mask).
func (l *TransformerDecoderLayer[T]) Forward(tp *ad.Tape[T], x, mem *ad.Node[T], tgtPad, memPad []bool, drop Dropout) *ad.Node[T] {
	self := func(h *ad.Node[T]) *ad.Node[T] {
		return l.SelfAttn.Forward(tp, h, h, h, drop.attention(ad.AttentionOptions{Causal: true, KeyPad: tgtPad}))
	}
	kv := l.CrossAttn.Project(tp, mem, 1, 2)
	cross := func(h *ad.Node[T]) *ad.Node[T] {
		q := l.CrossAttn.Project(tp, h, 0, 1)[0]
		return l.CrossAttn.Attend(tp, q, kv[0], kv[1], drop.attention(ad.AttentionOptions{KeyPad: memPad}))
	}
	return l.block(tp, x, self, cross, drop)
}

// block is the layer's three sublayers around their attentions (self over
// the target, cross over the memory): each with its residual connection
// and normalisation, then the feed-forward block.
func (l *TransformerDecoderLayer[T]) block(tp *ad.Tape[T], x *ad.Node[T], self, cross func(*ad.Node[T]) *ad.Node[T], drop Dropout) *ad.Node[T] {
	nf := l.Config.NormFirst
	x = residual(tp, nf, l.Norm1, x, drop, self)
	x = residual(tp, nf, l.Norm2, x, drop, cross)
	return residual(tp, nf, l.Norm3, x, drop, func(h *ad.Node[T]) *ad.Node[T] { return l.FF.Forward(tp, h, drop) })
}

// DecoderLayerCache is what a TransformerDecoderLayer keeps between the steps
// of greedy decoding: the self-attention's keys and values of every step
// so far, and the memory's keys and values, projected once. A step then
// costs O(t) for the t steps before it, not the O(t²) of decoding the
// whole prefix again. A cache holds nodes of the tape it was started on.
type DecoderLayerCache[T ad.Float] struct {
	// K and V are the self-attention's keys and values [t, B, Dim] (nil
	// before the first step).
	K, V *ad.Steps[T]
	// MemK and MemV are the memory's keys and values [S, B, Dim]; MemPad
	// its padding flags [B, S] or nil.
	MemK, MemV *ad.Node[T]
	MemPad     []bool
	// qw and qb are the memory attention's query projection, sliced from
	// in_proj once, not at every step.
	qw, qb *ad.Node[T]
	// Capacity is the number of steps the key and value buffers are
	// allocated for (they grow past it, by copying).
	Capacity int
}

// Start returns the cache before the first step: the memory [S, B, Dim]
// projected to keys and values, no steps, buffers for capacity steps (the
// decoding's step cap).
func (l *TransformerDecoderLayer[T]) Start(tp *ad.Tape[T], mem *ad.Node[T], memPad []bool, capacity int) *DecoderLayerCache[T] {
	kv := l.CrossAttn.Project(tp, mem, 1, 2)
	qw, qb := l.CrossAttn.Projection(tp, 0, 1)
	return &DecoderLayerCache[T]{MemK: kv[0], MemV: kv[1], MemPad: memPad, qw: qw, qb: qb, Capacity: capacity}
}

// Step decodes the next steps x [n, B, Dim] (or one step, [B, Dim]) after
// those in c, and returns their outputs, shaped as x, and the cache with
// them appended. n = 1 is a greedy step; its outputs equal those of
// Forward on the whole sequence at the same positions. Steps have no
// target padding: a batch row that finished is dropped (Rows) or decoded
// on.
func (l *TransformerDecoderLayer[T]) Step(tp *ad.Tape[T], x *ad.Node[T], c *DecoderLayerCache[T], drop Dropout) (*ad.Node[T], *DecoderLayerCache[T]) {
	shape := x.Value.Shape
	if len(shape) == 2 {
		x = tp.Reshape(x, 1, shape[0], shape[1])
	}
	next := *c
	self := func(h *ad.Node[T]) *ad.Node[T] {
		p := l.SelfAttn.Project(tp, h, 0, 3)
		next.K = tp.AppendSteps(c.K, p[1], c.Capacity)
		next.V = tp.AppendSteps(c.V, p[2], c.Capacity)
		return l.SelfAttn.Attend(tp, p[0], next.K.Node, next.V.Node, drop.attention(ad.AttentionOptions{Causal: true}))
	}
	cross := func(h *ad.Node[T]) *ad.Node[T] {
		q := tp.Linear(h, c.qw, c.qb)
		return l.CrossAttn.Attend(tp, q, c.MemK, c.MemV, drop.attention(ad.AttentionOptions{KeyPad: c.MemPad}))
	}
	y := l.block(tp, x, self, cross, drop)
	if len(shape) == 2 {
		y = tp.Reshape(y, shape...)
	}
	return y, &next
}

// Rows returns the cache of the batch rows idx (with gradient): the
// decoder contract's State.Rows, for dropping finished rows or repeating
// one.
func (c *DecoderLayerCache[T]) Rows(tp *ad.Tape[T], idx []int) *DecoderLayerCache[T] {
	next := &DecoderLayerCache[T]{Capacity: c.Capacity, qw: c.qw, qb: c.qb,
		MemK: batchRows(tp, c.MemK, idx), MemV: batchRows(tp, c.MemV, idx)}
	if c.MemPad != nil {
		s := len(c.MemPad) / c.MemK.Value.Shape[1]
		for _, i := range idx {
			next.MemPad = append(next.MemPad, c.MemPad[i*s:(i+1)*s]...)
		}
	}
	if c.K != nil {
		next.K = tp.AppendSteps(nil, batchRows(tp, c.K.Node, idx), c.Capacity)
		next.V = tp.AppendSteps(nil, batchRows(tp, c.V.Node, idx), c.Capacity)
	}
	return next
}

// batchRows gathers the batch rows idx of a time-major x [T, B, D].
func batchRows[T ad.Float](tp *ad.Tape[T], x *ad.Node[T], idx []int) *ad.Node[T] {
	t, b, d := x.Value.Shape[0], x.Value.Shape[1], x.Value.Shape[2]
	ids := make([]int, 0, t*len(idx))
	for s := 0; s < t; s++ {
		for _, i := range idx {
			ids = append(ids, s*b+i)
		}
	}
	return tp.Reshape(tp.Gather(tp.Reshape(x, t*b, d), ids), t, len(idx), d)
}
