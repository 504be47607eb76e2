package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

// checkLayerGrads compares the gradient of a fixed random linear functional
// of f's output with respect to every input and every parameter with
// central differences, in float64.
func checkLayerGrads(t *testing.T, name string, rng *rand.Rand, params []*ad.Param[float64], inputs []*ad.Tensor[float64], f func(tp *ad.Tape[float64], in []*ad.Node[float64]) *ad.Node[float64]) {
	t.Helper()
	var w []float64
	loss := func(record bool) (float64, []*ad.Node[float64]) {
		var tp *ad.Tape[float64]
		if record {
			tp = ad.NewTrainingTape[float64]()
		} else {
			tp = ad.NewTape[float64](false)
		}
		in := make([]*ad.Node[float64], len(inputs))
		for i, x := range inputs {
			in[i] = tp.Var(x)
		}
		out := f(tp, in)
		if w == nil {
			w = randVec(rng, out.Value.Len())
		}
		l := tp.WeightedSum(out, w)
		if record {
			if err := tp.Backward(l); err != nil {
				t.Fatal(err)
			}
		}
		return l.Value.Data[0], in
	}
	for _, p := range params {
		p.ZeroGrad()
	}
	_, vars := loss(true)
	check := func(what string, data, grad []float64) {
		t.Helper()
		const eps = 1e-6
		for i := range data {
			orig := data[i]
			data[i] = orig + eps
			up, _ := loss(false)
			data[i] = orig - eps
			down, _ := loss(false)
			data[i] = orig
			fd := (up - down) / (2 * eps)
			var g float64
			if grad != nil {
				g = grad[i]
			}
			if math.Abs(fd-g) > 1e-6*math.Max(1, math.Abs(fd)) {
				t.Fatalf("%s: %s[%d]: gradient %v, finite difference %v", name, what, i, g, fd)
			}
		}
	}
	for i, x := range inputs {
		var g []float64
		if vars[i].Grad != nil {
			g = vars[i].Grad.Data
		}
		check(fmt.Sprintf("input %d", i), x.Data, g)
	}
	for _, p := range params {
		check(p.Name, p.W.Data, append([]float64(nil), p.G.Data...))
	}
}

func randTensor(rng *rand.Rand, shape ...int) *ad.Tensor[float64] {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return ad.FromSlice(randVec(rng, n), shape...)
}
