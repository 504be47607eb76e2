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

// Describe is one step of the cell on input x and state (h, cell): the
// four gates' pre-activations (Gates), then the update (LSTMUpdate). With h
// and cell the zero Value (the first step, as the verifier sees it) the
// recurrent term is its bias and the forget term is left out.
func (c *LSTMCell[T]) Describe(b Builder, x, h, cell Value) (hNext, cNext Value) {
	return c.Recur(b, c.Project(b, x), h, cell)
}

// Project is the input's part of the gates, W_ih·x + b_ih: a layer run
// over a whole sequence projects every step's input in one GEMM before
// the recurrence (Recur).
func (c *LSTMCell[T]) Project(b Builder, x Value) Value {
	return b.Dense("in", x, c.Wih, c.Bih, 4*c.Hidden)
}

// Recur is Describe from the input's projection xw (Project).
func (c *LSTMCell[T]) Recur(b Builder, xw, h, cell Value) (hNext, cNext Value) {
	return LSTMUpdate(b, c.Gates(b, xw, h), cell, c.Hidden)
}

// Gates is the gates' pre-activations [i, f, g, o] from the input's
// projection xw: xw + W_hh·h + b_hh.
func (c *LSTMCell[T]) Gates(b Builder, xw, h Value) Value {
	if !h.Valid() {
		return b.Add("gates", xw, b.Const("rec", c.Bhh))
	}
	return b.Add("gates", b.Dense("rec", h, c.Whh, c.Bhh, 4*c.Hidden), xw)
}

// lstmFuser is a Builder that runs the LSTM update as one operation (Eval:
// one kernel); ok false declines.
type lstmFuser interface {
	LSTMUpdate(gates, c Value) (h, cNext Value, ok bool)
}

// LSTMUpdate is the LSTM's update from its gates' pre-activations [i, f,
// g, o] (each hidden wide) and the cell state c: c' = σ(f)⊙c +
// σ(i)⊙tanh(g) and h' = σ(o)⊙tanh(c'). With c the zero Value the forget
// term is left out. A Builder that fuses the update (Eval) runs it as one
// kernel, which a test holds equal to these operators.
func LSTMUpdate(b Builder, gates, c Value, hidden int) (h, cNext Value) {
	if f, ok := b.(lstmFuser); ok && c.Valid() {
		if h, cNext, ok := f.LSTMUpdate(gates, c); ok {
			return h, cNext
		}
	}
	H := hidden
	gate := func(name string, k int, a Activation) Value {
		return b.Act(name, a, b.Slice(name+".pre", gates, k*H, (k+1)*H))
	}
	i, g := gate("i", 0, Sigmoid), gate("g", 2, Tanh)
	if c.Valid() {
		f := gate("f", 1, Sigmoid)
		cNext = b.Add("c", b.Mul("fc", f, c), b.Mul("ig", i, g))
	} else {
		cNext = b.Mul("c", i, g)
	}
	o := gate("o", 3, Sigmoid)
	return b.Mul("", o, b.Act("tanhc", Tanh, cNext)), cNext
}

// Forward computes the next state (h', c') from input x [B, In] and state
// h, c [B, Hidden]: Describe run on the tape.
func (c *LSTMCell[T]) Forward(tp *ad.Tape[T], x, h, cell *ad.Node[T]) (hNext, cNext *ad.Node[T]) {
	e := NewEval(tp, x.Value.Shape[0])
	hv, cv := c.Describe(e, e.Input(x), e.Input(h), e.Input(cell))
	return e.Node(hv), e.Node(cv)
}

// Step is Forward from the input's projection xw [B, 4·Hidden] (Recur).
func (c *LSTMCell[T]) Step(tp *ad.Tape[T], xw, h, cell *ad.Node[T]) (hNext, cNext *ad.Node[T]) {
	e := NewEval(tp, xw.Value.Shape[0])
	hv, cv := c.Recur(e, e.Input(xw), e.Input(h), e.Input(cell))
	return e.Node(hv), e.Node(cv)
}

// Params lists the layer's parameters.
func (c *LSTMCell[T]) Params() []*ad.Param[T] { return []*ad.Param[T]{c.Wih, c.Whh, c.Bih, c.Bhh} }
