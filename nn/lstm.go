package nn

import (
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
	c := &LSTMCell[T]{In: in, Hidden: hidden,
		Wih: ad.NewParam[T](prefix+".weight_ih", 4*hidden, in),
		Whh: ad.NewParam[T](prefix+".weight_hh", 4*hidden, hidden),
		Bih: ad.NewParam[T](prefix+".bias_ih", 4*hidden),
		Bhh: ad.NewParam[T](prefix+".bias_hh", 4*hidden)}
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
	gates := tp.Add(tp.Linear(x, tp.Param(c.Wih), tp.Param(c.Bih)), tp.Linear(h, tp.Param(c.Whh), tp.Param(c.Bhh)))
	g := tp.Split(gates, 1, c.Hidden, c.Hidden, c.Hidden, c.Hidden)
	in, forget, cand, out := tp.Sigmoid(g[0]), tp.Sigmoid(g[1]), tp.Tanh(g[2]), tp.Sigmoid(g[3])
	cNext = tp.Add(tp.Mul(forget, cell), tp.Mul(in, cand))
	return tp.Mul(out, tp.Tanh(cNext)), cNext
}

// Params lists the layer's parameters.
func (c *LSTMCell[T]) Params() []*ad.Param[T] { return []*ad.Param[T]{c.Wih, c.Whh, c.Bih, c.Bhh} }
