// Package mip describes mixed-integer linear programs and the small
// interface through which lenspec solves them.
//
// A Model holds variables (continuous, binary or integer, with bounds
// that may be infinite), linear constraints and a linear objective with a
// constant. Building methods record the first invalid argument instead of
// returning errors (see Model.Err). WriteMPS and WriteLP write a model for
// other solvers.
//
// # Minimisation only
//
// The objective is always minimised. CBC 2.10 returned wrong answers,
// claimed optimal, for maximisation problems given a MIP start; rather
// than rely on every backend getting the sign right, models cannot say
// "maximise": a caller maximising f minimises −f, and then −Objective is
// the value found and −Bound a proven upper bound.
//
// # Solvers
//
// A Solver (mip/cbc: CBC linked in process; mip/external: the cbc program)
// returns a Result. Options add a time limit, threads, a MIP start, a
// cutoff, a solution limit, gaps and progress events. Decision mode — "is
// there a solution with objective below c?" — is UseCutoff with Cutoff c
// and SolutionLimit 1: the answer is yes (SolutionLimit or Optimal, with
// a witness) or no (Infeasible, with Bound = c).
//
// # What a Result claims
//
// Every Result satisfies, whatever its Status:
//
//   - if HasSolution, Solution satisfies the model within the solver's
//     tolerances (check it with Model.Check) and Objective is
//     Model.Eval(Solution), recomputed in Go rather than copied from the
//     solver;
//   - Bound ≤ Objective, and Bound is a lower bound on the optimum proven
//     by the solver, or -Inf when nothing is proven. Under UseCutoff it
//     bounds min(optimum, Cutoff), since everything at or above the
//     cutoff is pruned unexamined.
//
// Status says why the solve ended (see Status for the details): Optimal
// (Objective − Bound within the requested gaps), Infeasible (no solution,
// or none below Cutoff; Bound is +Inf or Cutoff), TimeLimit, Cancelled,
// SolutionLimit (stopped early, keeping any incumbent and the bound
// reached), Unbounded, and Error, the zero value, which claims nothing.
//
// # Soundness
//
// "Proven" means proven by the solver in floating-point arithmetic with
// its tolerances, not certified. For CBC with default settings:
//
//   - integrality tolerance 1e-6: an "integer" value may be off by that;
//   - primal and dual feasibility tolerances 1e-7 (relative to the scale
//     of the rows) in the LP relaxations that prune the search: a node
//     may be pruned although it contains a solution better by about that
//     much times the magnitudes involved;
//   - the cutoff increment: CBC prunes nodes within 1e-5 of the incumbent
//     (or within almost one unit when the objective is integral, which
//     loses nothing). The backends subtract this slack from Bound, so it
//     is not a further caveat.
//
// Callers that turn a Bound into a verification claim should therefore
// leave a margin (for example 1e-6·(1 + |Bound|) on top of the model's
// own numerical error) and re-evaluate every incumbent exactly, e.g. with
// a forward pass of the network the model encodes: an incumbent's
// objective is an upper bound on the optimum only as far as the solution
// really is feasible. For linear relaxations mip/cbc's LP.DualBound gives
// bounds that are rigorous despite the LP solver's tolerances.
package mip
