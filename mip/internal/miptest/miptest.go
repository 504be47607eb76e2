// Package miptest holds test problems with known answers, a brute-force
// reference solver and the behavioural tests every mip.Solver backend
// must pass.
package miptest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lenspec/lenspec/mip"
)

// Knapsack returns the 0/1 knapsack "maximise value subject to weight ≤
// capacity", written as the minimisation of the negated value.
func Knapsack(values, weights []float64, capacity float64) *mip.Model {
	m := mip.NewModel("knapsack")
	idx := make([]int, len(values))
	neg := make([]float64, len(values))
	for i := range values {
		idx[i] = m.AddVar(fmt.Sprintf("take[%d]", i), 0, 1, mip.Binary)
		neg[i] = -values[i]
	}
	m.AddRow("capacity", idx, weights, mip.LE, capacity)
	m.SetObjective(idx, neg, 0)
	return m
}

// Assignment returns the assignment problem with the given square cost
// matrix: x[i][j] = 1 if worker i does job j, every worker does one job
// and every job is done once. The integer optimum equals the LP optimum.
func Assignment(cost [][]float64) *mip.Model {
	n := len(cost)
	m := mip.NewModel("assignment")
	x := make([][]int, n)
	var oi []int
	var oc []float64
	for i := range n {
		x[i] = make([]int, n)
		for j := range n {
			x[i][j] = m.AddVar(fmt.Sprintf("x_%d_%d", i, j), 0, 1, mip.Binary)
			oi = append(oi, x[i][j])
			oc = append(oc, cost[i][j])
		}
	}
	ones := make([]float64, n)
	for k := range ones {
		ones[k] = 1
	}
	for i := range n {
		m.AddRow(fmt.Sprintf("worker_%d", i), x[i], ones, mip.EQ, 1)
		col := make([]int, n)
		for j := range n {
			col[j] = x[j][i]
		}
		m.AddRow(fmt.Sprintf("job_%d", i), col, ones, mip.EQ, 1)
	}
	m.SetObjective(oi, oc, 0)
	return m
}

// AssignmentOptimum returns the optimal assignment cost by trying every
// permutation (n ≤ 8).
func AssignmentOptimum(cost [][]float64) float64 {
	n := len(cost)
	perm := make([]int, n)
	used := make([]bool, n)
	best := math.Inf(1)
	var rec func(i int, sum float64)
	rec = func(i int, sum float64) {
		if i == n {
			best = math.Min(best, sum)
			return
		}
		for j := range n {
			if !used[j] {
				used[j], perm[i] = true, j
				rec(i+1, sum+cost[i][j])
				used[j] = false
			}
		}
	}
	rec(0, 0)
	return best
}

// RandomInteger returns a random model with nb binaries, ni general
// integers in [-2, 2] and nr rows with small integer coefficients, some of
// them equalities, and a random objective with a constant. The domains are
// small enough for BruteForce.
func RandomInteger(rng *rand.Rand, nb, ni, nr int) *mip.Model {
	m := mip.NewModel("random")
	n := nb + ni
	for j := range nb {
		m.AddVar(fmt.Sprintf("b%d", j), 0, 1, mip.Binary)
	}
	for j := range ni {
		m.AddVar(fmt.Sprintf("i%d", j), -2, 2, mip.Integer)
	}
	point := make([]float64, n) // a random point, to make some rows tight
	for j := range point {
		v := m.Var(j)
		point[j] = v.Lb + float64(rng.IntN(int(v.Ub-v.Lb)+1))
	}
	for r := range nr {
		var idx []int
		var coef []float64
		act := 0.0
		for j := range n {
			if rng.IntN(2) == 0 {
				c := float64(rng.IntN(11) - 5)
				idx = append(idx, j)
				coef = append(coef, c)
				act += c * point[j]
			}
		}
		sense := mip.Sense(rng.IntN(3))
		rhs := act + float64(rng.IntN(5)-1)
		if sense == mip.EQ && rng.IntN(2) == 0 {
			rhs = act
		}
		m.AddRow(fmt.Sprintf("row%d", r), idx, coef, sense, rhs)
	}
	idx := make([]int, n)
	coef := make([]float64, n)
	for j := range n {
		idx[j] = j
		coef[j] = float64(rng.IntN(21)-10) + rng.Float64()
	}
	m.SetObjective(idx, coef, float64(rng.IntN(7)-3))
	return m
}

// BruteForce enumerates every integral point of a model without
// continuous variables and with finite bounds, returning the optimum and
// an optimal point, or feasible = false.
func BruteForce(m *mip.Model) (opt float64, x []float64, feasible bool) {
	return BruteForceBox(m, nil, nil)
}

// BruteForceBox is BruteForce for a model whose variables may have
// infinite bounds, enumerating instead (if lo is not nil) the box [lo, hi]
// intersected with the bounds; the rows must imply the box.
func BruteForceBox(m *mip.Model, lo, hi []float64) (opt float64, x []float64, feasible bool) {
	n := m.NumVars()
	cur := make([]float64, n)
	opt = math.Inf(1)
	var rec func(j int)
	rec = func(j int) {
		if j == n {
			if m.Check(cur, 1e-9) == nil {
				if v := m.Eval(cur); v < opt {
					opt, x, feasible = v, append([]float64(nil), cur...), true
				}
			}
			return
		}
		v := m.Var(j)
		if lo != nil {
			v.Lb, v.Ub = math.Max(v.Lb, lo[j]), math.Min(v.Ub, hi[j])
		}
		for k := math.Ceil(v.Lb); k <= v.Ub; k++ {
			cur[j] = k
			rec(j + 1)
		}
	}
	rec(0)
	return opt, x, feasible
}

// Bounds returns an integer model using every kind of variable bound
// (free, only upper, only lower, fixed, negative, tightened binaries),
// with rows that confine it to the box [-4, 4]ⁿ, and that box, for
// BruteForceBox. It checks how file writers and solvers treat bounds.
func Bounds() (m *mip.Model, lo, hi []float64) {
	inf := math.Inf(1)
	m = mip.NewModel("bounds")
	free := m.AddVar("free", -inf, inf, mip.Integer)
	upper := m.AddVar("upper", -inf, 2, mip.Integer)
	lower := m.AddVar("lower", -3, inf, mip.Integer)
	fixed := m.AddVar("fixed", 1, 1, mip.Integer)
	neg := m.AddVar("neg", -4, -1, mip.Integer)
	b0 := m.AddVar("b0", 0, 0, mip.Binary)
	b1 := m.AddVar("b1", 1, 1, mip.Binary)
	b := m.AddVar("b", 0, 1, mip.Binary)
	n := m.NumVars()
	for j := range n {
		m.AddRow(fmt.Sprintf("lo%d", j), []int{j}, []float64{1}, mip.GE, -4)
		m.AddRow(fmt.Sprintf("hi%d", j), []int{j}, []float64{1}, mip.LE, 4)
	}
	m.AddRow("mix", []int{free, upper, lower, neg, b}, []float64{1, 1, -1, 2, 3}, mip.GE, -2.5)
	m.AddRow("eq", []int{free, lower, fixed, b0, b1}, []float64{2, 1, 1, 5, 1}, mip.EQ, 3)
	m.SetObjective([]int{free, upper, lower, fixed, neg, b0, b1, b}, []float64{1, -2, 1.5, 1, 1, 1, -1, -2}, 0.25)
	lo, hi = make([]float64, n), make([]float64, n)
	for j := range n {
		lo[j], hi[j] = -4, 4
	}
	return m, lo, hi
}

// MultiKnapsack returns a random multi-dimensional 0/1 knapsack with n
// items and r capacity rows, as a minimisation. With 500 items and 10 rows it
// takes CBC far longer than a second to prove optimality, while good
// incumbents appear at once: the problem for time-limit and cancellation
// tests.
func MultiKnapsack(rng *rand.Rand, n, r int) *mip.Model {
	m := mip.NewModel("multiknapsack")
	idx := make([]int, n)
	for j := range n {
		idx[j] = m.AddVar(fmt.Sprintf("x%d", j), 0, 1, mip.Binary)
	}
	for i := range r {
		w := make([]float64, n)
		sum := 0.0
		for j := range w {
			w[j] = float64(1 + rng.IntN(1000))
			sum += w[j]
		}
		m.AddRow(fmt.Sprintf("cap%d", i), idx, w, mip.LE, math.Floor(sum/2))
	}
	obj := make([]float64, n)
	for j := range obj {
		obj[j] = -float64(1 + rng.IntN(1000))
	}
	m.SetObjective(idx, obj, 0)
	return m
}

// ReLUNet is a fully connected ReLU network with one hidden layer:
// out = W2·relu(W1·x + b1) + b2, with a scalar output.
type ReLUNet struct {
	W1 [][]float64 // hidden × input
	B1 []float64
	W2 []float64 // hidden
	B2 float64
}

// Eval returns the network's output at x.
func (n *ReLUNet) Eval(x []float64) float64 {
	out := n.B2
	for h, row := range n.W1 {
		pre := n.B1[h]
		for i, w := range row {
			pre += w * x[i]
		}
		out += n.W2[h] * math.Max(pre, 0)
	}
	return out
}

// Encode returns the MIP that maximises the network's output over the box
// lo ≤ x ≤ hi (as the minimisation of its negation), with the usual big-M
// encoding of each hidden ReLU y = max(z, 0) given interval bounds
// L ≤ z ≤ U: y ≥ z, y ≥ 0, y ≤ z − L(1−a), y ≤ U·a, a binary. The
// output variable is returned so that the caller can read it.
func (n *ReLUNet) Encode(lo, hi []float64) (m *mip.Model, out int) {
	m = mip.NewModel("relu")
	in := make([]int, len(lo))
	for i := range lo {
		in[i] = m.AddVar(fmt.Sprintf("in%d", i), lo[i], hi[i], mip.Continuous)
	}
	var oi []int
	var oc []float64
	for h, row := range n.W1 {
		// Interval bounds of the pre-activation.
		L, U := n.B1[h], n.B1[h]
		for i, w := range row {
			L += math.Min(w*lo[i], w*hi[i])
			U += math.Max(w*lo[i], w*hi[i])
		}
		z := m.AddVar(fmt.Sprintf("z%d", h), L, U, mip.Continuous)
		y := m.AddVar(fmt.Sprintf("y%d", h), 0, math.Max(U, 0), mip.Continuous)
		a := m.AddVar(fmt.Sprintf("a%d", h), 0, 1, mip.Binary)
		idx := append([]int{z}, in...)
		coef := append([]float64{-1}, row...)
		m.AddRow(fmt.Sprintf("pre%d", h), idx, coef, mip.EQ, -n.B1[h])
		m.AddRow(fmt.Sprintf("ge%d", h), []int{y, z}, []float64{1, -1}, mip.GE, 0)
		// y ≤ z − L + L·a
		m.AddRow(fmt.Sprintf("lez%d", h), []int{y, z, a}, []float64{1, -1, -L}, mip.LE, -L)
		m.AddRow(fmt.Sprintf("lea%d", h), []int{y, a}, []float64{1, -math.Max(U, 0)}, mip.LE, 0)
		oi = append(oi, y)
		oc = append(oc, n.W2[h])
	}
	out = m.AddVar("out", math.Inf(-1), math.Inf(1), mip.Continuous)
	m.AddRow("output", append([]int{out}, oi...), append([]float64{1}, neg(oc)...), mip.EQ, n.B2)
	m.SetObjective([]int{out}, []float64{-1}, 0)
	return m, out
}

func neg(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = -x
	}
	return out
}

// ShortLimitReLU returns a random ReLU network with 60 inputs and 400
// hidden units and its encoding over the box [-1, 1]⁶⁰ (400 binaries).
// CBC 2.10 spends seconds in preprocessing and root cuts on it, where it
// checks its time limit late (a 2 s limit was seen to end after 2.6 s)
// and ignores SIGINT: the model for tests of short time limits.
func ShortLimitReLU() (*mip.Model, *ReLUNet) {
	rng := rand.New(rand.NewPCG(11, 12))
	const nIn, nHid = 60, 400
	n := &ReLUNet{B1: make([]float64, nHid), W2: make([]float64, nHid)}
	for h := 0; h < nHid; h++ {
		row := make([]float64, nIn)
		for i := range row {
			row[i] = rng.NormFloat64()
		}
		n.W1 = append(n.W1, row)
		n.B1[h] = rng.NormFloat64()
		n.W2[h] = rng.NormFloat64()
	}
	lo, hi := make([]float64, nIn), make([]float64, nIn)
	for i := range lo {
		lo[i], hi[i] = -1, 1
	}
	m, _ := n.Encode(lo, hi)
	return m, n
}

// LongRootLP returns a MIP whose root LP alone takes CLP seconds: 1,000
// dense random rows over 1,000 continuous variables in [-1, 1] and one
// binary, feasible at 0. The model for tests of what stops an LP under
// way (600 × 600 was too short: on an idle machine its LP ended about
// when a 500 ms limit's allowance did).
func LongRootLP() *mip.Model {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 1000
	m := mip.NewModel("longroot")
	idx := make([]int, n)
	for j := range idx {
		idx[j] = m.AddVar(fmt.Sprint("x", j), -1, 1, mip.Continuous)
	}
	z := m.AddVar("z", 0, 1, mip.Binary)
	row := make([]float64, n)
	for i := 0; i < n; i++ {
		for j := range row {
			row[j] = rng.NormFloat64()
		}
		m.AddRow(fmt.Sprint("r", i), idx, row, mip.LE, 1+rng.Float64())
	}
	obj := make([]float64, n+1)
	for j := range obj {
		obj[j] = rng.NormFloat64()
	}
	m.SetObjective(append(idx, z), obj, 0)
	return m
}
