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
// # Cancellation, time limits and cleanup
//
// The time limit runs from the call to Solve. cbc gets the time left when
// it starts, less a head start, as -sec: 5 % of the limit, at least 200 ms
// but at most a quarter of the limit, and at most 1 s, so short limits
// lose up to a fifth of their search time. cbc honours -sec in branch and
// bound, where it thus stops on its own and has the head start to write
// its incumbent. In preprocessing and root processing it looks at its
// clock late (a 2 s limit was seen to end after 2.6 s; larger models
// overrun by seconds) and ignores SIGINT. So Solve enforces both limits
// itself: when the context is done or the time limit has passed, cbc's
// process group receives SIGINT repeatedly (cbc ignores one that arrives
// before branch and bound) until cbc stops and writes its incumbent, and
// SIGKILL once the grace period has passed (Solver.KillDelay; by default
// 2 % of the time limit, at least 20 ms and at most 1 s, or 1 s without a
// time limit). cbc writes its incumbent only as it stops, so once it has
// reported one (in its log) the grace counts in what the machine lets it
// do rather than in wall time: the kill waits until cbc has also used the
// grace's worth of CPU time since the interrupt (it is then busy ignoring
// the interrupt), or at the latest for the grace times twice the slowdown
// cbc showed before (its wall time over its CPU time; at most 30 times
// the grace), should it get no CPU at all. On an idle machine that is the
// grace; on one loaded many times over, a cancelled solve still returns
// the incumbent it reported (where the system reports no CPU times, as
// off Linux, the grace is wall time). A caller that cannot wait that long
// says so (mip.Options.Grace): the kill then comes by the deadline (the
// time limit, or the context's deadline) plus that much at the latest,
// whatever the interrupt was for and whether or not cbc has an incumbent
// to write. Writing the model stops at the deadline too (a large one can
// take longer than the time left). The solve then returns Cancelled
// (context) or TimeLimit (time limit), with the incumbent if cbc wrote
// one. A 2 s limit ends within about 50 ms of it; an Optimal or Infeasible
// that arrives at the limit is reported as TimeLimit (see
// mip.Options.ReachedLimit).
//
// cbc runs in a process group of its own, killed as a whole whenever Solve
// returns, also when OnEvent panics. Being in its own group, it does not
// receive the terminal's Ctrl-C: the program decides, by cancelling the
// context or dying. On Linux, cbc is started with a parent-death signal
// (SIGKILL), so that it dies with the calling process even if that is
// killed without cleanup. Temporary directories are named
// lenspec-mip-<pid>-* under os.TempDir() and hold a file, "owner", naming
// the process that made it and the solver it started, each by pid and
// start time. Each Solve first removes the directories whose owner no
// longer runs, which a SIGKILL leaves behind, after killing what is left
// of their solver's process group (a wrapper script's children, which the
// parent-death signal does not reach, or the solver itself elsewhere than
// on Linux). A live owner's directory is never removed, and a process
// that reused a dead owner's pid is told from it by its start time. A
// program that may have stopped waiting for a solve (as the verifier does
// for one past its grace) calls RemoveOwn as it exits, which kills what
// is left of its own solvers and removes their directories: os.Exit runs
// no deferred cleanup.
//
// cbc's standard output is a pseudo-terminal where the system has one, so
// that its log arrives line by line: through a pipe, C stdio would hold it
// back in 4 KB blocks, delaying events, and a killed cbc would take the
// last block with it.
//
// A cbc that runs but fails (exits, by a signal or otherwise, without a
// usable solution file) yields Status Error with the end of its output in
// Result.Message, not a Go error.
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
// for which cbc prints no bound gets the incumbent less that slack. A
// solve stopped before cbc printed its summary (killed after the grace
// period) gets the root LP relaxation's value from the log ("Continuous
// objective value", padded for its six digits), or -Inf if cbc had not
// printed that either, and no solution: cbc writes its incumbent only when
// it stops. A model with a lower bound above an upper bound is reported
// Infeasible without running cbc, whose MPS reader rejects such bounds.
package external
