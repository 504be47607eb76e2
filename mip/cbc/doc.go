// Package cbc solves mip models with COIN-OR CBC 2.10 linked into the
// process through cgo, and provides LP, a re-optimisable linear
// relaxation on CLP for bound tightening.
//
// The backend needs the Debian packages coinor-libcbc-dev,
// coinor-libclp-dev, pkg-config and g++. Without cgo the package compiles
// to stubs whose Solve and NewLP return ErrUnavailable, so that code using
// it still builds. (The purego tag selects pure-Go BLAS in package ad; it
// does not affect this package.)
//
// # How a solve runs
//
// A small C++ shim loads the model into a CbcModel and runs it through
// CbcMain0/CbcMain1, the driver of the cbc program, so that preprocessing,
// cuts and heuristics are those of the command line. The objective
// constant stays in Go: CBC sees the objective without it and every value
// is shifted back. The time limit is wall-clock time ("timeMode
// elapsed"). A MIP start is matched to columns by name; CBC fixes its
// integer part and solves an LP for the rest, ignoring a start that is
// infeasible or not below the cutoff.
//
// Events come from a CbcEventHandler that the shim clones into every
// model CBC creates, reading incumbent and bound from the main model
// only (heuristics' sub-models solve other problems). Bound and
// incumbent changes are reported at once, progress at most every 0.5 s.
// Options.OnEvent runs inside a callback from C++ (with several threads,
// on one of CBC's threads), where a Go panic must not unwind: a panic in
// it is recovered there, OnEvent is not called again, the solve is
// cancelled, and once CBC has returned Solve panics in the caller's
// goroutine with an error that wraps the original value (if it was an
// error) and shows its stack.
//
// Cancellation and time limits: when the context is done, or when the
// time limit passes on the Go side's clock, the handler makes CBC's time
// limit look reached at its next event. CBC then stops along its usual
// time-limit path, which keeps the incumbent and an honest bound; in
// branch and bound it returns within milliseconds. (Telling CBC to "stop"
// instead ends the search as if it had completed, which reads as proven
// optimality: never do that.) Before branch and bound, in preprocessing,
// root cuts and the root LP, CBC looks at its clock only between steps; a
// ClpEventHandler cloned into every LP solver CBC makes therefore ends
// the LP under way at its next simplex iteration. CBC takes such an LP for
// finished (optimal, or infeasible, which prunes), so once one was cut
// short nothing CBC concludes stands: the result is TimeLimit (or
// Cancelled) with the bound proven before the stop. On the 400-binary
// ReLU model of the tests a 2 s limit now ends within 1–3 % of it (CBC
// alone: 2.6 s); what remains is work between simplex iterations
// (probing, copying a large model), about 0.7 s on a 4,000 × 400 dense
// knapsack. A plain cancellation (not a deadline) is the exception: it
// lets the LP under way finish, since CBC may be checking a heuristic's
// incumbent with it, which a caller that stops at its first good
// incumbent would otherwise lose. The time limit and any deadline of the
// context still cut that LP when they pass: before they did, a 500 ms
// limit cancelled after 50 ms ended after 3.3–4.0 s on a 1,000 × 1,000
// dense LP.
//
// Silence: CBC's log level is 0 and, for the duration of a solve, the C
// stdio stdout and stderr pointers and the C++ standard streams point to
// /dev/null, because some heuristics print whatever the log level. File
// descriptor 1 is untouched, so Go's own writes to os.Stdout during a
// solve still appear. CbcMain1's SIGINT handler is disabled, leaving
// Ctrl-C to the Go program.
//
// # Concurrency
//
// CBC is not re-entrant, so in-process solves are serialised by a
// package-level semaphore: concurrent calls to Solver.Solve wait for one
// another, and a call whose context ends while it waits returns Cancelled
// at once. For parallel solves use mip/external, which runs one process
// per solve. LPs do not take the semaphore: distinct LPs may be used
// concurrently.
//
// # Statuses and bounds
//
// See package mip for what each Status guarantees. This backend maps
// CBC's verdict as follows. Search completed with a solution: Optimal,
// with Bound the incumbent's value less CBC's pruning slack (its cutoff
// increment, 1e-5 by default, unless the objective is integral); stopped
// on the requested gap: Optimal with CBC's best possible value as Bound.
// Completed without one: Infeasible. Stopped on time, solutions or
// cancellation: TimeLimit, SolutionLimit, Cancelled, with Bound the
// minimum of CBC's best possible value and the incumbent less the slack.
// Unbounded relaxation: Unbounded. Anything else is Error, with
// Result.Message saying what CBC reported; a C++ exception caught in the
// shim (CBC's CoinError, a std::exception, anything else) is Error with
// the exception's message, not a Go error. CBC's global state after an
// exception is whatever the exception left; later solves were seen to
// work, but that is not guaranteed.
package cbc
