package nn

import (
	"math"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
)

// GRUCell is the gated recurrent unit laid out as PyTorch's nn.GRUCell:
// W_ih [3·Hidden, In], W_hh [3·Hidden, Hidden] and both biases hold the
// gates in the order r, z, n, so
//
//	r = σ(W_ir·x + b_ir + W_hr·h + b_hr)
//	z = σ(W_iz·x + b_iz + W_hz·h + b_hz)
//	n = tanh(W_in·x + b_in + r⊙(W_hn·h + b_hn))
//	h' = (1 − z)⊙n + z⊙h.
//
// One GEMM per input computes all three gates' terms.
type GRUCell[T ad.Float] struct {
	In, Hidden         int
	Wih, Whh, Bih, Bhh *ad.Param[T]
}

// NewGRUCell returns a cell named prefix with PyTorch's default
// initialisation, U(±1/√Hidden) for every weight and bias.
func NewGRUCell[T ad.Float](prefix string, in, hidden int, rng *rand.Rand) *GRUCell[T] {
	c := &GRUCell[T]{In: in, Hidden: hidden,
		Wih: ad.NewParam[T](prefix+".weight_ih", 3*hidden, in),
		Whh: ad.NewParam[T](prefix+".weight_hh", 3*hidden, hidden),
		Bih: ad.NewParam[T](prefix+".bias_ih", 3*hidden),
		Bhh: ad.NewParam[T](prefix+".bias_hh", 3*hidden)}
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

// Describe is one step of the cell: the input's three gate terms as one
// operator, the recurrent terms as another, r and z from their sums, n =
// tanh(·) with r⊙(W_hn·h + b_hn) as a product, and h' = n + z⊙(h − n)
// (= (1 − z)⊙n + z⊙h). With h the zero Value (the first step, as the
// verifier sees it) the recurrent terms are the bias b_hh and h' = n − z⊙n.
func (c *GRUCell[T]) Describe(b Builder, x, h Value) Value {
	H := c.Hidden
	xw := b.Dense("in", x, c.Wih, c.Bih, 3*H)
	var rec Value
	if h.Valid() {
		rec = b.Dense("rec", h, c.Whh, c.Bhh, 3*H)
	} else {
		rec = b.Const("rec", c.Bhh)
	}
	sum := b.Add("rz.pre", b.Slice("in.rz", xw, 0, 2*H), b.Slice("rec.rz", rec, 0, 2*H))
	r := b.Act("r", Sigmoid, b.Slice("r.pre", sum, 0, H))
	z := b.Act("z", Sigmoid, b.Slice("z.pre", sum, H, 2*H))
	n := b.Act("n", Tanh, b.Add("n.pre", b.Slice("in.n", xw, 2*H, 3*H), b.Mul("rn", r, b.Slice("rec.n", rec, 2*H, 3*H))))
	if !h.Valid() {
		return b.Sub("", n, b.Mul("zn", z, n))
	}
	return b.Add("", n, b.Mul("zd", z, b.Sub("d", h, n)))
}

// Forward computes h' from input x [B, In] and state h [B, Hidden]:
// Describe run on the tape.
func (c *GRUCell[T]) Forward(tp *ad.Tape[T], x, h *ad.Node[T]) *ad.Node[T] {
	e := NewEval(tp, x.Value.Shape[0])
	return e.Node(c.Describe(e, e.Input(x), e.Input(h)))
}

// Params lists the layer's parameters.
func (c *GRUCell[T]) Params() []*ad.Param[T] { return []*ad.Param[T]{c.Wih, c.Whh, c.Bih, c.Bhh} }
