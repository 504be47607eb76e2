// Package external solves mip models by running a solver program: by
// default cbc, the command-line program of COIN-OR CBC (Debian package
// coinor-cbc).
//
// Each Solve writes the model to a temporary directory as free MPS (with
// the objective constant left out and handled in Go, as in mip/cbc), a
// MIP start if there is one, and runs
//
//	cbc model.mps -timeMode elapsed [-sec T] [-threads N] [-cutoff C]
//	    [-maxSolutions K] [-ratioGap R] [-allowableGap A] [Args...]
//	    [-mipstart start.txt] -solve -solution solution.txt
//	    -saveSolution solution.bin -quit
//
// in that directory. The status comes from the first line of the text
// solution and the log's "Result -" line; the values from the binary
// solution file, which holds them exactly (the text one rounds to eight
// digits). cbc's log, read as it is written, yields the events
// (incumbents from Cbc0004I, Cbc0012I and Cbc0045I lines, bounds and
// progress from Cbc0010I lines), the node count and the bound.
//
// Running a process per solve costs some tens of milliseconds, but it
// isolates crashes and lets solves run in parallel, which the in-process
// backend cannot.
//
// # Cancellation
//
// When the context is done, cbc receives SIGINT every 100 ms (it ignores
// one that arrives while it reads its input) until it stops its search and
// writes its incumbent, which Solve returns with status Cancelled. A cbc
// that has not exited KillDelay later is killed.
//
// # Statuses and bounds
//
// See package mip for what each status guarantees. "Optimal" and
// "Infeasible"/"Integer infeasible" solution files map to Optimal and
// Infeasible, "Unbounded" to Unbounded, "Stopped on time" to TimeLimit;
// "Stopped on iterations" is a solution limit or an interrupt, told apart
// by the log. Bound is the log's "Lower bound", which cbc prints with
// three decimals and which is therefore lowered by 1e-3, and at most the
// incumbent less the pruning slack (the cutoff increment cbc reports, or
// its default 1e-5, unless the objective is integral). A proven optimum
// for which cbc prints no bound gets the incumbent less that slack; a
// solve stopped without a printed bound gets -Inf. A model with a lower
// bound above an upper bound is reported Infeasible without running cbc,
// whose MPS reader rejects such bounds.
package external
