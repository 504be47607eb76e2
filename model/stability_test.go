package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

// TestStabilityLossGradient checks the regulariser's gradient with respect
// to every encoder parameter against central finite differences.
func TestStabilityLossGradient(t *testing.T) {
	m := tinyModel(t, CellReLU, 5)
	rng := rand.New(rand.NewPCG(6, 6))
	const b, eps = 2, 0.3
	x := randInput(rng, b*size(m))
	loss := func() float64 {
		tp := ad.NewTape[float64](false)
		l, _ := m.StabilityLoss(tp, tp.Const(ad.FromSlice(x, b, size(m))), eps)
		return l.Value.Data[0]
	}
	tp := ad.NewTrainingTape[float64]()
	l, unstable := m.StabilityLoss(tp, tp.Const(ad.FromSlice(x, b, size(m))), eps)
	if unstable == 0 {
		t.Fatal("no unstable ReLU at eps 0.3: the test would not exercise the straddling case")
	}
	if err := tp.Backward(l); err != nil {
		t.Fatal(err)
	}
	params := append(m.Conv[0].Params(), m.Conv[1].Params()...)
	params = append(params, m.FC1.Params()...)
	for _, p := range params {
		for i := range p.W.Data {
			const h = 1e-6
			orig := p.W.Data[i]
			p.W.Data[i] = orig + h
			fp := loss()
			p.W.Data[i] = orig - h
			fm := loss()
			p.W.Data[i] = orig
			num := (fp - fm) / (2 * h)
			if math.Abs(p.G.Data[i]-num) > 1e-5*math.Max(1, math.Abs(num)) {
				t.Fatalf("%s[%d]: analytic %.9g, finite difference %.9g", p.Name, i, p.G.Data[i], num)
			}
		}
	}
}

// TestStabilityLossCounts: no ReLU is unstable over a zero-radius ball, the
// count only grows with the radius (interval bounds are monotone), and
// over the whole input box most are.
func TestStabilityLossCounts(t *testing.T) {
	m := tinyModel(t, CellReLU, 7)
	rng := rand.New(rand.NewPCG(8, 8))
	const b = 4
	x := randInput(rng, b*size(m))
	prev := -1
	for _, eps := range []float64{0, 0.01, 0.1, 0.5, 2} {
		tp := ad.NewTape[float64](false)
		l, n := m.StabilityLoss(tp, tp.Const(ad.FromSlice(x, b, size(m))), eps)
		if v := l.Value.Data[0]; math.IsNaN(v) || v > 3 || v < -3 {
			t.Fatalf("eps %v: loss %v outside [−3, 3] (3 layers of mean −tanh)", eps, v)
		}
		if eps == 0 && n != 0 {
			t.Fatalf("eps 0: %d unstable ReLUs", n)
		}
		if n < prev {
			t.Fatalf("eps %v: %d unstable, fewer than %d at a smaller radius", eps, n, prev)
		}
		prev = n
	}
	if prev == 0 {
		t.Fatal("no unstable ReLU over the whole box")
	}
}
