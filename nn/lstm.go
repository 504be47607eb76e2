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
