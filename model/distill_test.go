package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

// distilled evaluates DistilledLoss of m at x against teacher's soft
// targets at temp, on plain tapes.
func distilled(t testing.TB, m, teacher *Captioner[float64], x []float64, labels [][]int, temp, weight float64, hardEOS bool) float64 {
	t.Helper()
	tt := ad.NewTape[float64](false)
	soft, err := TeacherSoftTargets[float64](tt, teacher, Input[float64]{X: tt.Const(ad.FromSlice(x, len(labels), size(m)))}, labels, temp)
	if err != nil {
		t.Fatal(err)
	}
	soft.HardEOS = hardEOS
	tp := ad.NewTape[float64](false)
	l, err := DistilledLoss[float64](tp, m, Input[float64]{X: tp.Const(ad.FromSlice(x, len(labels), size(m)))}, labels, soft, weight)
	if err != nil {
		t.Fatal(err)
	}
	return l.Value.Data[0]
}

// softmaxAt is softmax(v/temp), in plain loops.
func softmaxAt(v []float64, temp float64) []float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, x/temp)
	}
	p := make([]float64, len(v))
	var z float64
	for i, x := range v {
		p[i] = math.Exp(x/temp - m)
		z += p[i]
	}
	for i := range p {
		p[i] /= z
	}
	return p
}

// TestDistilledLossMatchesNaive checks the loss's value against a
// reference written row by row: each row's own steps (stepLogits), the
// label's cross-entropy and the soft one in plain loops, averaged over
// the batch. Rows of different lengths check that padding takes neither
// term; with HardEOS the eos steps take the label alone, at full weight.
func TestDistilledLossMatchesNaive(t *testing.T) {
	for _, cell := range cells {
		t.Run(cell, func(t *testing.T) {
			m, teacher := tinyModel(t, cell, 3), tinyModel(t, cell, 9)
			rng := rand.New(rand.NewPCG(5, 5))
			labels := [][]int{{0, 2, 1}, {1}, {}}
			b := len(labels)
			x := randInput(rng, b*size(m))
			for _, c := range []struct {
				temp, weight float64
				hardEOS      bool
			}{{1, 0, false}, {2, 0.5, false}, {4, 1, false}, {0.5, 0.3, false}, {2, 0.5, true}, {4, 1, true}} {
				var want float64
				for r, label := range labels {
					tp := ad.NewTape[float64](false)
					xr := tp.Const(ad.FromSlice(x[r*size(m):(r+1)*size(m)], 1, size(m)))
					st, tt := stepLogits(tp, m, xr, label), stepLogits(tp, teacher, xr, label)
					for k := range st {
						l := st[k].Value.Data
						target := m.EOS()
						if k < len(label) {
							target = label[k]
						}
						lse := math.Log(softmaxAt(l, 1)[target])
						p, q := softmaxAt(tt[k].Value.Data, c.temp), softmaxAt(l, c.temp)
						var soft float64
						for z := range p {
							soft -= p[z] * math.Log(q[z])
						}
						if c.hardEOS && target == m.EOS() {
							want += -lse / float64(b)
						} else {
							want += ((1-c.weight)*-lse + c.weight*c.temp*c.temp*soft) / float64(b)
						}
					}
				}
				got := distilled(t, m, teacher, x, labels, c.temp, c.weight, c.hardEOS)
				if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
					t.Errorf("temp %g weight %g hard eos %v: loss %.15g, naive reference %.15g", c.temp, c.weight, c.hardEOS, got, want)
				}
				if c.weight == 0 {
					if tf := teacherForced(t, m, x, labels); got != tf {
						t.Errorf("weight 0: loss %.15g, teacher-forced loss %.15g", got, tf)
					}
				}
			}
		})
	}
}

// TestDistilledLossGradient checks the gradient with respect to the input
// and every parameter against central finite differences (the teacher's
// targets are constants).
func TestDistilledLossGradient(t *testing.T) {
	for _, cell := range cells {
		t.Run(cell, func(t *testing.T) {
			m, teacher := tinyModel(t, cell, 3), tinyModel(t, cell, 9)
			rng := rand.New(rand.NewPCG(6, 6))
			labels := [][]int{{0, 2}, {1}, {}}
			b := len(labels)
			x := randInput(rng, b*size(m))
			const temp, weight = 2, 0.6
			tt := ad.NewTape[float64](false)
			soft, err := TeacherSoftTargets[float64](tt, teacher, Input[float64]{X: tt.Const(ad.FromSlice(x, b, size(m)))}, labels, temp)
			if err != nil {
				t.Fatal(err)
			}
			soft.HardEOS = cell == CellLSTM // one cell each way
			checkLossGradient(t, m, x, b, func(tp *ad.Tape[float64], in Input[float64]) (*ad.Node[float64], error) {
				return DistilledLoss[float64](tp, m, in, labels, soft, weight)
			})
		})
	}
}

// TestDistillingItselfIsStationary: the soft term's minimum over the
// model's distributions is the teacher's, so a model distilled from
// itself at full weight has zero gradient, at any temperature — and a
// different teacher gives a gradient far from zero (the check can fail).
func TestDistillingItselfIsStationary(t *testing.T) {
	m, other := tinyModel(t, CellReLU, 3), tinyModel(t, CellReLU, 9)
	rng := rand.New(rand.NewPCG(7, 7))
	labels := [][]int{{0, 2}, {1}}
	x := randInput(rng, len(labels)*size(m))
	norm := func(teacher *Captioner[float64], temp float64) float64 {
		tt := ad.NewTape[float64](false)
		soft, err := TeacherSoftTargets[float64](tt, teacher, Input[float64]{X: tt.Const(ad.FromSlice(x, len(labels), size(m)))}, labels, temp)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m.Params() {
			p.ZeroGrad()
		}
		tp := ad.NewTrainingTape[float64]()
		l, err := DistilledLoss[float64](tp, m, Input[float64]{X: tp.Const(ad.FromSlice(x, len(labels), size(m)))}, labels, soft, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := tp.Backward(l); err != nil {
			t.Fatal(err)
		}
		var s float64
		for _, p := range m.Params() {
			for _, g := range p.G.Data {
				s += g * g
			}
		}
		return math.Sqrt(s)
	}
	for _, temp := range []float64{0.5, 1, 3} {
		if g := norm(m, temp); g > 1e-12 {
			t.Errorf("temp %g: distilled from itself, gradient norm %g, want 0", temp, g)
		}
		if g := norm(other, temp); g < 1e-4 {
			t.Errorf("temp %g: distilled from another model, gradient norm %g, want it far from 0", temp, g)
		}
	}
}

// TestDistilledLossRefuses: a temperature or weight out of range, and
// soft targets that do not fit the model's steps or vocabulary, are
// errors, not wrong losses.
func TestDistilledLossRefuses(t *testing.T) {
	m := tinyModel(t, CellReLU, 3)
	labels := [][]int{{0, 2}}
	x := randInput(rand.New(rand.NewPCG(8, 8)), size(m))
	tp := ad.NewTape[float64](false)
	in := Input[float64]{X: tp.Const(ad.FromSlice(x, 1, size(m)))}
	for _, temp := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := TeacherSoftTargets[float64](tp, m, in, labels, temp); err == nil {
			t.Errorf("temperature %v accepted", temp)
		}
	}
	soft, err := TeacherSoftTargets[float64](tp, m, in, labels, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []float64{-0.1, 1.1, math.NaN()} {
		if _, err := DistilledLoss[float64](tp, m, in, labels, soft, w); err == nil {
			t.Errorf("weight %v accepted", w)
		}
	}
	short := SoftTargets[float64]{Probs: soft.Probs[:2], Temp: 1}
	if _, err := DistilledLoss[float64](tp, m, in, labels, short, 0.5); err == nil {
		t.Error("soft targets for 2 of 3 steps accepted")
	}
	narrow := SoftTargets[float64]{Probs: [][]float64{soft.Probs[0][:2], soft.Probs[1], soft.Probs[2]}, Temp: 1}
	if _, err := DistilledLoss[float64](tp, m, in, labels, narrow, 0.5); err == nil {
		t.Error("soft targets over a smaller vocabulary accepted")
	}
}
