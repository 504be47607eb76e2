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
	x, h, wh := randVec(rng, B*In), randVec(rng, B*H), randVec(rng, B*H)
	loss := func(record bool) (float64, []*ad.Node[float64]) {
		tp := ad.NewTape[float64](false)
		if record {
			tp = ad.NewTrainingTape[float64]()
		}
		xs, hs := tp.Var(ad.FromSlice(x, B, In)), tp.Var(ad.FromSlice(h, B, H))
		l := tp.WeightedSum(c.Forward(tp, xs, c.Forward(tp, xs, hs)), wh)
		if record {
			for _, p := range c.Params() {
				p.ZeroGrad()
			}
			if err := tp.Backward(l); err != nil {
				t.Fatal(err)
			}
		}
		return l.Value.Data[0], []*ad.Node[float64]{xs, hs}
	}
	_, vars := loss(true)
	check := func(name string, data, grad []float64) {
		const eps = 1e-6
		for i := range data {
			orig := data[i]
			data[i] = orig + eps
			up, _ := loss(false)
			data[i] = orig - eps
			down, _ := loss(false)
			data[i] = orig
			fd := (up - down) / (2 * eps)
			if math.Abs(fd-grad[i]) > 1e-6*math.Max(1, math.Abs(fd)) {
				t.Fatalf("%s[%d]: gradient %v, finite difference %v", name, i, grad[i], fd)
			}
		}
	}
	check("x", x, vars[0].Grad.Data)
	check("h", h, vars[1].Grad.Data)
	for _, p := range c.Params() {
		check(p.Name, p.W.Data, append([]float64(nil), p.G.Data...))
	}
}
