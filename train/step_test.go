package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
)

// TestAttackPoint: MTL-IBP's one-step attack stays inside the ball and the
// input range, depends on a row's own stream only (not on the rows beside
// it), and raises the teacher-forced loss above both the clean input's and
// the random start's; with a stream that starts at the centre and a zero
// radius it is the input itself.
func TestAttackPoint(t *testing.T) {
	ds := synthetic(t, 64, 5)
	src := source[float32](t, ds, false)
	x, _, labels := src.Batch(rand.New(rand.NewPCG(2, 3)).Perm(ds.N)[:16], nil)
	m := newModel(t, model.CellReLU, 7)
	size := m.Input().Size()
	loss := func(x []float32, rows [][]int) float64 {
		tp := ad.NewTape[float32](false)
		l, err := model.TeacherForcedLoss(tp, m, model.Input[float32]{X: tp.Const(ad.FromSlice(x, len(rows), size))}, rows)
		if err != nil {
			t.Fatal(err)
		}
		return float64(l.Value.Data[0])
	}
	stream := func(i int) *rand.Rand { return rand.New(rand.NewPCG(11, uint64(i))) }
	const eps = 0.1
	xa, err := attackPoint(ad.NewArena[float32](), m, x, labels, eps, stream)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range xa {
		lo, hi := max(float64(x[i])-eps, -1), min(float64(x[i])+eps, 1)
		if f := float64(v); f < lo-1e-6 || f > hi+1e-6 {
			t.Fatalf("element %d: %v outside [%v, %v]", i, f, lo, hi)
		}
	}
	// The random start alone: an attack of radius eps whose step is lost
	// to projection would equal it; the attack must do better.
	start := make([]float32, len(x))
	for r := range labels {
		g := stream(r)
		for i := r * size; i < (r+1)*size; i++ {
			lo, hi := max(float64(x[i])-eps, -1), min(float64(x[i])+eps, 1)
			start[i] = float32(min(max(lo+g.Float64()*(hi-lo), lo), hi))
		}
	}
	lc, ls, la := loss(x, labels), loss(start, labels), loss(xa, labels)
	if !(la > lc && la > ls) {
		t.Fatalf("loss at the attack %v, at the input %v, at the random start %v: the step does not climb", la, lc, ls)
	}
	// Row 3 alone, with its stream, gets the same point.
	one, err := attackPoint(ad.NewArena[float32](), m, x[3*size:4*size], labels[3:4], eps, func(int) *rand.Rand { return stream(3) })
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range one {
		if d := math.Abs(float64(v - xa[3*size+i])); d > 1e-6 {
			t.Fatalf("row 3 alone: element %d is %v, in the batch %v", i, v, xa[3*size+i])
		}
	}
	zero, err := attackPoint(ad.NewArena[float32](), m, x, labels, 0, stream)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range zero {
		if v != x[i] {
			t.Fatalf("radius 0: element %d moved from %v to %v", i, x[i], v)
		}
	}
	t.Logf("loss: input %.4f, random start %.4f, attack %.4f", lc, ls, la)
}

// TestSABRBox: SABR's small box lies inside the ball for every fraction,
// is centred on the attack point wherever that leaves room, and its
// interval loss is at most the whole ball's for each row (the box is a
// subset, and interval bounds only widen with their box). With the centre
// left at the attack point, the box would leave the ball and the first
// check fails.
func TestSABRBox(t *testing.T) {
	ds := synthetic(t, 64, 5)
	src := source[float32](t, ds, false)
	x, _, labels := src.Batch(rand.New(rand.NewPCG(4, 5)).Perm(ds.N)[:8], nil)
	m := newModel(t, model.CellReLU, 7)
	cert := m.(model.Certifier[float32])
	size := m.Input().Size()
	const eps = 0.1
	xa, err := attackPoint(ad.NewArena[float32](), m, x, labels, eps, func(i int) *rand.Rand { return rand.New(rand.NewPCG(13, uint64(i))) })
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for i := range x {
		if math.Abs(float64(xa[i]-x[i])) > eps/2 {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no element of the attack lies more than eps/2 from the input: the test checks nothing")
	}
	ball := func(c []float32, radius float64, row int) float64 {
		tp := ad.NewTape[float32](false)
		l, _, err := cert.CertifiedLoss(tp, tp.Const(ad.FromSlice(c[row*size:(row+1)*size], 1, size)), labels[row:row+1], radius, model.BoundInterval)
		if err != nil {
			t.Fatal(err)
		}
		return float64(l.Value.Data[0])
	}
	for _, lambda := range []float64{0.1, 0.5, 0.9} {
		c := sabrCenter(x, xa, eps, lambda)
		for i := range x {
			r := lambda * eps
			if lo, hi := float64(c[i])-r, float64(c[i])+r; lo < float64(x[i])-eps-1e-6 || hi > float64(x[i])+eps+1e-6 {
				t.Fatalf("λ %v, element %d: box [%v, %v] leaves the ball [%v, %v]", lambda, i, lo, hi, float64(x[i])-eps, float64(x[i])+eps)
			}
			if d := math.Abs(float64(xa[i] - x[i])); d <= (1-lambda)*eps-1e-6 && c[i] != xa[i] {
				t.Fatalf("λ %v, element %d: the attack point %v has room, the centre moved to %v", lambda, i, xa[i], c[i])
			}
		}
		for row := range labels {
			small, whole := ball(c, lambda*eps, row), ball(x, eps, row)
			if small > whole*(1+1e-5)+1e-6 {
				t.Fatalf("λ %v, row %d: the small box's interval loss %v exceeds the ball's %v", lambda, row, small, whole)
			}
		}
	}
}
