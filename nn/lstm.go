package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
)

// LSTMCell is the long short-term memory cell laid out as PyTorch's
// nn.LSTMCell: W_ih [4·Hidden, In], W_hh [4·Hidden, Hidden] and both biases
// hold the gates in the order i, f, g, o, so
//
//	(i, f, g, o) = split₄(W_ih·x + b_ih + W_hh·h + b_hh)
//	c' = σ(f)⊙c + σ(i)⊙tanh(g),  h' = σ(o)⊙tanh(c').
//
// One GEMM per input computes all four gates, as PyTorch and cuDNN do.
type LSTMCell[T ad.Float] struct {
	In, Hidden         int
	Wih, Whh, Bih, Bhh *ad.Param[T]
}

// NewLSTMCell returns a cell named prefix with PyTorch's default
// initialisation, U(±1/√Hidden) for every weight and bias (He
// initialisation is for ReLU layers; the gates saturate instead).
func NewLSTMCell[T ad.Float](prefix string, in, hidden int, rng *rand.Rand) *LSTMCell[T] {
	return newLSTMCell[T](prefix, "", in, hidden, rng)
}

// NewLSTMLayerCell returns the cell of one layer and direction of a
// PyTorch nn.LSTM named prefix: tensors prefix.weight_ih_l{layer} and so
// on, with the suffix _reverse for the backward direction of a
// bidirectional LSTM.
func NewLSTMLayerCell[T ad.Float](prefix string, layer int, reverse bool, in, hidden int, rng *rand.Rand) *LSTMCell[T] {
	suffix := fmt.Sprintf("_l%d", layer)
	if reverse {
		suffix += "_reverse"
	}
	return newLSTMCell[T](prefix, suffix, in, hidden, rng)
}

func newLSTMCell[T ad.Float](prefix, suffix string, in, hidden int, rng *rand.Rand) *LSTMCell[T] {
	c := &LSTMCell[T]{In: in, Hidden: hidden,
		Wih: ad.NewParam[T](prefix+".weight_ih"+suffix, 4*hidden, in),
		Whh: ad.NewParam[T](prefix+".weight_hh"+suffix, 4*hidden, hidden),
		Bih: ad.NewParam[T](prefix+".bias_ih"+suffix, 4*hidden),
		Bhh: ad.NewParam[T](prefix+".bias_hh"+suffix, 4*hidden)}
	if rng != nil {
		b := 1 / math.Sqrt(float64(hidden))
		for _, p := range c.Params() {
			for i := range p.W.Data {
				p.W.Data[i] = T((2*rng.Float64() - 1) * b)
			}
		}
	}
	return c
}

// Forward computes the next state (h', c') from input x [B, In] and state
// h, c [B, Hidden].
func (c *LSTMCell[T]) Forward(tp *ad.Tape[T], x, h, cell *ad.Node[T]) (hNext, cNext *ad.Node[T]) {
	return c.Step(tp, tp.Linear(x, tp.Param(c.Wih), tp.Param(c.Bih)), h, cell)
}

// Step is Forward with the input's projection W_ih·x + b_ih already
// computed (xw [B, 4·Hidden]): a layer run over a whole sequence projects
// every step's input in one GEMM before the recurrence.
func (c *LSTMCell[T]) Step(tp *ad.Tape[T], xw, h, cell *ad.Node[T]) (hNext, cNext *ad.Node[T]) {
	gates := tp.Add(xw, tp.Linear(h, tp.Param(c.Whh), tp.Param(c.Bhh)))
	return tp.LSTMCell(gates, cell)
}

// Params lists the layer's parameters.
func (c *LSTMCell[T]) Params() []*ad.Param[T] { return []*ad.Param[T]{c.Wih, c.Whh, c.Bih, c.Bhh} }

// Lower describes one step of the cell to b and returns (h', c'): the
// gates as one operator over all four (the recurrent term, then the input
// term: W_ih·x, or the token fed back, W_ih·Emb[y]), sliced into i, f, g,
// o; c' = σ(f)⊙c + σ(i)⊙tanh(g) and h' = σ(o)⊙tanh(c') as products. With
// h and cell the zero Value (the first step) the recurrent and forget
// terms are left out.
func (c *LSTMCell[T]) Lower(b Builder, in CellInput, h, cell Value) (hNext, cNext Value) {
	H := c.Hidden
	wih, bias := Float64s(c.Wih.W.Data), sumBias(c.Bih, c.Bhh)
	var gates Value
	if !h.Valid() {
		gates = b.Dense("gates", in.X, wih, bias, 4*H)
	} else {
		rec := b.Dense("rec", h, Float64s(c.Whh.W.Data), bias, 4*H)
		var x Value
		if in.Emb != nil {
			x = b.Token("token", fold(wih, 4*H, c.In, in.Emb, nil))
		} else {
			x = b.Dense("in", in.X, wih, nil, 4*H)
		}
		gates = b.Add("gates", rec, x)
	}
	gate := func(name string, k int, a Activation) Value {
		return b.Act(name, a, b.Slice(name+".pre", gates, k*H, (k+1)*H))
	}
	i, g := gate("i", 0, Sigmoid), gate("g", 2, Tanh)
	if cell.Valid() {
		f := gate("f", 1, Sigmoid)
		cNext = b.Add("c", b.Mul("fc", f, cell), b.Mul("ig", i, g))
	} else {
		cNext = b.Mul("c", i, g)
	}
	o := gate("o", 3, Sigmoid)
	return b.Mul("", o, b.Act("tanhc", Tanh, cNext)), cNext
}
