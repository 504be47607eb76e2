package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

// lstmLoop is the naive reference: PyTorch's nn.LSTMCell equations, one
// scalar at a time.
func lstmLoop(c *LSTMCell[float64], x, h, cell []float64) (hn, cn []float64) {
	H := c.Hidden
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	gate := func(k, j int) float64 {
		r := k*H + j
		s := c.Bih.W.Data[r] + c.Bhh.W.Data[r]
		for i, v := range x {
			s += c.Wih.W.Data[r*c.In+i] * v
		}
		for i, v := range h {
			s += c.Whh.W.Data[r*H+i] * v
		}
		return s
	}
	hn, cn = make([]float64, H), make([]float64, H)
	for j := 0; j < H; j++ {
		i, f, g, o := sig(gate(0, j)), sig(gate(1, j)), math.Tanh(gate(2, j)), sig(gate(3, j))
		cn[j] = f*cell[j] + i*g
		hn[j] = o * math.Tanh(cn[j])
	}
	return hn, cn
}

func randVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

func TestLSTMCellMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 1))
	c := NewLSTMCell[float64]("cell", 3, 4, rng)
	for _, p := range c.Params() {
		if p.W.Shape[0] != 16 {
			t.Fatalf("%s has %d rows, want 4·hidden = 16 (gates i, f, g, o)", p.Name, p.W.Shape[0])
		}
	}
	const B = 2
	x, h, cell := randVec(rng, B*3), randVec(rng, B*4), randVec(rng, B*4)
	tp := ad.NewTape[float64](false)
	hn, cn := c.Forward(tp, tp.Const(ad.FromSlice(x, B, 3)), tp.Const(ad.FromSlice(h, B, 4)), tp.Const(ad.FromSlice(cell, B, 4)))
	for b := 0; b < B; b++ {
		wh, wc := lstmLoop(c, x[b*3:(b+1)*3], h[b*4:(b+1)*4], cell[b*4:(b+1)*4])
		for j := range wh {
			if math.Abs(hn.Value.Data[b*4+j]-wh[j]) > 1e-12 || math.Abs(cn.Value.Data[b*4+j]-wc[j]) > 1e-12 {
				t.Fatalf("row %d unit %d: (h, c) = (%v, %v), loop gives (%v, %v)", b, j, hn.Value.Data[b*4+j], cn.Value.Data[b*4+j], wh[j], wc[j])
			}
		}
	}
}

// TestLSTMCellGradients checks every input's and every parameter's gradient
// of a random linear functional of (h', c'), unrolled over two steps so the
// recurrence's gradient is exercised too, against central differences.
func TestLSTMCellGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	const B, In, H = 2, 3, 4
	c := NewLSTMCell[float64]("cell", In, H, rng)
	checkLayerGrads(t, "LSTMCell", rng, c.Params(), []*ad.Tensor[float64]{randTensor(rng, B, In), randTensor(rng, B, H), randTensor(rng, B, H)},
		func(tp *ad.Tape[float64], in []*ad.Node[float64]) *ad.Node[float64] {
			h1, c1 := c.Forward(tp, in[0], in[1], in[2])
			h2, c2 := c.Forward(tp, in[0], h1, c1)
			return tp.Concat(1, h2, c2)
		})
}
