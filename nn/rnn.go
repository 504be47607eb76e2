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

// Describe is one step of the cell, h' = ReLU(W_ih·x + b_ih + W_hh·h +
// b_hh). With h the zero Value (the first step, as the verifier sees it)
// the recurrent term is its bias.
//
// The recurrent term is described before the input's: the verifier keeps a
// parent domain's bounds for the operators before a step's token term,
// so the recurrent Dense is not bounded again per branch.
func (c *RNNCell[T]) Describe(b Builder, x, h Value) Value {
	var rec Value
	if h.Valid() {
		rec = b.Dense("rec", h, c.Whh, c.Bhh, c.Hidden)
	} else {
		rec = b.Const("rec", c.Bhh)
	}
	return b.Act("", ReLU, b.Add("pre", b.Dense("in", x, c.Wih, c.Bih, c.Hidden), rec))
}

// Forward computes the next hidden state from input x [B, In] and h [B,
// Hidden]: Describe run on the tape.
func (c *RNNCell[T]) Forward(tp *ad.Tape[T], x, h *ad.Node[T]) *ad.Node[T] {
	e := NewEval(tp, x.Value.Shape[0])
	return e.Node(c.Describe(e, e.Input(x), e.Input(h)))
}

// Params lists the layer's parameters.
func (c *RNNCell[T]) Params() []*ad.Param[T] { return []*ad.Param[T]{c.Wih, c.Whh, c.Bih, c.Bhh} }
