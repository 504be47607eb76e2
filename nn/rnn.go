package nn

import (
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
)

// RNNCell is the vanilla recurrent cell with ReLU activation,
//
//	h' = ReLU(W_ih·i + b_ih + W_hh·h + b_hh),
//
// laid out as PyTorch's nn.RNNCell(nonlinearity="relu"). Only affine maps and
// ReLU: the verifier encodes it exactly.
type RNNCell[T ad.Float] struct {
	In, Hidden         int
	Wih, Whh, Bih, Bhh *ad.Param[T]
}

// NewRNNCell returns a cell named prefix, initialised from rng.
func NewRNNCell[T ad.Float](prefix string, in, hidden int, rng *rand.Rand) *RNNCell[T] {
	c := &RNNCell[T]{In: in, Hidden: hidden,
		Wih: ad.NewParam[T](prefix+".weight_ih", hidden, in),
		Whh: ad.NewParam[T](prefix+".weight_hh", hidden, hidden),
		Bih: ad.NewParam[T](prefix+".bias_ih", hidden),
		Bhh: ad.NewParam[T](prefix+".bias_hh", hidden)}
	initHe(c.Wih, in, rng)
	initHe(c.Whh, hidden, rng)
	return c
}

// Forward computes the next hidden state from input i [B, In] and h [B, Hidden].
func (c *RNNCell[T]) Forward(tp *ad.Tape[T], i, h *ad.Node[T]) *ad.Node[T] {
	pre := tp.Add(tp.Linear(i, tp.Param(c.Wih), tp.Param(c.Bih)), tp.Linear(h, tp.Param(c.Whh), tp.Param(c.Bhh)))
	return tp.ReLU(pre)
}

// Params lists the layer's parameters.
func (c *RNNCell[T]) Params() []*ad.Param[T] { return []*ad.Param[T]{c.Wih, c.Whh, c.Bih, c.Bhh} }

// Interval propagates a box through the cell: the input box (centre ci,
// radius ri; ri nil for an exact input such as a token's embedding) and
// the state box (ch, rh) map to the box of h' by the interval rule of
// each affine map and of ReLU (differentiable, for certified training).
func (c *RNNCell[T]) Interval(tp *ad.Tape[T], ci, ri, ch, rh *ad.Node[T]) (*ad.Node[T], *ad.Node[T]) {
	mid, rad := c.PreInterval(tp, ci, ri, ch, rh)
	return ReLUInterval(tp, mid, rad)
}

// PreInterval is Interval before the ReLU: the box of the pre-activation
// W_ih·i + b_ih + W_hh·h + b_hh, whose bounds linear relaxations of the
// ReLU need.
func (c *RNNCell[T]) PreInterval(tp *ad.Tape[T], ci, ri, ch, rh *ad.Node[T]) (mid, rad *ad.Node[T]) {
	mid = tp.Add(tp.Linear(ci, tp.Param(c.Wih), tp.Param(c.Bih)), tp.Linear(ch, tp.Param(c.Whh), tp.Param(c.Bhh)))
	rad = tp.Linear(rh, tp.Abs(tp.Param(c.Whh)), nil)
	if ri != nil {
		rad = tp.Add(rad, tp.Linear(ri, tp.Abs(tp.Param(c.Wih)), nil))
	}
	return mid, rad
}

// Lower describes one step of the cell to b, h' = ReLU(W_ih·x + W_hh·h +
// b_ih + b_hh), and returns h'. With h the zero Value (the first step) the
// recurrent term is left out; the token fed back (in.Emb) is one
// operator, W_ih·Emb[y], after the recurrent term's.
func (c *RNNCell[T]) Lower(b Builder, in CellInput, h Value) Value {
	wih, bias := Float64s(c.Wih.W.Data), sumBias(c.Bih, c.Bhh)
	if !h.Valid() {
		return b.Act("", ReLU, b.Dense("pre", in.X, wih, bias, c.Hidden))
	}
	rec := b.Dense("rec", h, Float64s(c.Whh.W.Data), bias, c.Hidden)
	var x Value
	if in.Emb != nil {
		x = b.Token("token", fold(wih, c.Hidden, c.In, in.Emb, nil))
	} else {
		x = b.Dense("in", in.X, wih, nil, c.Hidden)
	}
	return b.Act("", ReLU, b.Add("pre", rec, x))
}
