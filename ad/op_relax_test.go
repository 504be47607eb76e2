package ad

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRelaxReLUBoundsEveryPoint: for random coefficients and boxes (each
// neuron dead, active or unstable), lam·ReLU(p) ≤ c·p + k at every sampled
// point of the box, corners included (where the chord is tight), and
// equality holds where no neuron is unstable.
func TestRelaxReLUBoundsEveryPoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const rows, s, n = 12, 3, 7
	tp := NewTape[float64](false)
	lam, lo, hi := New[float64](rows, n), New[float64](rows/s, n), New[float64](rows/s, n)
	kinds := [3]int{}
	for i := range lo.Data {
		a, b := 2*rng.NormFloat64(), 2*rng.NormFloat64()
		lo.Data[i], hi.Data[i] = min(a, b), max(a, b)
		switch {
		case hi.Data[i] <= 0:
			kinds[0]++
		case lo.Data[i] >= 0:
			kinds[1]++
		default:
			kinds[2]++
		}
	}
	for i := range lam.Data {
		lam.Data[i] = rng.NormFloat64()
	}
	if kinds[0] == 0 || kinds[1] == 0 || kinds[2] == 0 {
		t.Fatalf("dead, active, unstable neurons: %v; the test needs each", kinds)
	}
	c, k := tp.RelaxReLU(tp.Const(lam), tp.Const(lo), tp.Const(hi))
	p := make([]float64, n)
	for r := range rows {
		b := r / s
		for trial := range 2000 {
			for j := range p {
				l, u := lo.Data[b*n+j], hi.Data[b*n+j]
				switch trial % 3 {
				case 0:
					p[j] = l
					if rng.IntN(2) == 0 {
						p[j] = u
					}
				case 1:
					p[j] = l + rng.Float64()*(u-l)
				default:
					p[j] = min(max(0, l), u) // the kink
				}
			}
			var exact, bound float64
			for j, v := range p {
				exact += lam.Data[r*n+j] * max(v, 0)
				bound += c.Value.Data[r*n+j] * v
			}
			bound += k.Value.Data[r]
			if exact > bound+1e-12 {
				t.Fatalf("row %d at %v: lam·ReLU(p) = %v above the relaxation's %v", r, p, exact, bound)
			}
		}
	}
}

// TestRowDot against a naive loop.
func TestRowDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := randTensor(rng, []int{6, 4}), randTensor(rng, []int{2, 4})
	tp := NewTape[float64](false)
	got := tp.RowDot(tp.Const(a), tp.Const(b))
	for r := range 6 {
		var want float64
		for j := range 4 {
			want += a.Data[r*4+j] * b.Data[r/3*4+j]
		}
		if math.Abs(got.Value.Data[r]-want) > 1e-12 {
			t.Fatalf("row %d: %v, want %v", r, got.Value.Data[r], want)
		}
	}
}

// TestRelaxSShapeBoundsEveryPoint: for random coefficients and boxes
// (wide, narrow, on either side of 0 and across it, and of width 0),
// lam·f(p) ≤ c·p + k at every sampled point of the box for σ and tanh, and
// the bound is reached within 1e-9 at a box of width 0.
func TestRelaxSShapeBoundsEveryPoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const rows, s, n = 12, 3, 9
	for _, f := range []SShape{SigmoidShape, TanhShape} {
		tp := NewTape[float64](false)
		lam, lo, hi := New[float64](rows, n), New[float64](rows/s, n), New[float64](rows/s, n)
		for i := range lo.Data {
			a, b := 3*rng.NormFloat64(), 3*rng.NormFloat64()
			switch i % 4 {
			case 1:
				b = a + 1e-3*rng.Float64()
			case 2:
				b = a
			}
			lo.Data[i], hi.Data[i] = min(a, b), max(a, b)
		}
		for i := range lam.Data {
			lam.Data[i] = rng.NormFloat64()
		}
		c, k := tp.RelaxSShape(f, tp.Const(lam), tp.Const(lo), tp.Const(hi))
		p := make([]float64, n)
		for r := range rows {
			b := r / s
			for trial := range 3000 {
				for j := range p {
					l, u := lo.Data[b*n+j], hi.Data[b*n+j]
					p[j] = l + rng.Float64()*(u-l)
					if trial%2 == 0 && rng.IntN(2) == 0 {
						p[j] = []float64{l, u}[rng.IntN(2)]
					}
				}
				var exact, bound float64
				for j, v := range p {
					y, _ := f.eval(v)
					exact += lam.Data[r*n+j] * y
					bound += c.Value.Data[r*n+j] * v
				}
				bound += k.Value.Data[r]
				if exact > bound+1e-12 {
					t.Fatalf("shape %d, row %d: lam·f(p) = %v above the bound %v at %v", f, r, exact, bound, p)
				}
			}
		}
		// One neuron of width 0: the tangent is exact there.
		one, _ := tp.RelaxSShape(f, tp.Const(FromSlice([]float64{-2}, 1, 1)), tp.Const(FromSlice([]float64{0.3}, 1, 1)), tp.Const(FromSlice([]float64{0.3}, 1, 1)))
		_, ko := tp.RelaxSShape(f, tp.Const(FromSlice([]float64{-2}, 1, 1)), tp.Const(FromSlice([]float64{0.3}, 1, 1)), tp.Const(FromSlice([]float64{0.3}, 1, 1)))
		y, _ := f.eval(0.3)
		if got := one.Value.Data[0]*0.3 + ko.Value.Data[0]; math.Abs(got-(-2*y)) > 1e-9 {
			t.Fatalf("shape %d: width-0 bound %v, value %v", f, got, -2*y)
		}
	}
}
