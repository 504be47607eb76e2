package mip

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestModelBuild(t *testing.T) {
	m := NewModel("build")
	x := m.AddVar("x", -1, 3, Continuous)
	b := m.AddVar("", -5, 5, Binary)
	k := m.AddVar("k", math.Inf(-1), math.Inf(1), Integer)
	if m.NumVars() != 3 || m.NumInts() != 2 {
		t.Fatalf("NumVars %d NumInts %d", m.NumVars(), m.NumInts())
	}
	if v := m.Var(b); v.Name != "x1" || v.Lb != 0 || v.Ub != 1 || v.Type != Binary {
		t.Errorf("binary: %+v", v)
	}
	r := m.AddRow("r", []int{k, x, k, b}, []float64{1, 2, 2, 0}, LE, 4)
	if got := m.Row(r); !slices.Equal(got.Idx, []int{x, k}) || !slices.Equal(got.Coef, []float64{2, 3}) {
		t.Errorf("row not merged: %+v", got)
	}
	if got := m.AddRow("", nil, nil, GE, -1); m.Row(got).Name != "r1" {
		t.Errorf("default row name %q", m.Row(got).Name)
	}
	m.SetObjective([]int{x, x, k}, []float64{1, 1, -1}, 2.5)
	coef, c := m.Objective()
	if !slices.Equal(coef, []float64{2, 0, -1}) || c != 2.5 {
		t.Errorf("objective %v + %g", coef, c)
	}
	if got := m.Eval([]float64{1, 0, 4}); got != 2-4+2.5 {
		t.Errorf("Eval = %g", got)
	}
	if !math.IsNaN(m.Eval([]float64{1})) {
		t.Errorf("Eval of a short point is not NaN")
	}
	m.SetBounds(b, -3, 0.5)
	if v := m.Var(b); v.Lb != 0 || v.Ub != 0.5 {
		t.Errorf("SetBounds on binary: %+v", v)
	}
	if m.Err() != nil {
		t.Fatalf("unexpected error %v", m.Err())
	}
	c2 := m.Clone()
	c2.SetBounds(x, 0, 0)
	c2.AddRow("extra", []int{x}, []float64{1}, EQ, 0)
	if m.Var(x).Lb != -1 || m.NumRows() != 2 {
		t.Errorf("Clone shares state with the original")
	}
	if (m.Var(-1) != VarInfo{}) || m.Row(7).Name != "" {
		t.Errorf("out-of-range accessors should return zero values")
	}

	start, index, value := m.CSC()
	if !slices.Equal(start, []int{0, 1, 1, 2}) || !slices.Equal(index, []int{0, 0}) || !slices.Equal(value, []float64{2, 3}) {
		t.Errorf("CSC %v %v %v", start, index, value)
	}
	lo, hi := m.RowBounds()
	if lo[0] != math.Inf(-1) || hi[0] != 4 || lo[1] != -1 || hi[1] != math.Inf(1) {
		t.Errorf("RowBounds %v %v", lo, hi)
	}
}

func TestModelErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func(m *Model)
		want  string
	}{
		{"NaN bound", func(m *Model) { m.AddVar("v", math.NaN(), 1, Continuous) }, "invalid bounds"},
		{"lb +Inf", func(m *Model) { m.AddVar("v", math.Inf(1), math.Inf(1), Continuous) }, "invalid bounds"},
		{"bad type", func(m *Model) { m.AddVar("v", 0, 1, VarType(9)) }, "unknown type"},
		{"index", func(m *Model) { m.AddRow("r", []int{3}, []float64{1}, LE, 0) }, "out of range"},
		{"lengths", func(m *Model) { m.AddRow("r", []int{0}, nil, LE, 0) }, "1 indices but 0"},
		{"coef Inf", func(m *Model) { m.AddRow("r", []int{0}, []float64{math.Inf(1)}, LE, 0) }, "not finite"},
		{"rhs NaN", func(m *Model) { m.AddRow("r", []int{0}, []float64{1}, LE, math.NaN()) }, "right-hand side"},
		{"sense", func(m *Model) { m.AddRow("r", []int{0}, []float64{1}, Sense(5), 0) }, "unknown sense"},
		{"objective", func(m *Model) { m.SetObjective([]int{0}, []float64{1}, math.Inf(-1)) }, "constant"},
		{"SetBounds index", func(m *Model) { m.SetBounds(4, 0, 1) }, "out of range"},
		{"SetBounds NaN", func(m *Model) { m.SetBounds(0, 0, math.NaN()) }, "invalid bounds"},
	}
	for _, tt := range tests {
		m := NewModel("e")
		m.AddVar("x", 0, 1, Continuous)
		tt.build(m)
		if m.Err() == nil || !strings.Contains(m.Err().Error(), tt.want) {
			t.Errorf("%s: error %v, want it to mention %q", tt.name, m.Err(), tt.want)
			continue
		}
		// Indices stay consistent and the first error sticks.
		first := m.Err()
		m.AddVar("y", math.NaN(), 0, Continuous)
		if m.Err() != first {
			t.Errorf("%s: error replaced", tt.name)
		}
		if err := m.Check([]float64{0, 0}, 0); err == nil {
			t.Errorf("%s: Check passed on a broken model", tt.name)
		}
		var sb strings.Builder
		if m.WriteMPS(&sb) == nil || m.WriteLP(&sb) == nil {
			t.Errorf("%s: writers accepted a broken model", tt.name)
		}
	}
	m := NewModel("lb>ub")
	m.AddVar("v", 2, 1, Continuous)
	if m.Err() != nil {
		t.Errorf("lb > ub should be allowed (an infeasible model): %v", m.Err())
	}
}

func TestCheck(t *testing.T) {
	m := NewModel("check")
	x := m.AddVar("x", 0, 10, Continuous)
	n := m.AddVar("n", -3, 3, Integer)
	m.AddRow("big", []int{x, n}, []float64{1e6, 1}, LE, 5e6)
	m.AddRow("eq", []int{x, n}, []float64{1, 1}, EQ, 6)
	tests := []struct {
		x    []float64
		want string // "" for feasible
	}{
		{[]float64{5, 1}, ""},
		{[]float64{5 + 1e-9, 1}, ""}, // within tolerance relative to 1e6·x
		{[]float64{5.01, 0.99}, "integral"},
		{[]float64{-1, 7}, "lower bound"},
		{[]float64{9, -3}, "row \"big\""},
		{[]float64{4, 1}, "row \"eq\""},
		{[]float64{11, -5}, "upper bound"},
		{[]float64{math.NaN(), 1}, "not finite"},
		{[]float64{1}, "1 values"},
	}
	for _, tt := range tests {
		err := m.Check(tt.x, 1e-6)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Check(%v) = %v, want feasible", tt.x, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Check(%v) = %v, want an error about %q", tt.x, err, tt.want)
		}
	}
}

func TestStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{Continuous.String(), "continuous"}, {Binary.String(), "binary"}, {Integer.String(), "integer"},
		{VarType(7).String(), "VarType(7)"},
		{LE.String(), "<="}, {GE.String(), ">="}, {EQ.String(), "="}, {Sense(4).String(), "Sense(4)"},
		{Optimal.String(), "optimal"}, {Infeasible.String(), "infeasible"}, {TimeLimit.String(), "time limit"},
		{Cancelled.String(), "cancelled"}, {SolutionLimit.String(), "solution limit"},
		{Unbounded.String(), "unbounded"}, {Error.String(), "error"}, {Status(42).String(), "Status(42)"},
		{IncumbentFound.String(), "incumbent"}, {BoundImproved.String(), "bound"}, {Progress.String(), "progress"},
		{EventKind(9).String(), "EventKind(9)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
