package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

// unfused interprets a description operator by operator: each
// pre-activation is read before its ReLU, and the LSTM update is declined,
// so Eval's fused kernels are checked against the operators they stand for.
type unfused struct{ *Eval[float64] }

func (u unfused) Act(name string, a Activation, x Value) Value {
	u.Node(x)
	return u.Eval.Act(name, a, x)
}

func (unfused) LSTMUpdate(_, _ Value) (Value, Value, bool) { return Value{}, Value{}, false }

// TestEvalFusedEqualsOperators: a convolution and a dense layer each with
// its ReLU, and an LSTM step, run fused (Eval) and operator by operator,
// give the same values, and the same gradients with respect to the input
// and every weight; the interval interpretation of a box of radius 0 is the
// point itself.
func TestEvalFusedEqualsOperators(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	conv := NewConv2D[float64]("c", 2, 3, ad.ConvGeom{Kernel: 3, Stride: 2, Pad: 1}, rng)
	lin := NewLinear[float64]("l", 3*3*3, 5, rng)
	lstm := NewLSTMCell[float64]("s", 5, 4, rng)
	params := append(append(conv.Params(), lin.Params()...), lstm.Params()...)
	for _, p := range params {
		for i := range p.W.Data {
			p.W.Data[i] = rng.NormFloat64()
		}
	}
	const B = 3
	x, h, c := ad.New[float64](B, 2*5*6), ad.New[float64](B, 4), ad.New[float64](B, 4)
	for _, v := range []*ad.Tensor[float64]{x, h, c} {
		for i := range v.Data {
			v.Data[i] = rng.NormFloat64()
		}
	}
	describe := func(b Builder, x, h, c Value) (Value, Value) {
		a, _ := conv.Describe(b, "conv", x, [3]int{2, 5, 6})
		a = lin.Describe(b, "lin", b.Act("conv.relu", ReLU, a))
		return lstm.Describe(b, b.Act("lin.relu", ReLU, a), h, c)
	}
	run := func(fused bool) (out []float64, grads [][]float64) {
		for _, p := range params {
			p.ZeroGrad()
		}
		tp := ad.NewTrainingTape[float64]()
		xn := tp.Var(x.Clone())
		e := NewEval(tp, B)
		var b Builder = e
		if !fused {
			b = unfused{e}
		}
		hv, cv := describe(b, e.Input(xn), e.Input(tp.Const(h)), e.Input(tp.Const(c)))
		hn, cn := e.Node(hv), e.Node(cv)
		loss := tp.Sum(tp.Add(tp.Mul(hn, hn), tp.Scale(cn, 3)))
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		out = append(append(out, hn.Value.Data...), cn.Value.Data...)
		grads = append(grads, xn.Grad.Data)
		for _, p := range params {
			grads = append(grads, append([]float64(nil), p.G.Data...))
		}
		return out, grads
	}
	fo, fg := run(true)
	po, pg := run(false)
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*(1+math.Abs(a)) }
	for i := range fo {
		if !close(fo[i], po[i]) {
			t.Fatalf("output %d: fused %v, operators %v", i, fo[i], po[i])
		}
	}
	for k := range fg {
		for i := range fg[k] {
			if !close(fg[k][i], pg[k][i]) {
				t.Fatalf("gradient %d[%d]: fused %v, operators %v", k, i, fg[k][i], pg[k][i])
			}
		}
	}
	// A box of radius 0 is the point.
	tp := ad.NewTape[float64](false)
	iv := NewInterval(tp, B)
	zero := func(n int) *ad.Node[float64] { return tp.Const(ad.New[float64](B, n)) }
	hv, cv := describe(iv, iv.Input(tp.Const(x), zero(60)), iv.Input(tp.Const(h), zero(4)), iv.Input(tp.Const(c), zero(4)))
	hc, hr := iv.Box(hv)
	cc, cr := iv.Box(cv)
	got := append(append([]float64(nil), hc.Value.Data...), cc.Value.Data...)
	for i, r := range append(append([]float64(nil), hr.Value.Data...), cr.Value.Data...) {
		if r != 0 || !close(got[i], fo[i]) {
			t.Fatalf("value %d: interval %v ± %v, point %v", i, got[i], r, fo[i])
		}
	}
}
