//go:build cgo

package cbc

/*
#cgo pkg-config: clp
#include <stdlib.h>
#include <coin/Clp_C_Interface.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"
	"unsafe"

	"github.com/lenspec/lenspec/mip"
)

// LP is the linear relaxation of a mip.Model held by CLP, re-optimised
// with one objective after another: the workhorse of bound tightening,
// which minimises and maximises every neuron's pre-activation in turn.
// Each Optimize starts from the previous optimal basis, which stays
// primal feasible when only the objective changes.
//
// An LP must not be used by two goroutines at once; distinct LPs may be
// used concurrently with one another and with CBC solves. Close releases
// the C memory.
//
// # Soundness
//
// The value Optimize returns is CLP's floating-point optimum: its primal
// and dual feasibility tolerances (PrimalTolerance, DualTolerance; 1e-7 by
// default) mean it may err by about DualTolerance·Σ_j (ub_j − lb_j) in
// either direction, and more on badly scaled models. Callers that use it
// as a bound must pad it outward. DualBound gives the rigorous
// alternative: a bound computed in Go from CLP's row duals, valid whatever
// their accuracy.
type LP struct {
	p     unsafe.Pointer // *Clp_Simplex
	clean runtime.Cleanup
	n, nr int
	lb    []float64 // column bounds (the Go copy, used for DualBound)
	ub    []float64
	rlb   []float64 // row bounds
	rub   []float64
	rows  [][]int // row-wise copy of the matrix, for DualBound
	vals  [][]float64
	obj   []float64 // the objective of the last Optimize, minimised
	sign  float64   // -1 if the last Optimize maximised
	bound float64   // DualBound of the last Optimize
	err   error     // set once closed
	// deadline, if set, stops every Optimize at that time (SetDeadline).
	deadline time.Time
}

// NewLP loads the linear relaxation of m (integer variables relaxed to
// their bounds; the objective is set by Optimize).
func NewLP(m *mip.Model) (*LP, error) {
	if err := m.Err(); err != nil {
		return nil, err
	}
	start, index, value := m.CSC()
	if len(index) > math.MaxInt32 {
		return nil, fmt.Errorf("cbc: LP of %q: %d nonzeros are more than CLP can index", m.Name(), len(index))
	}
	n := m.NumVars()
	lp := &LP{n: n, nr: m.NumRows(), lb: make([]float64, n), ub: make([]float64, n), obj: make([]float64, n), sign: 1}
	for j := range n {
		v := m.Var(j)
		lp.lb[j], lp.ub[j] = v.Lb, v.Ub
	}
	lp.rlb, lp.rub = m.RowBounds()
	for i := range lp.nr {
		r := m.Row(i)
		lp.rows = append(lp.rows, r.Idx)
		lp.vals = append(lp.vals, r.Coef)
	}
	lp.p = C.Clp_newModel()
	if lp.p == nil {
		return nil, errors.New("cbc: LP: CLP could not allocate a model")
	}
	// Free the model if the LP is dropped without Close. Methods that
	// pass lp.p to C keep lp alive until they return, lest the cleanup
	// free the model during the call.
	lp.clean = runtime.AddCleanup(lp, func(p unsafe.Pointer) { C.Clp_deleteModel(p) }, lp.p)
	C.Clp_setLogLevel(lp.p, 0)
	cs, ci := cInts(start), cInts(index)
	C.Clp_loadProblem(lp.p, C.int(n), C.int(lp.nr), iptr(cs), iptr(ci), dptr(value),
		dptr(cInf(append([]float64(nil), lp.lb...))), dptr(cInf(append([]float64(nil), lp.ub...))), nil,
		dptr(cInf(append([]float64(nil), lp.rlb...))), dptr(cInf(append([]float64(nil), lp.rub...))))
	lp.bound = math.Inf(-1)
	return lp, nil
}

// dptr and iptr return C pointers to the first element of s, or nil if s
// is empty. CLP copies what it is given, so Go memory may be passed.
func dptr(s []float64) *C.double {
	if len(s) == 0 {
		return nil
	}
	return (*C.double)(unsafe.Pointer(&s[0]))
}

func iptr(s []C.int) *C.int {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

func cInts(v []int) []C.int {
	out := make([]C.int, len(v))
	for i, x := range v {
		out[i] = C.int(x)
	}
	return out
}

var errClosed = errors.New("cbc: LP used after Close")

// Close releases the LP. Further calls return errors.
func (lp *LP) Close() {
	if lp.p != nil {
		lp.clean.Stop()
		C.Clp_deleteModel(lp.p)
		lp.p = nil
		lp.err = errClosed
	}
}

// NumVars returns the number of columns.
func (lp *LP) NumVars() int { return lp.n }

// PrimalTolerance returns CLP's primal feasibility tolerance: constraints
// and bounds may be violated by this much at an "optimal" point.
func (lp *LP) PrimalTolerance() float64 {
	defer runtime.KeepAlive(lp) // see NewLP
	if lp.p == nil {
		return math.NaN()
	}
	return float64(C.Clp_primalTolerance(lp.p))
}

// DualTolerance returns CLP's dual feasibility tolerance: reduced costs
// may have the wrong sign by this much at an "optimal" basis, so the
// optimal value may be off by up to DualTolerance·Σ_j (ub_j − lb_j).
func (lp *LP) DualTolerance() float64 {
	defer runtime.KeepAlive(lp) // see NewLP
	if lp.p == nil {
		return math.NaN()
	}
	return float64(C.Clp_dualTolerance(lp.p))
}

// SetBounds changes the bounds of column i (invalidating nothing: the
// next Optimize starts from the current basis).
func (lp *LP) SetBounds(i int, lb, ub float64) error {
	defer runtime.KeepAlive(lp) // see NewLP
	if lp.err != nil {
		return lp.err
	}
	if i < 0 || i >= lp.n {
		return fmt.Errorf("cbc: LP: SetBounds: column %d out of range [0, %d)", i, lp.n)
	}
	if math.IsNaN(lb) || math.IsNaN(ub) || math.IsInf(lb, 1) || math.IsInf(ub, -1) {
		return fmt.Errorf("cbc: LP: SetBounds: invalid bounds [%g, %g] for column %d", lb, ub, i)
	}
	lp.lb[i], lp.ub[i] = lb, ub
	cl := unsafe.Slice((*float64)(unsafe.Pointer(C.Clp_columnLower(lp.p))), lp.n)
	cu := unsafe.Slice((*float64)(unsafe.Pointer(C.Clp_columnUpper(lp.p))), lp.n)
	cl[i], cu[i] = cInf1(lb), cInf1(ub)
	// The arrays were changed in place: make CLP re-read them.
	C.Clp_chgColumnLower(lp.p, (*C.double)(unsafe.Pointer(&cl[0])))
	C.Clp_chgColumnUpper(lp.p, (*C.double)(unsafe.Pointer(&cu[0])))
	return nil
}

func cInf1(x float64) float64 {
	if math.IsInf(x, 1) {
		return math.MaxFloat64
	}
	if math.IsInf(x, -1) {
		return -math.MaxFloat64
	}
	return x
}

// AddRow adds the constraint Σ coef[k]·x[idx[k]] sense rhs.
func (lp *LP) AddRow(idx []int, coef []float64, sense mip.Sense, rhs float64) error {
	defer runtime.KeepAlive(lp) // see NewLP
	if lp.err != nil {
		return lp.err
	}
	// Validate and merge through a throwaway model, which also sums
	// repeated indices.
	m := mip.NewModel("lp")
	for range lp.n {
		m.AddVar("", math.Inf(-1), math.Inf(1), mip.Continuous)
	}
	m.AddRow("", idx, coef, sense, rhs)
	if err := m.Err(); err != nil {
		return fmt.Errorf("cbc: LP: AddRow: %w", err)
	}
	r := m.Row(0)
	lo, hi := m.RowBounds()
	lp.rows = append(lp.rows, r.Idx)
	lp.vals = append(lp.vals, r.Coef)
	lp.rlb = append(lp.rlb, lo[0])
	lp.rub = append(lp.rub, hi[0])
	lp.nr++
	starts := []C.int{0, C.int(len(r.Idx))}
	ci := cInts(r.Idx)
	vals := r.Coef
	if len(vals) == 0 { // CLP wants valid pointers
		ci, vals = []C.int{0}, []float64{0}
	}
	C.Clp_addRows(lp.p, 1, dptr(cInf(lo)), dptr(cInf(hi)), iptr(starts), iptr(ci), dptr(vals))
	return nil
}

// Optimize minimises (or, if maximize, maximises) Σ coef[k]·x[idx[k]]
// over the LP, starting from the basis the previous call left. It returns
// the optimal value and Optimal, or Infeasible or Unbounded (value ±Inf),
// TimeLimit at the deadline (SetDeadline; value NaN), or Error if CLP gave
// up (value NaN). See the type's documentation for
// how far the value can be trusted, and DualBound for a rigorous bound.
func (lp *LP) Optimize(idx []int, coef []float64, maximize bool) (value float64, status mip.Status, err error) {
	defer runtime.KeepAlive(lp) // see NewLP
	if lp.err != nil {
		return math.NaN(), mip.Error, lp.err
	}
	if len(idx) != len(coef) {
		return math.NaN(), mip.Error, fmt.Errorf("cbc: LP: Optimize: %d indices but %d coefficients", len(idx), len(coef))
	}
	sign := 1.0
	if maximize {
		sign = -1
	}
	clear(lp.obj)
	for k, j := range idx {
		if j < 0 || j >= lp.n {
			return math.NaN(), mip.Error, fmt.Errorf("cbc: LP: Optimize: column %d out of range [0, %d)", j, lp.n)
		}
		if c := coef[k]; math.IsNaN(c) || math.IsInf(c, 0) {
			return math.NaN(), mip.Error, fmt.Errorf("cbc: LP: Optimize: coefficient %g is not finite", c)
		}
		lp.obj[j] += sign * coef[k]
	}
	lp.sign = sign
	lp.bound = math.Inf(-1) * sign
	if lp.n == 0 {
		return 0, mip.Optimal, nil
	}
	C.Clp_chgObjCoefficients(lp.p, dptr(lp.obj))
	C.Clp_setMaximumSeconds(lp.p, -1)
	left := -1.0
	if !lp.deadline.IsZero() {
		d := time.Until(lp.deadline)
		if d <= 0 {
			return math.NaN(), mip.TimeLimit, nil
		}
		left = d.Seconds()
	}
	if C.ls_lp_set_deadline(lp.p, C.double(left)) == 0 && left >= 0 {
		// Not the CLP layout the shim knows: CLP's own limit, in CPU
		// seconds, is the fallback.
		C.Clp_setMaximumSeconds(lp.p, C.double(left))
	}
	// Primal simplex: the previous optimal basis is primal feasible for
	// the new objective (unless bounds or rows changed, which primal
	// simplex also copes with).
	C.Clp_primal(lp.p, 0)
	st := C.Clp_status(lp.p)
	if st == 0 && C.Clp_secondaryStatus(lp.p) != 0 {
		// Optimal for the scaled problem only: polish once.
		C.Clp_primal(lp.p, 0)
		st = C.Clp_status(lp.p)
	}
	switch st {
	case 3, 5: // stopped by CLP's time limit or the deadline's event handler
		return math.NaN(), mip.TimeLimit, nil
	case 0:
		value = float64(C.Clp_objectiveValue(lp.p))
		y := unsafe.Slice((*float64)(unsafe.Pointer(C.Clp_getRowPrice(lp.p))), lp.nr)
		lp.bound = sign * lp.dualBound(append([]float64(nil), y...))
		return sign * value, mip.Optimal, nil
	case 1:
		return sign * math.Inf(1), mip.Infeasible, nil
	case 2:
		return sign * math.Inf(-1), mip.Unbounded, nil
	}
	return math.NaN(), mip.Error, nil
}

// SetDeadline stops every later Optimize at t (zero: no deadline): one
// that reaches it returns TimeLimit, with no value and no dual bound. CLP
// checks it between simplex iterations, so a solve ends within one
// iteration of t.
func (lp *LP) SetDeadline(t time.Time) { lp.deadline = t }

// DualBound returns a rigorous bound on the optimum of the last Optimize:
// a lower bound if it minimised, an upper bound if it maximised. It is
// the value of the Lagrangian dual at CLP's row duals y (the approach of
// Neumaier and Shcherbina, 2004): for every feasible x, with reduced
// costs d = c − Aᵀy and row activities r = Ax,
//
//	c·x = d·x + y·r ≥ Σ_j min_{lb_j ≤ x_j ≤ ub_j} d_j·x_j + Σ_i min_{rlb_i ≤ r_i ≤ rub_i} y_i·r_i,
//
// which holds for any y, so it needs neither optimality nor feasibility
// of CLP's answer. It is computed in Go from the LP's own copy of the
// data, with an a-priori bound on the floating-point rounding error
// subtracted. Duals of the wrong sign for a one-sided row are first set
// to zero. The bound is finite only if every variable with a nonzero
// reduced cost is bounded on the relevant side: give every variable
// finite bounds (interval bounds provide them) to get a useful value.
// After an Optimize that did not end Optimal it is -Inf (+Inf when
// maximising).
func (lp *LP) DualBound() float64 { return lp.bound }

// dualBound computes a safe lower bound on min lp.obj·x from the row
// multipliers y, which it may modify.
func (lp *LP) dualBound(y []float64) float64 {
	const u = 0x1p-53 // unit roundoff
	gamma := func(n int) float64 { return float64(n) * u / (1 - float64(n)*u) }
	sum, mag := 0.0, 0.0 // the bound and the sum of its terms' magnitudes
	for i, yi := range y {
		switch {
		case math.IsNaN(yi) || math.IsInf(yi, 0):
			return math.Inf(-1)
		case yi > 0 && math.IsInf(lp.rlb[i], -1), yi < 0 && math.IsInf(lp.rub[i], 1):
			y[i] = 0
		case yi > 0:
			t := yi * lp.rlb[i]
			sum += t
			mag += math.Abs(t)
		case yi < 0:
			t := yi * lp.rub[i]
			sum += t
			mag += math.Abs(t)
		}
	}
	// d = c − Aᵀy, accumulated with error-free transformations (FMA for
	// products, TwoSum for sums): d_j = s_j + r_j exactly, where r_j
	// collects the rounding errors, so that a reduced cost that is
	// exactly zero is known to be (a free variable's usually is).
	s := append([]float64(nil), lp.obj...)
	r := make([]float64, lp.n)
	rmag := make([]float64, lp.n) // Σ |rounding errors| entering r_j
	cnt := make([]int, lp.n)
	for i, yi := range y {
		if yi == 0 {
			continue
		}
		for k, j := range lp.rows[i] {
			a := lp.vals[i][k]
			p := a * yi
			pe := math.FMA(a, yi, -p) // a·yi = p + pe
			ns := s[j] - p
			bp := ns - s[j]
			te := (s[j] - (ns - bp)) + (-p - bp) // s[j] − p = ns + te
			s[j] = ns
			r[j] += te - pe
			rmag[j] += math.Abs(te) + math.Abs(pe)
			cnt[j]++
		}
	}
	d := make([]float64, lp.n)
	for j := range d {
		d[j] = s[j] + r[j]
	}
	for j, dj := range d {
		// Error of summing the 2·cnt rounding errors, and of forming
		// s + r.
		e := gamma(2*cnt[j]+1)*rmag[j] + u*math.Abs(dj)
		lo, hi := dj-e, dj+e
		// min over x in [lb, ub] and d in [lo, hi] of d·x, attained at
		// a corner.
		t := math.Inf(1)
		for _, dd := range [2]float64{lo, hi} {
			for _, x := range [2]float64{lp.lb[j], lp.ub[j]} {
				p := dd * x
				if dd == 0 {
					p = 0 // even for an infinite bound
				}
				t = math.Min(t, p)
			}
		}
		if math.IsInf(t, -1) || math.IsNaN(t) {
			return math.Inf(-1)
		}
		sum += t
		mag += math.Abs(t)
	}
	// Each product and each addition above errs by at most one unit
	// roundoff of the magnitudes involved.
	n := lp.n + lp.nr + 2
	b := sum - (gamma(n)+u)*mag - float64(n)*math.SmallestNonzeroFloat64
	if math.IsNaN(b) {
		return math.Inf(-1)
	}
	return b
}

// rowPrice returns CLP's dual value of row i (for tests).
func rowPrice(lp *LP, i int) float64 {
	defer runtime.KeepAlive(lp)
	return unsafe.Slice((*float64)(unsafe.Pointer(C.Clp_getRowPrice(lp.p))), lp.nr)[i]
}
