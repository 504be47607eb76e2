package model

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

// certifiedLoss evaluates CertifiedLoss on a plain tape.
func certifiedLoss(t testing.TB, m *Captioner[float64], x []float64, labels [][]int, eps float64) (float64, int) {
	t.Helper()
	tp := ad.NewTape[float64](false)
	l, n, err := m.CertifiedLoss(tp, tp.Const(ad.FromSlice(x, len(labels), size(m))), labels, eps)
	if err != nil {
		t.Fatal(err)
	}
	return l.Value.Data[0], n
}

// teacherForced is the plain teacher-forced loss at x.
func teacherForced(t testing.TB, m *Captioner[float64], x []float64, labels [][]int) float64 {
	t.Helper()
	tp := ad.NewTape[float64](false)
	l, err := TeacherForcedLoss[float64](tp, m, Input[float64]{X: tp.Const(ad.FromSlice(x, len(labels), size(m)))}, labels)
	if err != nil {
		t.Fatal(err)
	}
	return l.Value.Data[0]
}

// greedyLabel decodes one input x: the model's own decoding, which a
// small ball can certify, and whether it stopped.
func greedyLabel(t testing.TB, m *Captioner[float64], x []float64) ([]int, bool) {
	t.Helper()
	res, err := Decode[float64](context.Background(), m, Batch[float64]{X: x}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return res[0].Tokens, res[0].Stopped
}

// TestCertifiedLossGradient checks IBP's loss gradient with respect to
// every parameter against central finite differences, over a ball wide
// enough that ReLUs straddle zero.
func TestCertifiedLossGradient(t *testing.T) {
	for _, cell := range []string{CellReLU, CellLSTM, CellGRU} {
		t.Run(cell, func(t *testing.T) { testCertifiedLossGradient(t, cell) })
	}
}

func testCertifiedLossGradient(t *testing.T, cell string) {
	m := tinyModel(t, cell, 5)
	rng := rand.New(rand.NewPCG(6, 7))
	const b, eps = 3, 0.2
	x := randInput(rng, b*size(m))
	labels := [][]int{{0, 2}, {1}, {}}
	tp := ad.NewTrainingTape[float64]()
	l, _, err := m.CertifiedLoss(tp, tp.Const(ad.FromSlice(x, b, size(m))), labels, eps)
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Backward(l); err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params() {
		checkFD(t, p.Name, p.W.Data, p.G.Data, func() float64 { v, _ := certifiedLoss(t, m, x, labels, eps); return v })
	}
}

// TestCertifiedLossBoundsEveryInput: at radius 0 the loss is the
// teacher-forced loss; it never decreases with the radius; and it bounds
// the teacher-forced loss of every sampled input of the ball from above
// (cross-entropy grows with every margin, and each margin is bounded). A
// row counted certified decodes to its label at every sampled input.
func TestCertifiedLossBoundsEveryInput(t *testing.T) {
	for _, cell := range []string{CellReLU, CellLSTM, CellGRU} {
		t.Run(cell, func(t *testing.T) { testCertifiedLossBoundsEveryInput(t, cell) })
	}
}

func testCertifiedLossBoundsEveryInput(t *testing.T, cell string) {
	m := tinyModel(t, cell, 9)
	rng := rand.New(rand.NewPCG(10, 10))
	n := size(m)
	sawCertified, sawOpen, trials := false, false, 0
	for trial := 0; trials < 12 && trial < 1000; trial++ {
		x := randInput(rng, n)
		label, stopped := greedyLabel(t, m, x)
		if !stopped {
			continue // no label to certify
		}
		trials++
		labels := [][]int{label}
		if trials%3 == 0 {
			labels = [][]int{{trial % 3, 1}} // not necessarily the decoding
		}
		l0, _ := certifiedLoss(t, m, x, labels, 0)
		if tf := teacherForced(t, m, x, labels); math.Abs(l0-tf) > 1e-12*math.Max(1, tf) {
			t.Fatalf("trial %d: radius 0 gives %v, teacher forcing %v", trial, l0, tf)
		}
		prev := l0
		for _, eps := range []float64{0.001, 0.01, 0.05, 0.2} {
			l, cert := certifiedLoss(t, m, x, labels, eps)
			if l < prev-1e-12 {
				t.Fatalf("trial %d: loss %v at radius %v below %v at a smaller one", trial, l, eps, prev)
			}
			prev = l
			if cert == 1 {
				sawCertified = true
			} else {
				sawOpen = true
			}
			for s := range 200 {
				xs := make([]float64, n)
				for i, v := range x {
					lo, hi := max(v-eps, -1), min(v+eps, 1)
					switch {
					case s%2 == 0 && rng.IntN(2) == 0:
						xs[i] = lo
					case s%2 == 0:
						xs[i] = hi
					default:
						xs[i] = lo + rng.Float64()*(hi-lo)
					}
				}
				if tf := teacherForced(t, m, xs, labels); tf > l+1e-9 {
					t.Fatalf("trial %d, radius %v: an input of the ball has loss %v above the bound %v", trial, eps, tf, l)
				}
				if cert == 1 {
					if got, stopped := greedyLabel(t, m, xs); !stopped || !slices.Equal(got, labels[0]) {
						t.Fatalf("trial %d, radius %v: certified row decodes %v at an input of the ball, label %v", trial, eps, got, labels[0])
					}
				}
			}
		}
	}
	if trials < 12 || !sawCertified || !sawOpen {
		t.Fatalf("%d trials, certified seen %v, uncertified seen %v: the test needs 12 and both", trials, sawCertified, sawOpen)
	}
}
