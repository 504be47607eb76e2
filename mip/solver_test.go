package mip

import (
	"math"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	m := NewModel("v")
	m.AddVar("x", 0, 1, Binary)
	m.AddVar("y", 0, 1, Continuous)
	tests := []struct {
		name string
		opt  Options
		ok   bool
	}{
		{"zero", Options{}, true},
		{"full", Options{TimeLimit: time.Second, Grace: time.Millisecond, Threads: 2, Start: []float64{1, 0.5}, UseCutoff: true, Cutoff: 3, SolutionLimit: 1, RelGap: 0.1, AbsGap: 1}, true},
		{"start length", Options{Start: []float64{1}}, false},
		{"start NaN", Options{Start: []float64{1, math.NaN()}}, false},
		{"time", Options{TimeLimit: -1}, false},
		{"grace", Options{Grace: -1}, false},
		{"threads", Options{Threads: -1}, false},
		{"solutions", Options{SolutionLimit: -2}, false},
		{"cutoff", Options{UseCutoff: true, Cutoff: math.Inf(1)}, false},
		{"unused cutoff", Options{Cutoff: math.NaN()}, true},
		{"rel gap", Options{RelGap: -0.1}, false},
		{"abs gap", Options{AbsGap: math.NaN()}, false},
	}
	for _, tt := range tests {
		if err := tt.opt.Validate(m); (err == nil) != tt.ok {
			t.Errorf("%s: Validate = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

func TestFinish(t *testing.T) {
	m := NewModel("f")
	x := m.AddVar("x", 0, 10, Integer)
	m.SetObjective([]int{x}, []float64{2}, 1)
	inf := math.Inf(1)
	tests := []struct {
		name      string
		in        Result
		opt       Options
		status    Status
		objective float64
		bound     float64
	}{
		{"optimal", Result{Status: Optimal, HasSolution: true, Solution: []float64{3}, Bound: 6.5}, Options{}, Optimal, 7, 6.5},
		{"bound above objective", Result{Status: Optimal, HasSolution: true, Solution: []float64{3}, Bound: 7.5}, Options{}, Optimal, 7, 7},
		{"optimal without solution", Result{Status: Optimal}, Options{}, Error, inf, math.Inf(-1)},
		{"wrong length", Result{Status: Optimal, HasSolution: true, Solution: []float64{3, 4}, Bound: 1}, Options{}, Error, inf, math.Inf(-1)},
		{"infeasible", Result{Status: Infeasible, Bound: 3}, Options{}, Infeasible, inf, inf},
		{"infeasible below cutoff", Result{Status: Infeasible, Bound: math.NaN()}, Options{UseCutoff: true, Cutoff: 4}, Infeasible, inf, 4},
		{"infeasible with solution", Result{Status: Infeasible, HasSolution: true, Solution: []float64{1}}, Options{}, Error, inf, math.Inf(-1)},
		{"time limit", Result{Status: TimeLimit, Bound: math.NaN()}, Options{}, TimeLimit, inf, math.Inf(-1)},
		{"time limit cutoff", Result{Status: TimeLimit, Bound: 9}, Options{UseCutoff: true, Cutoff: 5}, TimeLimit, inf, 5},
		{"solution limit", Result{Status: SolutionLimit, HasSolution: true, Solution: []float64{1}, Bound: 0}, Options{UseCutoff: true, Cutoff: 5}, SolutionLimit, 3, 0},
		{"unbounded", Result{Status: Unbounded, Bound: 4}, Options{}, Unbounded, inf, math.Inf(-1)},
	}
	for _, tt := range tests {
		r := tt.in
		r.Finish(m, &tt.opt)
		if r.Status != tt.status || r.Objective != tt.objective || r.Bound != tt.bound {
			t.Errorf("%s: got %s %g bound %g, want %s %g bound %g", tt.name, r.Status, r.Objective, r.Bound, tt.status, tt.objective, tt.bound)
		}
		if !r.HasSolution && r.Solution != nil {
			t.Errorf("%s: solution kept without HasSolution", tt.name)
		}
	}
}
