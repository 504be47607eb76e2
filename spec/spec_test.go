package spec

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
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
		{[]float64{0}, 2.5}, // wider than the range [−1, 1]
	} {
		if _, err := NewBall(c.center, c.delta, -1, 1); err == nil {
			t.Errorf("NewBall(%v, %v) accepted", c.center, c.delta)
		}
	}
}

// TestCheckRadius: a radius is finite, non-negative and at most the
// width of the input range (the whole range), on one rule for every
// caller; the message says the limit.
func TestCheckRadius(t *testing.T) {
	for _, c := range []struct {
		delta, min, max float64
		want            string // "" accepted
	}{
		{0, -1, 1, ""}, {0.1, -1, 1, ""}, {2, -1, 1, ""}, {1, 0, 1, ""},
		{2.5, -1, 1, "radius 2.5 is wider than the input range [-1, 1]: at most 2"},
		{1.0000001, 0, 1, "at most 1"},
		{-0.1, -1, 1, "finite and non-negative"}, {math.NaN(), -1, 1, "finite"}, {math.Inf(1), -1, 1, "finite"},
		{0.1, 1, 1, "empty or unbounded"}, {0.1, math.Inf(-1), 1, "empty or unbounded"},
	} {
		err := CheckRadius(c.delta, c.min, c.max)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckRadius(%v, %v, %v) = %v, want %q", c.delta, c.min, c.max, err, c.want)
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
		delta := []float64{0, 0.001, 0.1, 0.3, 1.99}[trial%5] * (1 + rng.Float64()*1e-3) // at most 2, the whole range
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

// TestSubstitution: ⌈δ·n⌉ changes at most, never a special token, for
// Contains, Sample and Project alike; bad sets are refused.
func TestSubstitution(t *testing.T) {
	special := []int{0, 1, 2, 3}
	x := []int{4, 5, 6, 7, 8, 9, 10, 11}
	for _, c := range []struct {
		delta  float64
		budget int
	}{{0, 0}, {0.1, 1}, {0.3, 3}, {0.5, 4}, {0.51, 5}, {1, 8}} {
		s, err := NewSubstitution(x, c.delta, 20, special)
		if err != nil {
			t.Fatal(err)
		}
		if s.Budget != c.budget {
			t.Fatalf("δ %v: budget %d, want %d", c.delta, s.Budget, c.budget)
		}
		rng := rand.New(rand.NewPCG(1, uint64(c.budget)))
		y := make([]int, len(x))
		for range 200 {
			s.Sample(rng, y)
			if !s.Contains(y) || s.Changed(y) > c.budget {
				t.Fatalf("δ %v: sample %v outside the set", c.delta, y)
			}
			// Arbitrary sequences project into the set, keeping the
			// first changes.
			for i := range y {
				y[i] = rng.IntN(22) - 1
			}
			s.Project(y)
			if !s.Contains(y) {
				t.Fatalf("δ %v: projection %v outside the set", c.delta, y)
			}
		}
		if s.Contains(x[:7]) || s.Contains(append(slices.Clone(x[:7]), 2)) {
			t.Fatal("a shorter sequence or a special token is in the set")
		}
	}
	for _, bad := range []struct {
		x       []int
		delta   float64
		vocab   int
		special []int
	}{
		{x, -0.1, 20, special}, {x, 1.5, 20, special}, {x, math.NaN(), 20, special},
		{nil, 0.5, 20, special}, {[]int{2, 5}, 0.5, 20, special}, {[]int{25}, 0.5, 20, special},
		{x, 0.5, 20, []int{30}}, {[]int{0}, 0.5, 1, []int{0}},
	} {
		if _, err := NewSubstitution(bad.x, bad.delta, bad.vocab, bad.special); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestBallBoundsExact: the box ends lie in the ball in exact arithmetic
// (checked with big.Float), and the float64 just outside each end does not.
func TestBallBoundsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	inside := func(x, c, d float64) bool {
		diff := new(big.Float).SetPrec(2200).Sub(big.NewFloat(x), big.NewFloat(c)) // exact
		return diff.Abs(diff).Cmp(big.NewFloat(d)) <= 0
	}
	moved := 0
	for k := 0; k < 20000; k++ {
		c := rng.Float64()*2 - 1
		d := []float64{0.1, 0.3, 1.0 / 3, 0.05, rng.Float64()}[k%5]
		b, err := NewBall([]float64{c}, d, -10, 10)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := b.Bounds(0)
		if !inside(lo, c, d) || !inside(hi, c, d) {
			t.Fatalf("centre %v δ %v: bounds [%v, %v] leave the ball", c, d, lo, hi)
		}
		if inside(math.Nextafter(lo, math.Inf(-1)), c, d) || inside(math.Nextafter(hi, math.Inf(1)), c, d) {
			t.Fatalf("centre %v δ %v: bounds [%v, %v] lose a float64 of the ball", c, d, lo, hi)
		}
		if lo != c-d || hi != c+d {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no end needed moving: the test does not exercise rounding")
	}
}

// TestBox: a per-coordinate box clips to the input range, refuses a centre
// outside it, and its projections and samples (float64 and float32) lie in
// it exactly.
func TestBox(t *testing.T) {
	b, err := NewBox([]float64{0.1, 0.5, -0.9}, []float64{0, 0.5, -2}, []float64{0.3, 0.5, -0.8}, -1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := b.Box(); lo[2] != -1 || hi[2] != -0.8 || lo[1] != 0.5 || hi[1] != 0.5 {
		t.Fatalf("box %v %v", lo, hi)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	f32 := b.Float32()
	for i := 0; i < 1000; i++ {
		x := []float64{rng.NormFloat64(), rng.NormFloat64(), math.NaN()}
		b.Project(x)
		if !b.Contains(x) {
			t.Fatalf("projected %v outside the box", x)
		}
		b.Sample(rng, x)
		y := []float32{float32(rng.NormFloat64()), 0.3, float32(math.NaN())}
		f32.Project(y)
		if !b.Contains(x) || !b.Contains([]float64{float64(y[0]), float64(y[1]), float64(y[2])}) {
			t.Fatalf("sample %v or float32 projection %v outside the box", x, y)
		}
	}
	for _, c := range []struct{ x, lo, hi []float64 }{
		{[]float64{0.5}, []float64{0.6}, []float64{0.7}},
		{[]float64{0.5}, []float64{math.NaN()}, []float64{0.7}},
		{[]float64{0.5, 0}, []float64{0}, []float64{1}},
	} {
		if _, err := NewBox(c.x, c.lo, c.hi, -1, 1); err == nil {
			t.Errorf("NewBox(%v, %v, %v) accepted", c.x, c.lo, c.hi)
		}
	}
}
