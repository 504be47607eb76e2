package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

// gruLoop is the naive reference: PyTorch's nn.GRUCell equations, one
// scalar at a time.
func gruLoop(c *GRUCell[float64], x, h []float64) []float64 {
	H := c.Hidden
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	in := func(k, j int) float64 {
		r := k*H + j
		s := c.Bih.W.Data[r]
		for i, v := range x {
			s += c.Wih.W.Data[r*c.In+i] * v
		}
		return s
	}
	rec := func(k, j int) float64 {
		r := k*H + j
		s := c.Bhh.W.Data[r]
		for i, v := range h {
			s += c.Whh.W.Data[r*H+i] * v
		}
		return s
	}
	out := make([]float64, H)
	for j := range out {
		r, z := sig(in(0, j)+rec(0, j)), sig(in(1, j)+rec(1, j))
		n := math.Tanh(in(2, j) + r*rec(2, j))
		out[j] = (1-z)*n + z*h[j]
	}
	return out
}

func TestGRUCellMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 2))
	c := NewGRUCell[float64]("cell", 3, 4, rng)
	for _, p := range c.Params() {
		if p.W.Shape[0] != 12 {
			t.Fatalf("%s has %d rows, want 3·hidden = 12 (gates r, z, n)", p.Name, p.W.Shape[0])
		}
	}
	const B = 3
	x, h := randVec(rng, B*3), randVec(rng, B*4)
	tp := ad.NewTape[float64](false)
	hn := c.Forward(tp, tp.Const(ad.FromSlice(x, B, 3)), tp.Const(ad.FromSlice(h, B, 4)))
	for b := 0; b < B; b++ {
		want := gruLoop(c, x[b*3:(b+1)*3], h[b*4:(b+1)*4])
		for j, w := range want {
			if got := hn.Value.Data[b*4+j]; math.Abs(got-w) > 1e-12 {
				t.Fatalf("row %d unit %d: h' = %v, loop gives %v", b, j, got, w)
			}
		}
	}
}

// TestGRUCellGradients checks every input's and parameter's gradient of a
// random linear functional of h after two steps against central
// differences.
func TestGRUCellGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 3))
	const B, In, H = 2, 3, 4
	c := NewGRUCell[float64]("cell", In, H, rng)
	checkLayerGrads(t, "GRUCell", rng, c.Params(), []*ad.Tensor[float64]{randTensor(rng, B, In), randTensor(rng, B, H)},
		func(tp *ad.Tape[float64], in []*ad.Node[float64]) *ad.Node[float64] {
			return c.Forward(tp, in[0], c.Forward(tp, in[0], in[1]))
		})
}
