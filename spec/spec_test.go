package spec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/model"
)

func TestBallBounds(t *testing.T) {
	b, err := NewBall([]float64{-1, 0, 0.95}, 0.1, -1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][2]float64{{-1, -0.9}, {-0.1, 0.1}, {0.85, 1}} {
		lo, hi := b.Bounds(i)
		if math.Abs(lo-want[0]) > 1e-15 || math.Abs(hi-want[1]) > 1e-15 {
			t.Errorf("bounds %d = [%v, %v], want %v", i, lo, hi, want)
		}
	}
	for _, c := range []struct {
		center []float64
		delta  float64
	}{
		{[]float64{0}, -0.1}, {[]float64{0}, math.NaN()}, {[]float64{0}, math.Inf(1)}, {[]float64{1.5}, 0.1}, {[]float64{math.NaN()}, 0.1},
	} {
		if _, err := NewBall(c.center, c.delta, -1, 1); err == nil {
			t.Errorf("NewBall(%v, %v) accepted", c.center, c.delta)
		}
	}
}

// TestProjectAndSampleStayInside checks the float32 paths land inside the
// float64 ball, including radii that are not representable in float32.
func TestProjectAndSampleStayInside(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n := 50
		c := make([]float64, n)
		for i := range c {
			c[i] = 2*rng.Float64() - 1
		}
		delta := []float64{0, 0.001, 0.1, 0.3, 2}[trial%5] * (1 + rng.Float64()*1e-3)
		b, err := NewBall(c, delta, -1, 1)
		if err != nil {
			t.Fatal(err)
		}
		x32 := make([]float32, n)
		x64 := make([]float64, n)
		for i := range x32 {
			x32[i] = float32(4*rng.Float64() - 2)
			x64[i] = float64(x32[i])
		}
		x32[0] = float32(math.NaN())
		b.Float32().Project(x32)
		b.Project(x64)
		if (delta > 0 && !b.Float32().Contains(x32)) || !b.Contains(x64) {
			t.Fatalf("trial %d: projection left the ball", trial)
		}
		b.Float32().Sample(rng, x32)
		b.Sample(rng, x64)
		if (delta > 0 && !b.Float32().Contains(x32)) || !b.Contains(x64) {
			t.Fatalf("trial %d: sample outside the ball", trial)
		}
		// Projection is idempotent and leaves inside points alone.
		before := append([]float64(nil), x64...)
		b.Project(x64)
		for i := range x64 {
			if x64[i] != before[i] {
				t.Fatalf("projection moved an inside point")
			}
		}
	}
}

func TestSampleCoversBall(t *testing.T) {
	b, _ := NewBall([]float64{0}, 0.5, -1, 1)
	rng := rand.New(rand.NewPCG(3, 3))
	x := make([]float64, 1)
	lo, hi := 1.0, -1.0
	for i := 0; i < 10000; i++ {
		b.Sample(rng, x)
		lo, hi = math.Min(lo, x[0]), math.Max(hi, x[0])
	}
	if lo > -0.49 || hi < 0.49 {
		t.Fatalf("samples span [%v, %v], want about [-0.5, 0.5]", lo, hi)
	}
}

func TestExceeds(t *testing.T) {
	for _, c := range []struct {
		r    model.Result
		k    int
		want bool
	}{
		{model.Result{Tokens: []int{1, 2}, Stopped: true}, 2, false},
		{model.Result{Tokens: []int{1, 2, 3}, Stopped: true}, 2, true},
		{model.Result{Tokens: []int{1, 1, 1, 1}, Stopped: false}, 3, true}, // ℓ ≥ 4 > 3
		{model.Result{Tokens: []int{1, 1}, Stopped: false}, 2, false},      // cap 2 cannot show ℓ > 2
	} {
		if got := Exceeds(c.r, c.k); got != c.want {
			t.Errorf("Exceeds(%+v, %d) = %v, want %v", c.r, c.k, got, c.want)
		}
	}
}

// TestFloat32ProjectMatchesGeneric: the precomputed float32 box projects
// exactly as the generic projection does, NaNs included.
func TestFloat32ProjectMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 100; trial++ {
		c := make([]float64, 40)
		for i := range c {
			c[i] = 2*rng.Float64() - 1
		}
		b, _ := NewBall(c, []float64{0, 1e-7, 0.01, 0.3}[trial%4]*(1+rng.Float64()), -1, 1)
		x := make([]float32, len(c))
		for i := range x {
			x[i] = float32(3*rng.Float64() - 1.5)
		}
		x[trial%len(x)] = float32(math.NaN())
		want := append([]float32(nil), x...)
		project(b, want)
		b.Float32().Project(x)
		for i := range x {
			if x[i] != want[i] {
				t.Fatalf("trial %d coordinate %d: %v, generic projection %v", trial, i, x[i], want[i])
			}
		}
	}
}
