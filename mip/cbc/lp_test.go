//go:build cgo

package cbc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/mip/internal/miptest"
)

// polytope is {0 ≤ x ≤ 4, -1 ≤ y ≤ 3, x + 2y ≤ 6, 3x + y ≤ 9, x − y ≥ −2}.
func polytope() *mip.Model {
	m := mip.NewModel("polytope")
	x := m.AddVar("x", 0, 4, mip.Continuous)
	y := m.AddVar("y", -1, 3, mip.Integer) // relaxed by NewLP
	m.AddRow("a", []int{x, y}, []float64{1, 2}, mip.LE, 6)
	m.AddRow("b", []int{x, y}, []float64{3, 1}, mip.LE, 9)
	m.AddRow("c", []int{x, y}, []float64{1, -1}, mip.GE, -2)
	return m
}

// vertexOptimum minimises c·(x, y) over a two-variable model by trying
// every intersection of two constraint or bound lines.
func vertexOptimum(m *mip.Model, c [2]float64) float64 {
	type line struct{ a, b, r float64 }
	var lines []line
	for i := range m.NumRows() {
		r := m.Row(i)
		var l line
		for k, j := range r.Idx {
			if j == 0 {
				l.a = r.Coef[k]
			} else {
				l.b = r.Coef[k]
			}
		}
		l.r = r.Rhs
		lines = append(lines, l)
	}
	for j := range 2 {
		v := m.Var(j)
		for _, b := range []float64{v.Lb, v.Ub} {
			if j == 0 {
				lines = append(lines, line{1, 0, b})
			} else {
				lines = append(lines, line{0, 1, b})
			}
		}
	}
	best := math.Inf(1)
	relaxed := relaxContinuous(m) // Check would reject fractional vertices
	for i, p := range lines {
		for _, q := range lines[i+1:] {
			det := p.a*q.b - p.b*q.a
			if det == 0 {
				continue
			}
			x := []float64{(p.r*q.b - p.b*q.r) / det, (p.a*q.r - p.r*q.a) / det}
			if relaxed.Check(x, 1e-9) == nil {
				best = math.Min(best, c[0]*x[0]+c[1]*x[1])
			}
		}
	}
	return best
}

// relaxContinuous returns a copy of m with every variable continuous.
func relaxContinuous(m *mip.Model) *mip.Model {
	r := mip.NewModel(m.Name())
	for j := range m.NumVars() {
		v := m.Var(j)
		r.AddVar(v.Name, v.Lb, v.Ub, mip.Continuous)
	}
	for i := range m.NumRows() {
		row := m.Row(i)
		r.AddRow(row.Name, row.Idx, row.Coef, row.Sense, row.Rhs)
	}
	return r
}

func TestLPPolytope(t *testing.T) {
	m := polytope()
	lp, err := NewLP(m)
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	objectives := [][2]float64{{1, 0}, {0, 1}, {1, 1}, {-1, 0}, {0, -1}, {1, -1}, {-2, -3}, {3, -1}, {0.5, 2}}
	for _, c := range objectives {
		for _, maximize := range []bool{false, true} {
			want := vertexOptimum(m, c)
			if maximize {
				want = -vertexOptimum(m, [2]float64{-c[0], -c[1]})
			}
			got, st, err := lp.Optimize([]int{0, 1}, c[:], maximize)
			if err != nil || st != mip.Optimal || math.Abs(got-want) > 1e-9 {
				t.Errorf("c %v max %v: got %g %s %v, want %g", c, maximize, got, st, err, want)
			}
			b := lp.DualBound()
			if maximize && !(b >= want && b <= want+1e-9) || !maximize && !(b <= want && b >= want-1e-9) {
				t.Errorf("c %v max %v: dual bound %g, optimum %g", c, maximize, b, want)
			}
		}
	}
	// Tightening a bound and adding a row move the optimum as in a
	// model built with them.
	if err := lp.SetBounds(0, 1, 2); err != nil {
		t.Fatal(err)
	}
	m.SetBounds(0, 1, 2)
	if err := lp.AddRow([]int{0, 1, 1}, []float64{1, 0.5, 0.5}, mip.LE, 3.5); err != nil {
		t.Fatal(err)
	}
	m.AddRow("d", []int{0, 1}, []float64{1, 1}, mip.LE, 3.5)
	for _, c := range objectives {
		want := vertexOptimum(m, c)
		got, st, err := lp.Optimize([]int{0, 1}, c[:], false)
		if err != nil || st != mip.Optimal || math.Abs(got-want) > 1e-9 {
			t.Errorf("modified, c %v: got %g %s %v, want %g", c, got, st, err, want)
		}
	}
	if p, d := lp.PrimalTolerance(), lp.DualTolerance(); !(p > 0 && p < 1e-5 && d > 0 && d < 1e-5) {
		t.Errorf("tolerances %g %g", p, d)
	}
}

func TestLPStatuses(t *testing.T) {
	m := polytope()
	lp, err := NewLP(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AddRow([]int{0}, []float64{1}, mip.GE, 5); err != nil {
		t.Fatal(err)
	}
	if v, st, err := lp.Optimize([]int{0}, []float64{1}, false); err != nil || st != mip.Infeasible || !math.IsInf(v, 1) {
		t.Errorf("infeasible LP: %g %s %v", v, st, err)
	}
	if b := lp.DualBound(); !math.IsInf(b, -1) {
		t.Errorf("dual bound after infeasible: %g", b)
	}
	lp.Close()
	if _, _, err := lp.Optimize([]int{0}, []float64{1}, false); err == nil {
		t.Errorf("Optimize after Close succeeded")
	}

	free := mip.NewModel("free")
	x := free.AddVar("x", math.Inf(-1), math.Inf(1), mip.Continuous)
	y := free.AddVar("y", 0, 1, mip.Continuous)
	free.AddRow("r", []int{x, y}, []float64{1, 1}, mip.LE, 3)
	lp, err = NewLP(free)
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	if v, st, err := lp.Optimize([]int{x}, []float64{1}, false); err != nil || st != mip.Unbounded || !math.IsInf(v, -1) {
		t.Errorf("unbounded LP: %g %s %v", v, st, err)
	}
	if v, st, err := lp.Optimize([]int{x}, []float64{1}, true); err != nil || st != mip.Optimal || v != 3 {
		t.Errorf("max x: %g %s %v", v, st, err)
	}
	// With a free variable in the objective the dual bound can still be
	// finite: x's reduced cost is exactly zero.
	if b := lp.DualBound(); b < 3 || b > 3+1e-9 {
		t.Errorf("dual bound of max x: %g", b)
	}

	tests := []struct {
		name string
		f    func() error
	}{
		{"bounds index", func() error { return lp.SetBounds(5, 0, 1) }},
		{"bounds NaN", func() error { return lp.SetBounds(0, math.NaN(), 1) }},
		{"row index", func() error { return lp.AddRow([]int{7}, []float64{1}, mip.LE, 1) }},
		{"row length", func() error { return lp.AddRow([]int{0, 1}, []float64{1}, mip.LE, 1) }},
		{"objective index", func() error { _, _, err := lp.Optimize([]int{-1}, []float64{1}, false); return err }},
		{"objective NaN", func() error { _, _, err := lp.Optimize([]int{0}, []float64{math.NaN()}, false); return err }},
	}
	for _, tt := range tests {
		if tt.f() == nil {
			t.Errorf("%s: invalid input accepted", tt.name)
		}
	}
}

// reluLP returns the LP relaxation of a random ReLU network encoding.
func reluLP(seed uint64) *mip.Model {
	rng := rand.New(rand.NewPCG(seed, 11))
	const in, hidden = 6, 12
	net := &miptest.ReLUNet{W1: make([][]float64, hidden), B1: make([]float64, hidden), W2: make([]float64, hidden)}
	for h := range hidden {
		net.W1[h] = make([]float64, in)
		for i := range in {
			net.W1[h][i] = rng.NormFloat64()
		}
		net.B1[h] = rng.NormFloat64() * 0.3
		net.W2[h] = rng.NormFloat64()
	}
	lo, hi := make([]float64, in), make([]float64, in)
	for i := range in {
		c := rng.Float64()
		lo[i], hi[i] = c-0.3, c+0.3
	}
	m, _ := net.Encode(lo, hi)
	return m
}

// TestLPWarmStart checks that a long sequence of warm-started
// optimisations agrees with a fresh LP for each objective, and that the
// dual bounds are valid and tight.
func TestLPWarmStart(t *testing.T) {
	for seed := range uint64(3) {
		m := reluLP(seed)
		lp, err := NewLP(m)
		if err != nil {
			t.Fatal(err)
		}
		for j := range m.NumVars() {
			for _, maximize := range []bool{false, true} {
				got, st, err := lp.Optimize([]int{j}, []float64{1}, maximize)
				if err != nil || st != mip.Optimal {
					t.Fatalf("seed %d var %d: %s %v", seed, j, st, err)
				}
				bound := lp.DualBound()
				fresh, err := NewLP(m)
				if err != nil {
					t.Fatal(err)
				}
				want, st, err := fresh.Optimize([]int{j}, []float64{1}, maximize)
				fresh.Close()
				if err != nil || st != mip.Optimal {
					t.Fatalf("fresh: %s %v", st, err)
				}
				if math.Abs(got-want) > 1e-7*(1+math.Abs(want)) {
					t.Errorf("seed %d %s max %v: warm %g, fresh %g", seed, m.Var(j).Name, maximize, got, want)
				}
				sign := 1.0
				if maximize {
					sign = -1
				}
				// Tight unless the variable is free (the output).
				v := m.Var(j)
				if sign*(bound-want) > 1e-9 || !math.IsInf(v.Lb, -1) && sign*(want-bound) > 1e-6 {
					t.Errorf("seed %d %s max %v: dual bound %g, optimum %g", seed, v.Name, maximize, bound, want)
				}
			}
		}
		lp.Close()
	}
}

// TestLPConcurrent runs LPs in several goroutines while CBC solves, and
// checks their answers against sequential ones.
func TestLPConcurrent(t *testing.T) {
	m := reluLP(7)
	seq := func() []float64 {
		lp, err := NewLP(m)
		if err != nil {
			t.Error(err)
			return nil
		}
		defer lp.Close()
		var out []float64
		for rep := range 5 {
			for j := range m.NumVars() {
				v, _, err := lp.Optimize([]int{j}, []float64{1}, rep%2 == 0)
				if err != nil {
					t.Error(err)
				}
				out = append(out, v)
			}
		}
		return out
	}
	want := seq()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			got := seq()
			for k := range want {
				if math.Abs(got[k]-want[k]) > 1e-7*(1+math.Abs(want[k])) {
					t.Errorf("concurrent LP value %d: %g, sequential %g", k, got[k], want[k])
					return
				}
			}
		})
	}
	wg.Go(func() {
		for seed := range uint64(5) {
			mm := miptest.RandomInteger(rand.New(rand.NewPCG(seed, 3)), 10, 2, 4)
			if _, err := (Solver{}).Solve(context.Background(), mm, mip.Options{}); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
}

func BenchmarkLPTighten(b *testing.B) {
	m := reluLP(1)
	lp, err := NewLP(m)
	if err != nil {
		b.Fatal(err)
	}
	defer lp.Close()
	for i := 0; b.Loop(); i++ {
		j := i % m.NumVars()
		if _, _, err := lp.Optimize([]int{j}, []float64{1}, i%2 == 0); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDualBoundAnyMultipliers checks that the dual bound is valid for
// arbitrary multipliers, not just optimal ones: that is what makes it
// safe against CLP's tolerances.
func TestDualBoundAnyMultipliers(t *testing.T) {
	m := reluLP(4)
	// Bound the free output variable: a free variable makes any
	// multipliers but exact ones useless.
	m.SetBounds(m.NumVars()-1, -100, 100)
	lp, err := NewLP(m)
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	finite := 0
	for j := range m.NumVars() {
		if math.IsInf(m.Var(j).Lb, -1) {
			continue
		}
		opt, st, err := lp.Optimize([]int{j}, []float64{1}, false)
		if err != nil || st != mip.Optimal {
			t.Fatalf("%s %v", st, err)
		}
		y := make([]float64, m.NumRows())
		for i := range y {
			y[i] = float64(rowPrice(lp, i))
		}
		for trial := range 20 {
			z := append([]float64(nil), y...)
			scale := math.Pow(10, -float64(trial%8))
			for i := range z {
				z[i] += scale * rng.NormFloat64()
			}
			b := lp.dualBound(z)
			if !(b <= opt+1e-12*(1+math.Abs(opt))) {
				t.Fatalf("%s: bound %g from perturbed duals above optimum %g", m.Var(j).Name, b, opt)
			}
			if !math.IsInf(b, -1) {
				finite++
			}
		}
	}
	if finite < 50 {
		t.Errorf("only %d finite bounds from perturbed duals", finite)
	}
}

// bigLP is a random dense LP that takes CLP's primal simplex about a second
// or more from scratch.
func bigLP(n, rows int) *mip.Model {
	rng := rand.New(rand.NewPCG(9, 9))
	m := mip.NewModel("big")
	for j := range n {
		m.AddVar(fmt.Sprintf("x%d", j), 0, 1, mip.Continuous)
	}
	for i := range rows {
		idx := make([]int, 0, n/2)
		coef := make([]float64, 0, n/2)
		for j := range n {
			if rng.IntN(2) == 0 {
				idx = append(idx, j)
				coef = append(coef, rng.Float64())
			}
		}
		m.AddRow(fmt.Sprintf("r%d", i), idx, coef, mip.LE, float64(n)/8)
	}
	return m
}

// TestLPDeadline: a deadline stops the simplex between iterations, within
// a small margin of the deadline, and returns TimeLimit (no value, no dual
// bound); without one the same LP solves to optimality.
func TestLPDeadline(t *testing.T) {
	m := bigLP(1500, 700)
	obj := make([]float64, 1500)
	idx := make([]int, 1500)
	rng := rand.New(rand.NewPCG(3, 3))
	for j := range obj {
		idx[j], obj[j] = j, rng.Float64()
	}
	// What no deadline can cut — the first iteration of a fresh LP and
	// the call's own work — measured now, on fresh LPs, on this machine
	// under its present load: the larger of two 10 ms deadlines' overruns.
	var over time.Duration
	for range 2 {
		lp, err := NewLP(m)
		if err != nil {
			t.Fatal(err)
		}
		const short = 10 * time.Millisecond
		start := time.Now()
		lp.SetDeadline(start.Add(short))
		_, _, err = lp.Optimize(idx, obj, true)
		over = max(over, time.Since(start)-short)
		lp.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	lp, err := NewLP(m)
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	const limit = 150 * time.Millisecond
	var st mip.Status
	tm := miptest.Time(func() {
		lp.SetDeadline(time.Now().Add(limit))
		_, st, err = lp.Optimize(idx, obj, true)
	})
	took := tm.Wall
	if err != nil {
		t.Fatal(err)
	}
	if st != mip.TimeLimit {
		t.Fatalf("status %v after %v with a %v deadline: the LP must be big enough to need longer", st, took, limit)
	}
	if max := tm.Allowance(limit, over); took > max {
		t.Fatalf("stopped after %v, deadline %v (allowed %v: a 10 ms deadline overran by %v, slowdown %.2f)", took, limit, max, over, tm.Slowdown())
	}
	if !math.IsInf(lp.DualBound(), 1) {
		t.Fatalf("dual bound %v after a time limit", lp.DualBound())
	}
	t.Logf("stopped after %v on a %v deadline", took, limit)
	// An expired deadline returns at once; none solves to the end.
	if _, st, _ := lp.Optimize(idx, obj, true); st != mip.TimeLimit {
		t.Fatalf("expired deadline: status %v", st)
	}
	lp.SetDeadline(time.Time{})
	start := time.Now()
	if _, st, err := lp.Optimize(idx, obj, true); err != nil || st != mip.Optimal {
		t.Fatalf("no deadline: %v %v", st, err)
	}
	t.Logf("full solve %v (warm from the stopped one)", time.Since(start))
}
