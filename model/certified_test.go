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
func certifiedLoss(t testing.TB, m *Captioner[float64], x []float64, labels [][]int, eps float64, bound Bound) (float64, int) {
	t.Helper()
	tp := ad.NewTape[float64](false)
	l, n, err := m.CertifiedLoss(tp, tp.Const(ad.FromSlice(x, len(labels), size(m))), labels, eps, bound)
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

// TestCertifiedLossGradient checks each bound's loss gradient with respect
// to every parameter against central finite differences, over a ball wide
// enough that ReLUs straddle zero.
func TestCertifiedLossGradient(t *testing.T) {
	for _, cell := range []string{CellReLU, CellLSTM, CellGRU} {
		for _, bound := range cellBounds(cell) {
			t.Run(cell+"/"+string(bound), func(t *testing.T) { testCertifiedLossGradient(t, cell, bound) })
		}
	}
}

// cellBounds lists the bounds a cell's certified loss takes: every one.
func cellBounds(string) []Bound { return Bounds() }

func testCertifiedLossGradient(t *testing.T, cell string, bound Bound) {
	m := tinyModel(t, cell, 5)
	rng := rand.New(rand.NewPCG(6, 7))
	const b, eps = 3, 0.2
	x := randInput(rng, b*size(m))
	labels := [][]int{{0, 2}, {1}, {}}
	tp := ad.NewTrainingTape[float64]()
	l, _, err := m.CertifiedLoss(tp, tp.Const(ad.FromSlice(x, b, size(m))), labels, eps, bound)
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Backward(l); err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params() {
		checkFD(t, p.Name, p.W.Data, p.G.Data, func() float64 { v, _ := certifiedLoss(t, m, x, labels, eps, bound); return v })
	}
}

// ballPoint fills xs with an input of the ball of radius eps around x
// (clipped to [−1, 1]): a random corner for even s, a uniform point for
// odd s.
func ballPoint(rng *rand.Rand, xs, x []float64, eps float64, s int) {
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
}

// TestCertifiedLossBoundsEveryInput, for each bound: at radius 0 the loss
// is the teacher-forced loss; it bounds the teacher-forced loss of every
// sampled input of the ball from above (cross-entropy grows with every
// margin, and each margin is bounded); and a row counted certified decodes
// to its label at every sampled input. The interval bound never decreases
// with the radius; CROWN-IBP never exceeds it (its intervals are
// intersected with back-substitution's bounds, and its margins are the
// smaller of the two) and is strictly tighter on some trials.
func TestCertifiedLossBoundsEveryInput(t *testing.T) {
	for _, cell := range []string{CellReLU, CellLSTM, CellGRU} {
		t.Run(cell, func(t *testing.T) { testCertifiedLossBoundsEveryInput(t, cell) })
	}
}

func testCertifiedLossBoundsEveryInput(t *testing.T, cell string) {
	m := tinyModel(t, cell, 9)
	rng := rand.New(rand.NewPCG(10, 10))
	n := size(m)
	type seen struct{ certified, open int }
	saw := map[Bound]*seen{}
	for _, bound := range cellBounds(cell) {
		saw[bound] = &seen{}
	}
	crown := true
	tighter, trials := 0, 0
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
		tf := teacherForced(t, m, x, labels)
		for _, bound := range cellBounds(cell) {
			if l0, _ := certifiedLoss(t, m, x, labels, 0, bound); math.Abs(l0-tf) > 1e-12*math.Max(1, tf) {
				t.Fatalf("trial %d, %s: radius 0 gives %v, teacher forcing %v", trial, bound, l0, tf)
			}
		}
		prev := tf
		for _, eps := range []float64{0.001, 0.01, 0.05, 0.2} {
			li, ci := certifiedLoss(t, m, x, labels, eps, BoundInterval)
			lc, cc := li, ci
			if crown {
				lc, cc = certifiedLoss(t, m, x, labels, eps, BoundCROWNIBP)
			}
			if li < prev-1e-12 {
				t.Fatalf("trial %d: interval loss %v at radius %v below %v at a smaller one", trial, li, eps, prev)
			}
			prev = li
			if lc > li+1e-9*math.Max(1, li) || cc < ci {
				t.Fatalf("trial %d, radius %v: CROWN-IBP loss %v (%d certified) looser than the interval bound's %v (%d)", trial, eps, lc, cc, li, ci)
			}
			if lc < li-1e-6*math.Max(1, li) {
				tighter++
			}
			for bound, cert := range map[Bound]int{BoundInterval: ci, BoundCROWNIBP: cc} {
				if saw[bound] == nil {
					continue
				}
				if cert == 1 {
					saw[bound].certified++
				} else {
					saw[bound].open++
				}
			}
			xs := make([]float64, n)
			for s := range 200 {
				ballPoint(rng, xs, x, eps, s)
				if tf := teacherForced(t, m, xs, labels); tf > lc+1e-9 {
					t.Fatalf("trial %d, radius %v: an input of the ball has loss %v above the CROWN-IBP bound %v", trial, eps, tf, lc)
				}
				if cc == 1 {
					if got, stopped := greedyLabel(t, m, xs); !stopped || !slices.Equal(got, labels[0]) {
						t.Fatalf("trial %d, radius %v: certified row decodes %v at an input of the ball, label %v", trial, eps, got, labels[0])
					}
				}
			}
		}
	}
	if trials < 12 {
		t.Fatalf("%d trials: the test needs 12", trials)
	}
	for bound, s := range saw {
		if s.certified == 0 || s.open == 0 {
			t.Fatalf("%s: %d certified, %d uncertified: the test needs both", bound, s.certified, s.open)
		}
	}
	if !crown {
		return
	}
	if tighter == 0 {
		t.Fatal("CROWN-IBP was never tighter than the interval bound")
	}
	t.Logf("certified/open: interval %v, CROWN-IBP %v; CROWN-IBP tighter on %d of %d", *saw[BoundInterval], *saw[BoundCROWNIBP], tighter, 4*trials)
}

// TestCertifiedBoundsEveryCell: every cell takes the interval bound and
// CROWN-IBP; an unknown bound is refused.
func TestCertifiedBoundsEveryCell(t *testing.T) {
	for _, cell := range []string{CellReLU, CellLSTM, CellGRU} {
		m := tinyModel(t, cell, 3)
		tp := ad.NewTape[float64](false)
		x := tp.Const(ad.New[float64](1, size(m)))
		for _, b := range Bounds() {
			if _, _, err := m.CertifiedLoss(tp, x, [][]int{{0}}, 0.1, b); err != nil {
				t.Fatalf("%s, %s bound: %v", cell, b, err)
			}
		}
		if _, _, err := m.CertifiedLoss(tp, x, [][]int{{0}}, 0.1, "zonotope"); err == nil {
			t.Fatalf("%s: an unknown bound was accepted", cell)
		}
	}
}

// stepLogits runs the decoder on x under teacher forcing with label and
// returns every step's logits (the label's length plus the eos step).
func stepLogits(tp *ad.Tape[float64], m *Captioner[float64], x *ad.Node[float64], label []int) []*ad.Node[float64] {
	s, err := m.Start(tp, Input[float64]{X: x})
	if err != nil {
		panic(err)
	}
	var out []*ad.Node[float64]
	var prev []int
	for t := 0; t <= len(label); t++ {
		var logits *ad.Node[float64]
		logits, s = m.Step(tp, s, prev)
		out = append(out, logits)
		if t < len(label) {
			prev = []int{label[t]}
		}
	}
	return out
}

// headLogitsAt runs the head exactly from fc1's pre-activation z under
// teacher forcing: ReLU, fc2, the cell, the output layer.
func headLogitsAt(tp *ad.Tape[float64], m *Captioner[float64], z *ad.Node[float64], label []int) []*ad.Node[float64] {
	in := m.FC2.Forward(tp, tp.ReLU(z))
	h := tp.Const(ad.New[float64](1, m.Arch.Hidden))
	var out []*ad.Node[float64]
	for t := 0; t <= len(label); t++ {
		if t > 0 {
			in = m.Emb.Forward(tp, []int{label[t-1]})
		}
		h = m.RNN.Forward(tp, in, h)
		out = append(out, m.Out.Forward(tp, h))
	}
	return out
}

// maxMargin searches the box [lo, hi] for a large margin z_j − z_y of step
// t of f (a teacher-forced run from a point of the box): random corners
// and points, then signed-gradient ascent from the centre and from a
// corner, projected on the box. It returns the largest margin met: a
// lower bound of the margin's maximum, which a sound bound must not be
// below.
func maxMargin(rng *rand.Rand, lo, hi []float64, t, j, y int, f func(tp *ad.Tape[float64], x *ad.Node[float64]) []*ad.Node[float64]) float64 {
	n := len(lo)
	v := len(f(ad.NewTape[float64](false), ad.NewTape[float64](false).Const(ad.FromSlice(lo, 1, n)))[0].Value.Data)
	w := make([]float64, v)
	w[j], w[y] = 1, -1
	margin := func(x []float64, grad bool) (float64, []float64) {
		tp := ad.NewTape[float64](grad)
		xv := tp.Var(ad.FromSlice(slices.Clone(x), 1, n))
		m := tp.WeightedSum(f(tp, xv)[t], w)
		if !grad {
			return m.Value.Data[0], nil
		}
		if err := tp.Backward(m); err != nil {
			return m.Value.Data[0], make([]float64, n)
		}
		return m.Value.Data[0], xv.Grad.Data
	}
	best := math.Inf(-1)
	x := make([]float64, n)
	for s := range 40 {
		for i := range x {
			if s%2 == 0 {
				x[i] = []float64{lo[i], hi[i]}[rng.IntN(2)]
			} else {
				x[i] = lo[i] + rng.Float64()*(hi[i]-lo[i])
			}
		}
		val, _ := margin(x, false)
		best = max(best, val)
	}
	for start := range 2 {
		for i := range x {
			if start == 0 {
				x[i] = (lo[i] + hi[i]) / 2
			} else {
				x[i] = []float64{lo[i], hi[i]}[rng.IntN(2)]
			}
		}
		for range 25 {
			val, g := margin(x, true)
			best = max(best, val)
			for i, gi := range g {
				step := (hi[i] - lo[i]) / 8
				switch {
				case gi > 0:
					x[i] = min(x[i]+step, hi[i])
				case gi < 0:
					x[i] = max(x[i]-step, lo[i])
				}
			}
		}
		val, _ := margin(x, false)
		best = max(best, val)
	}
	return best
}

// TestCertifiedMarginsBoundEveryInput checks each bound margin by margin,
// which is sharper than the loss: at every step and for every token j, the
// bound on z_j − z_y is at least the largest margin a search of the ball
// finds (random corners and points, signed-gradient ascent).
func TestCertifiedMarginsBoundEveryInput(t *testing.T) {
	m := tinyModel(t, CellReLU, 13)
	rng := rand.New(rand.NewPCG(14, 14))
	n := size(m)
	checked := 0
	for trial := range 6 {
		x := randInput(rng, n)
		label := []int{trial % 3, (trial + 1) % 3}[:1+trial%2]
		for _, eps := range []float64{0.02, 0.1, 0.3} {
			lo, hi := make([]float64, n), make([]float64, n)
			for i, v := range x {
				lo[i], hi[i] = max(v-eps, -1), min(v+eps, 1)
			}
			bounds := map[Bound][]*ad.Node[float64]{}
			for _, bound := range Bounds() {
				tp := ad.NewTape[float64](false)
				w, err := m.worstLogits(tp, tp.Const(ad.FromSlice(x, 1, n)), [][]int{label}, eps, bound)
				if err != nil {
					t.Fatal(err)
				}
				bounds[bound] = w
			}
			for step := 0; step <= len(label); step++ {
				y := m.EOS()
				if step < len(label) {
					y = label[step]
				}
				for j := range m.Vocab() {
					if j == y {
						continue
					}
					found := maxMargin(rng, lo, hi, step, j, y, func(tp *ad.Tape[float64], x *ad.Node[float64]) []*ad.Node[float64] {
						return stepLogits(tp, m, x, label)
					})
					for bound, w := range bounds {
						row := w[step].Value.Data
						if ub := row[j] - row[y]; found > ub+1e-9 {
							t.Fatalf("trial %d, radius %v, %s: step %d margin of token %d reaches %v above its bound %v", trial, eps, bound, step, j, found, ub)
						}
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d margins checked", checked)
}

// TestCROWNHeadBoundsEveryPreactivation checks the head's bounds where
// they are tightest to test: they hold for every pre-activation of fc1's
// box, realisable or not, so the search runs over that box directly
// (corners included), and a margin bound broken by less than the slack of
// the whole network's relaxation is still caught.
func TestCROWNHeadBoundsEveryPreactivation(t *testing.T) {
	m := tinyModel(t, CellReLU, 15)
	rng := rand.New(rand.NewPCG(16, 16))
	f := m.Arch.FCHidden
	checked, tight := 0, 0
	for trial := range 12 {
		zc, zr := make([]float64, f), make([]float64, f)
		for i := range zc {
			zc[i], zr[i] = rng.NormFloat64(), 0.2+rng.Float64()*float64(1+trial%3)
		}
		label := []int{trial % 3, (trial + 2) % 3}[:1+trial%2]
		tp := ad.NewTape[float64](false)
		w := m.headLogits(tp, tp.Const(ad.FromSlice(zc, 1, f)), tp.Const(ad.FromSlice(zr, 1, f)), [][]int{label}, len(label)+1, BoundCROWNIBP)
		lo, hi := make([]float64, f), make([]float64, f)
		for i := range zc {
			lo[i], hi[i] = zc[i]-zr[i], zc[i]+zr[i]
		}
		for step := 0; step <= len(label); step++ {
			y := m.EOS()
			if step < len(label) {
				y = label[step]
			}
			for j := range m.Vocab() {
				if j == y {
					continue
				}
				found := maxMargin(rng, lo, hi, step, j, y, func(tp *ad.Tape[float64], z *ad.Node[float64]) []*ad.Node[float64] {
					return headLogitsAt(tp, m, z, label)
				})
				row := w[step].Value.Data
				ub := row[j] - row[y]
				if found > ub+1e-9 {
					t.Fatalf("trial %d: step %d margin of token %d reaches %v above its bound %v", trial, step, j, found, ub)
				}
				if ub-found < 0.1*math.Max(1, math.Abs(ub)) {
					tight++
				}
				checked++
			}
		}
	}
	// A search that never comes near the bounds could not catch a broken one.
	if tight < checked/4 {
		t.Fatalf("only %d of %d margin bounds within 10%% of a found margin", tight, checked)
	}
	t.Logf("%d margins checked, %d within 10%% of their bound", checked, tight)
}
