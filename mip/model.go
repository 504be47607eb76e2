package mip

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// VarType is the domain of a variable.
type VarType int

const (
	// Continuous variables take any real value within their bounds.
	Continuous VarType = iota
	// Binary variables take the value 0 or 1; their bounds are
	// intersected with [0, 1].
	Binary
	// Integer variables take integral values within their bounds.
	Integer
)

// String returns the name of t.
func (t VarType) String() string {
	switch t {
	case Continuous:
		return "continuous"
	case Binary:
		return "binary"
	case Integer:
		return "integer"
	}
	return fmt.Sprintf("VarType(%d)", int(t))
}

// Sense is the direction of a linear constraint.
type Sense int

const (
	// LE is a ≤ constraint.
	LE Sense = iota
	// GE is a ≥ constraint.
	GE
	// EQ is an = constraint.
	EQ
)

// String returns the usual symbol for s.
func (s Sense) String() string {
	switch s {
	case LE:
		return "<="
	case GE:
		return ">="
	case EQ:
		return "="
	}
	return fmt.Sprintf("Sense(%d)", int(s))
}

// VarInfo describes one variable of a Model.
type VarInfo struct {
	Name string
	// Lb and Ub are the bounds; they may be -Inf and +Inf.
	Lb, Ub float64
	Type   VarType
}

// RowInfo describes one linear constraint Σ Coef[k]·x[Idx[k]] Sense Rhs.
type RowInfo struct {
	Name  string
	Idx   []int
	Coef  []float64
	Sense Sense
	Rhs   float64
}

// Model is a mixed-integer linear program
//
//	minimise  c·x + constant
//	subject to  rows,  lb ≤ x ≤ ub,  x_j integral for integer and binary j.
//
// Constraints are stored by row as they are added; the column-wise
// (compressed sparse column) form that solvers load is built on demand by
// CSC.
//
// Methods that build a model do not return errors: the first invalid
// argument (an index out of range, a NaN, mismatched slice lengths, ...)
// is recorded, the offending call is ignored, and Err reports it. Solvers
// and writers refuse a model whose Err is not nil, so one check at the end
// of model building suffices, as with bufio.Scanner.
//
// A Model is not safe for concurrent modification; concurrent reads (for
// instance solving the same model with two solvers at once) are safe.
type Model struct {
	name     string
	vars     []VarInfo
	rows     []RowInfo
	obj      []float64 // dense, len(obj) == len(vars)
	objConst float64
	numInts  int
	err      error
}

// NewModel returns an empty model. The name is used by the file writers.
func NewModel(name string) *Model {
	return &Model{name: name}
}

// Name returns the name given to NewModel.
func (m *Model) Name() string { return m.name }

// Err returns the first error recorded while building the model, or nil.
func (m *Model) Err() error { return m.err }

func (m *Model) fail(format string, args ...any) {
	if m.err == nil {
		m.err = fmt.Errorf("mip: model %q: "+format, append([]any{m.name}, args...)...)
	}
}

// validBounds reports whether lb and ub can bound a variable. lb > ub is
// allowed (the model is then infeasible) because bound tightening may
// legitimately produce it.
func validBounds(lb, ub float64) bool {
	return !math.IsNaN(lb) && !math.IsNaN(ub) && !math.IsInf(lb, 1) && !math.IsInf(ub, -1)
}

// AddVar adds a variable and returns its index. An empty name is replaced
// by "x<index>". Binary variables have their bounds intersected with
// [0, 1]. Bounds may be infinite (lb = -Inf, ub = +Inf) but not NaN; lb
// may exceed ub, which makes the model infeasible. On invalid input the
// error is recorded (see Err), the variable is still added with bounds
// [0, 0] so that indices stay consistent.
func (m *Model) AddVar(name string, lb, ub float64, t VarType) int {
	i := len(m.vars)
	if name == "" {
		name = fmt.Sprintf("x%d", i)
	}
	if t != Continuous && t != Binary && t != Integer {
		m.fail("variable %q: unknown type %d", name, int(t))
		t = Continuous
		lb, ub = 0, 0
	}
	if !validBounds(lb, ub) {
		m.fail("variable %q: invalid bounds [%g, %g]", name, lb, ub)
		lb, ub = 0, 0
	}
	if t == Binary {
		lb, ub = math.Max(lb, 0), math.Min(ub, 1)
	}
	if t != Continuous {
		m.numInts++
	}
	m.vars = append(m.vars, VarInfo{Name: name, Lb: lb, Ub: ub, Type: t})
	m.obj = append(m.obj, 0)
	return i
}

// AddRow adds the constraint Σ coef[k]·x[idx[k]] sense rhs and returns its
// index. Repeated indices are summed; zero coefficients are dropped. An
// empty name is replaced by "r<index>". The right-hand side and the
// coefficients must be finite. On invalid input the error is recorded (see
// Err) and the row is added as the empty constraint 0 ≤ 0, so that
// indices stay consistent.
func (m *Model) AddRow(name string, idx []int, coef []float64, sense Sense, rhs float64) int {
	i := len(m.rows)
	if name == "" {
		name = fmt.Sprintf("r%d", i)
	}
	fi, fc, err := m.merge(idx, coef)
	switch {
	case err != nil:
		m.fail("row %q: %v", name, err)
	case sense != LE && sense != GE && sense != EQ:
		m.fail("row %q: unknown sense %d", name, int(sense))
		err = errors.New("bad sense")
	case math.IsNaN(rhs) || math.IsInf(rhs, 0):
		m.fail("row %q: right-hand side %g is not finite", name, rhs)
		err = errors.New("bad rhs")
	}
	if err != nil {
		fi, fc, sense, rhs = nil, nil, LE, 0
	}
	m.rows = append(m.rows, RowInfo{Name: name, Idx: fi, Coef: fc, Sense: sense, Rhs: rhs})
	return i
}

// merge validates a sparse vector and returns a copy sorted by index with
// repeated indices summed and zeros dropped.
func (m *Model) merge(idx []int, coef []float64) ([]int, []float64, error) {
	if len(idx) != len(coef) {
		return nil, nil, fmt.Errorf("%d indices but %d coefficients", len(idx), len(coef))
	}
	type term struct {
		j int
		c float64
	}
	terms := make([]term, len(idx))
	for k, j := range idx {
		if j < 0 || j >= len(m.vars) {
			return nil, nil, fmt.Errorf("variable index %d out of range [0, %d)", j, len(m.vars))
		}
		c := coef[k]
		if math.IsNaN(c) || math.IsInf(c, 0) {
			return nil, nil, fmt.Errorf("coefficient %g of %q is not finite", c, m.vars[j].Name)
		}
		terms[k] = term{j, c}
	}
	slices.SortStableFunc(terms, func(a, b term) int { return a.j - b.j })
	var oi []int
	var oc []float64
	for k := 0; k < len(terms); {
		j, c := terms[k].j, 0.0
		for ; k < len(terms) && terms[k].j == j; k++ {
			c += terms[k].c
		}
		if c != 0 {
			oi = append(oi, j)
			oc = append(oc, c)
		}
	}
	return oi, oc, nil
}

// SetObjective replaces the objective by Σ coef[k]·x[idx[k]] + constant.
// Repeated indices are summed.
//
// The objective is always minimised; there is deliberately no sense
// argument. CBC 2.10 returned wrong answers claimed optimal for
// maximisation problems given a MIP start (through its C API, its C++ API
// and its command line alike: the cutoff derived from the start had the
// wrong sign), so the model can only express minimisation and callers that
// want a maximum minimise the negated objective and negate the result
// (Objective and Bound swap roles: -Bound is then a proven upper bound).
func (m *Model) SetObjective(idx []int, coef []float64, constant float64) {
	fi, fc, err := m.merge(idx, coef)
	if err == nil && (math.IsNaN(constant) || math.IsInf(constant, 0)) {
		err = fmt.Errorf("constant %g is not finite", constant)
	}
	if err != nil {
		m.fail("objective: %v", err)
		return
	}
	clear(m.obj)
	for k, j := range fi {
		m.obj[j] = fc[k]
	}
	m.objConst = constant
}

// Objective returns the dense objective coefficients (one per variable)
// and the constant. The slice is a copy.
func (m *Model) Objective() (coef []float64, constant float64) {
	return slices.Clone(m.obj), m.objConst
}

// NumVars returns the number of variables.
func (m *Model) NumVars() int { return len(m.vars) }

// NumRows returns the number of constraints.
func (m *Model) NumRows() int { return len(m.rows) }

// NumInts returns the number of integer and binary variables.
func (m *Model) NumInts() int { return m.numInts }

// Var returns the description of variable i. It returns the zero VarInfo
// if i is out of range.
func (m *Model) Var(i int) VarInfo {
	if i < 0 || i >= len(m.vars) {
		return VarInfo{}
	}
	return m.vars[i]
}

// Row returns the description of constraint i with copies of its slices.
// It returns the zero RowInfo if i is out of range.
func (m *Model) Row(i int) RowInfo {
	if i < 0 || i >= len(m.rows) {
		return RowInfo{}
	}
	r := m.rows[i]
	r.Idx = slices.Clone(r.Idx)
	r.Coef = slices.Clone(r.Coef)
	return r
}

// SetBounds replaces the bounds of variable i (intersected with [0, 1] for
// a binary). Invalid input is recorded as in AddVar and ignored.
func (m *Model) SetBounds(i int, lb, ub float64) {
	if i < 0 || i >= len(m.vars) {
		m.fail("SetBounds: variable index %d out of range [0, %d)", i, len(m.vars))
		return
	}
	v := &m.vars[i]
	if !validBounds(lb, ub) {
		m.fail("SetBounds: variable %q: invalid bounds [%g, %g]", v.Name, lb, ub)
		return
	}
	if v.Type == Binary {
		lb, ub = math.Max(lb, 0), math.Min(ub, 1)
	}
	v.Lb, v.Ub = lb, ub
}

// Clone returns a deep copy of m.
func (m *Model) Clone() *Model {
	c := *m
	c.vars = slices.Clone(m.vars)
	c.obj = slices.Clone(m.obj)
	c.rows = make([]RowInfo, len(m.rows))
	for i, r := range m.rows {
		r.Idx = slices.Clone(r.Idx)
		r.Coef = slices.Clone(r.Coef)
		c.rows[i] = r
	}
	return &c
}

// CSC returns the constraint matrix in compressed sparse column form:
// the entries of column j are index[start[j]:start[j+1]] (row indices,
// increasing) and value[start[j]:start[j+1]]. len(start) == NumVars()+1.
func (m *Model) CSC() (start, index []int, value []float64) {
	start = make([]int, len(m.vars)+1)
	for _, r := range m.rows {
		for _, j := range r.Idx {
			start[j+1]++
		}
	}
	for j := range m.vars {
		start[j+1] += start[j]
	}
	nnz := start[len(m.vars)]
	index = make([]int, nnz)
	value = make([]float64, nnz)
	next := slices.Clone(start[:len(m.vars)])
	for i, r := range m.rows {
		for k, j := range r.Idx {
			index[next[j]] = i
			value[next[j]] = r.Coef[k]
			next[j]++
		}
	}
	return start, index, value
}

// RowBounds returns the constraints as lower ≤ row activity ≤ upper, with
// infinite entries for one-sided rows; this is the form LP solvers take.
func (m *Model) RowBounds() (lower, upper []float64) {
	lower = make([]float64, len(m.rows))
	upper = make([]float64, len(m.rows))
	for i, r := range m.rows {
		lower[i], upper[i] = math.Inf(-1), math.Inf(1)
		if r.Sense != LE {
			lower[i] = r.Rhs
		}
		if r.Sense != GE {
			upper[i] = r.Rhs
		}
	}
	return lower, upper
}

// Eval returns the objective value c·x + constant at x, or NaN if
// len(x) != NumVars().
func (m *Model) Eval(x []float64) float64 {
	if len(x) != len(m.vars) {
		return math.NaN()
	}
	s := m.objConst
	for j, c := range m.obj {
		if c != 0 {
			s += c * x[j]
		}
	}
	return s
}

// Check reports whether x is a feasible point of m within tolerance tol,
// returning an error that names the first violated bound, integrality
// condition or row. Bounds and integrality are checked with absolute
// tolerance tol. A row is checked with tolerance tol·(1 + max_k
// |coef[k]·x[idx[k]]|), so that rows with large (big-M) coefficients are
// judged relative to the magnitude of their terms, as solvers do.
func (m *Model) Check(x []float64, tol float64) error {
	if m.err != nil {
		return m.err
	}
	if len(x) != len(m.vars) {
		return fmt.Errorf("mip: check: point has %d values, model %q has %d variables", len(x), m.name, len(m.vars))
	}
	for j, v := range m.vars {
		xj := x[j]
		switch {
		case math.IsNaN(xj) || math.IsInf(xj, 0):
			return fmt.Errorf("mip: check: variable %q = %g is not finite", v.Name, xj)
		case xj < v.Lb-tol:
			return fmt.Errorf("mip: check: variable %q = %g violates lower bound %g", v.Name, xj, v.Lb)
		case xj > v.Ub+tol:
			return fmt.Errorf("mip: check: variable %q = %g violates upper bound %g", v.Name, xj, v.Ub)
		case v.Type != Continuous && math.Abs(xj-math.Round(xj)) > tol:
			return fmt.Errorf("mip: check: %s variable %q = %g is not integral", v.Type, v.Name, xj)
		}
	}
	for _, r := range m.rows {
		act, scale := 0.0, 0.0
		for k, j := range r.Idx {
			t := r.Coef[k] * x[j]
			act += t
			scale = math.Max(scale, math.Abs(t))
		}
		eps := tol * (1 + scale)
		if (r.Sense != GE && act > r.Rhs+eps) || (r.Sense != LE && act < r.Rhs-eps) {
			return fmt.Errorf("mip: check: row %q: activity %g violates %s %g", r.Name, act, r.Sense, r.Rhs)
		}
	}
	return nil
}
