package mip

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Options control a solve. The zero value means: no time limit, one
// thread, no start, no cutoff, no solution limit, the solver's default
// gaps (essentially zero) and no events.
type Options struct {
	// TimeLimit is the wall-clock limit of the solve; 0 means none.
	TimeLimit time.Duration
	// Grace, if positive, bounds how long past its time limit, or past
	// its context's end, the solve may take to return. A backend whose
	// solver runs in another process (mip/external) kills it then,
	// whatever it is doing, though that may cost an incumbent the solver
	// had yet to write; the in-process backend cannot stop CBC where it
	// does not look at its clock and leaves it to the caller. 0: the
	// backend's own grace.
	Grace time.Duration
	// Threads is the number of solver threads; 0 means 1.
	Threads int
	// Start is an optional MIP start with one value per variable. A
	// solver may use only its integer part (CBC fixes the integer
	// variables and solves an LP for the others), and silently ignores a
	// start that is infeasible or no better than Cutoff.
	Start []float64
	// Cutoff, if UseCutoff is set, declares that only solutions with
	// objective < Cutoff are of interest: the solver prunes everything
	// else. With SolutionLimit 1 this is decision mode: "is there a
	// solution below Cutoff?".
	Cutoff    float64
	UseCutoff bool
	// SolutionLimit stops the solve after this many improving solutions
	// (1 = stop at the first one, decision mode); 0 means no limit.
	SolutionLimit int
	// RelGap and AbsGap let the solver stop and claim Optimal once the
	// gap between incumbent and bound is below AbsGap, or below RelGap
	// as a fraction of the objective (as the solver measures it: CBC
	// takes the fraction of the root relaxation's value); 0 keeps the
	// solver's default. Bound stays a proven bound either way.
	RelGap, AbsGap float64
	// Params are backend-specific parameters passed through verbatim (for
	// CBC, command-line style: "-preprocess", "off", "-cuts", "off"); the
	// external backend appends them to the solver's command line.
	Params []string
	// OnEvent, if not nil, receives progress events. It may be called
	// from a goroutine other than the caller's, but never concurrently
	// with itself, and must return quickly: the solver waits for it.
	// Before Solve returns, the final solution, if any, is reported as
	// an IncumbentFound event unless an earlier one was as good.
	OnEvent func(Event)
}

// Validate reports whether opt can be used to solve m. Backends call it
// before starting a solve.
func (opt *Options) Validate(m *Model) error {
	if err := m.Err(); err != nil {
		return err
	}
	switch {
	case opt.Start != nil && len(opt.Start) != m.NumVars():
		return fmt.Errorf("mip: options: start has %d values, model %q has %d variables", len(opt.Start), m.Name(), m.NumVars())
	case opt.TimeLimit < 0:
		return fmt.Errorf("mip: options: negative time limit %v", opt.TimeLimit)
	case opt.Grace < 0:
		return fmt.Errorf("mip: options: negative grace %v", opt.Grace)
	case opt.Threads < 0:
		return fmt.Errorf("mip: options: negative thread count %d", opt.Threads)
	case opt.SolutionLimit < 0:
		return fmt.Errorf("mip: options: negative solution limit %d", opt.SolutionLimit)
	case opt.UseCutoff && (math.IsNaN(opt.Cutoff) || math.IsInf(opt.Cutoff, 0)):
		return fmt.Errorf("mip: options: cutoff %g is not finite", opt.Cutoff)
	case !(opt.RelGap >= 0 && opt.RelGap < math.Inf(1)) || !(opt.AbsGap >= 0 && opt.AbsGap < math.Inf(1)):
		return fmt.Errorf("mip: options: gaps must be finite and non-negative, got rel %g abs %g", opt.RelGap, opt.AbsGap)
	}
	for j, v := range opt.Start {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("mip: options: start value %g of %q is not finite", v, m.Var(j).Name)
		}
	}
	return nil
}

// EventKind says what an Event reports.
type EventKind int

const (
	// IncumbentFound reports a new best solution; Objective is its value.
	IncumbentFound EventKind = iota
	// BoundImproved reports a higher lower bound.
	BoundImproved
	// Progress is a periodic heartbeat.
	Progress
)

// String returns the name of k.
func (k EventKind) String() string {
	switch k {
	case IncumbentFound:
		return "incumbent"
	case BoundImproved:
		return "bound"
	case Progress:
		return "progress"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is a progress report during a solve. Objective (+Inf before the
// first solution) and Bound (-Inf if none yet) are the solver's current
// values including the objective constant. They are for display and
// heuristics only: soundness guarantees apply to the final Result alone.
type Event struct {
	Kind      EventKind
	Objective float64
	Bound     float64
	Nodes     int64
	Elapsed   time.Duration
}

// Status is the outcome of a solve. Its zero value is Error, so that a
// Result nobody filled in claims nothing.
//
// What each status guarantees, up to the solver's tolerances (see the
// package documentation):
//
//   - Optimal: HasSolution; Solution is feasible; Bound ≤ Objective is a
//     proven lower bound on the optimum and the gap Objective − Bound is
//     within Options.RelGap/AbsGap (with the default gaps, Objective is
//     the optimum). With a cutoff, Objective < Cutoff.
//   - Infeasible: the model has no feasible solution or, with
//     UseCutoff, no feasible solution with objective < Cutoff.
//     HasSolution is false; Bound is +Inf, or Cutoff with UseCutoff.
//   - TimeLimit, Cancelled: the solve stopped early (time limit or
//     context done). If HasSolution, Solution is feasible; Bound is a
//     proven lower bound on the optimum (min'd with Cutoff under
//     UseCutoff, see Result.Bound), -Inf if the solver proved none.
//   - SolutionLimit: the solve stopped after Options.SolutionLimit
//     improving solutions; HasSolution; Bound as for TimeLimit.
//   - Unbounded: the LP relaxation is unbounded, so the model is either
//     unbounded or infeasible. Bound is -Inf.
//   - Error: the solver failed; nothing is claimed and Bound is -Inf.
type Status int

const (
	// Error means the solver failed; nothing is claimed.
	Error Status = iota
	// Optimal means solved to optimality within the gaps.
	Optimal
	// Infeasible means no solution exists (below Cutoff, if one is set).
	Infeasible
	// TimeLimit means the time limit stopped the solve.
	TimeLimit
	// Cancelled means the context stopped the solve.
	Cancelled
	// SolutionLimit means Options.SolutionLimit stopped the solve.
	SolutionLimit
	// Unbounded means the relaxation is unbounded.
	Unbounded
)

// String returns the name of s.
func (s Status) String() string {
	switch s {
	case Error:
		return "error"
	case Optimal:
		return "optimal"
	case Infeasible:
		return "infeasible"
	case TimeLimit:
		return "time limit"
	case Cancelled:
		return "cancelled"
	case SolutionLimit:
		return "solution limit"
	case Unbounded:
		return "unbounded"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Result is the outcome of a solve.
type Result struct {
	Status Status
	// HasSolution reports whether Solution holds a feasible point.
	HasSolution bool
	// Objective is Model.Eval(Solution), recomputed from the solution
	// rather than taken from the solver; +Inf without a solution.
	Objective float64
	// Bound is a proven lower bound on the optimal objective: -Inf if
	// none is known, +Inf for a proven-infeasible model. Under
	// UseCutoff it bounds min(optimum, Cutoff), since the solver
	// discards everything at or above Cutoff. It is never above
	// Objective.
	Bound float64
	// Solution has one value per variable if HasSolution, else nil.
	Solution []float64
	// Nodes is the number of branch-and-bound nodes explored.
	Nodes int64
	// Wall is the wall-clock duration of the solve.
	Wall time.Duration
	// Solver names the backend and its version.
	Solver string
	// Message, if not empty, is the backend's account of an outcome
	// that the other fields do not explain: for Status Error, why the
	// solver failed (such as the solver's own error message); for a
	// solver stopped by force, that it was. It is for people, not for
	// parsing.
	Message string
}

// ReachedLimit reports whether a solve that took wall reached the time
// limit (within clock granularity). Backends do not trust an "infeasible"
// or "optimal" that arrives then: CBC 2.10, stopped by its limit inside
// preprocessing or root cuts, reports an infeasibility it did not prove
// (measured on a feasible 246-binary model stopped after 0.2 s).
func (o *Options) ReachedLimit(wall time.Duration) bool {
	return o.TimeLimit > 0 && wall >= o.TimeLimit-10*time.Millisecond
}

// Finish establishes the invariants documented on Result from what a
// backend filled in: Status, HasSolution, Solution and the solver's own
// Bound (NaN for none). It recomputes Objective from Solution, sets Bound
// by status, and downgrades contradictory claims (Optimal without a
// solution, Infeasible with a solution better than the cutoff, a solution
// of the wrong length) to Error. Backends call it last.
func (r *Result) Finish(m *Model, opt *Options) {
	if r.HasSolution && len(r.Solution) != m.NumVars() {
		r.Status = Error
		r.HasSolution = false
	}
	if !r.HasSolution {
		r.Solution = nil
		r.Objective = math.Inf(1)
	} else {
		r.Objective = m.Eval(r.Solution)
	}
	if math.IsNaN(r.Bound) {
		r.Bound = math.Inf(-1)
	}
	switch r.Status {
	case Optimal, SolutionLimit:
		if !r.HasSolution {
			r.Status = Error
		}
	case Infeasible:
		if r.HasSolution && (!opt.UseCutoff || r.Objective < opt.Cutoff) {
			r.Status = Error
		}
		r.HasSolution, r.Solution, r.Objective = false, nil, math.Inf(1)
	}
	switch r.Status {
	case Infeasible:
		r.Bound = math.Inf(1)
		if opt.UseCutoff {
			r.Bound = opt.Cutoff
		}
	case Unbounded, Error:
		r.Bound = math.Inf(-1)
	default:
		if opt.UseCutoff {
			r.Bound = math.Min(r.Bound, opt.Cutoff)
		}
		r.Bound = math.Min(r.Bound, r.Objective)
	}
}

// Solver solves mixed-integer programs.
//
// Solve minimises m.Eval over the feasible points of m. It returns an
// error (and possibly a nil Result) only if the model or options are
// invalid or the solver could not be run; a solver that runs but fails
// reports Status Error. When ctx is done the solve stops promptly and
// returns Status Cancelled with the incumbent, if any. Solve does not
// modify m, so a model may be solved several times, also concurrently.
type Solver interface {
	Solve(ctx context.Context, m *Model, opt Options) (*Result, error)
}
