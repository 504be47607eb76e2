package external

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/mip/internal/coin"
	"github.com/lenspec/lenspec/mip/internal/evsink"
	"github.com/lenspec/lenspec/mip/internal/prune"
)

// Solver runs the cbc program on each model. The zero value runs "cbc"
// from PATH. Unlike the in-process backend, solves can run in parallel
// (one process each), and a crash of the solver cannot take the caller
// down.
type Solver struct {
	// Binary is the program to run: a path, or a name looked up in PATH.
	// Empty means "cbc".
	Binary string
	// Args are extra command-line arguments, inserted after the
	// solver's own options and before the MIP start and -solve (for
	// example "-preprocess", "off"). Arguments that change the log
	// level or the cutoff increment defeat the parsing that bounds and
	// events rely on.
	Args []string
	// KillDelay is how long an interrupted cbc (on cancellation or at
	// the time limit) may take to stop and write its incumbent before
	// its process group is killed; 0 means 2 % of the time limit, at
	// least 20 ms and at most 1 s, or 1 s without a time limit. Once cbc
	// has reported an incumbent, it counts in CPU time as well (see the
	// package documentation).
	KillDelay time.Duration
}

var _ mip.Solver = Solver{}

func (s Solver) binary() string {
	if s.Binary == "" {
		return "cbc"
	}
	return s.Binary
}

// Name returns "cbc (external)" or the configured binary's name.
func (s Solver) Name() string {
	return filepath.Base(s.binary()) + " (external)"
}

// File names inside the solve's temporary directory; cbc runs there and
// is given relative names, because it prefixes some file names with its
// own directory parameter.
const (
	modelFile  = "model.mps"
	startFile  = "start.txt"
	solFile    = "solution.txt"
	binSolFile = "solution.bin"
)

// ErrNoBinary is returned (wrapped) when the solver program cannot be
// found.
var ErrNoBinary = errors.New("external: solver program not found (for cbc: apt-get install coinor-cbc)")

// Solve writes m to a temporary MPS file and runs cbc on it. See
// mip.Solver for the contract and the package documentation for how
// cancellation and the time limit are enforced: when ctx is done, or the
// time limit has passed, cbc is interrupted and, if it has not exited
// after a grace period, its process group is killed; a solve stopped by
// the time limit returns TimeLimit, one stopped by ctx Cancelled. A cbc
// that fails (exits without a usable solution file) yields Status Error
// with the end of its output in Result.Message; Solve returns an error
// only if m or opt is invalid, cbc cannot be found or started, or the
// model cannot be written. cbc never outlives Solve, even if OnEvent
// panics (the panic propagates after cbc is killed).
func (s Solver) Solve(ctx context.Context, m *mip.Model, opt mip.Options) (res *mip.Result, err error) {
	// The time limit runs from here: writing a large model takes time
	// too, and callers divide a deadline into limits.
	tStart := time.Now()
	if err := opt.Validate(m); err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok && (opt.TimeLimit == 0 || dl.Before(tStart.Add(opt.TimeLimit))) {
		// A context deadline works as a time limit: cbc gets it as its
		// own limit and the grace is sized by it, or a solve in
		// preprocessing would overrun by the full grace of a solve
		// without a limit. It still reads as the context's stop, as on
		// the in-process backend.
		opt.TimeLimit = max(dl.Sub(tStart), time.Nanosecond)
		defer func() {
			if res != nil && res.Status == mip.TimeLimit {
				res.Status = mip.Cancelled
			}
		}()
	}
	if m.NumVars() == 0 {
		return nil, fmt.Errorf("external: model %q has no variables", m.Name())
	}
	// cbc's MPS reader rejects a lower bound above the upper one, which
	// makes the model trivially infeasible.
	for j := range m.NumVars() {
		if v := m.Var(j); v.Lb > v.Ub {
			res := &mip.Result{Solver: s.Name(), Status: mip.Infeasible}
			res.Finish(m, &opt)
			return res, nil
		}
	}
	bin, err := exec.LookPath(s.binary())
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrNoBinary, s.binary(), err)
	}
	sweepStale()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", tempPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("external: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := record(dir, roleOwner, os.Getpid()); err != nil {
		return nil, err
	}

	// early is the result of a solve stopped before cbc ran.
	early := func() (*mip.Result, error) {
		res := &mip.Result{Solver: s.Name(), Status: mip.TimeLimit, Bound: math.NaN(), Wall: time.Since(tStart)}
		if ctx.Err() != nil {
			res.Status = mip.Cancelled
		}
		res.Finish(m, &opt)
		return res, nil
	}
	// Writing a large model can take longer than the time left: it stops
	// at the time limit, or when ctx ends, so that the solve still returns
	// in time.
	wctx := ctx
	if opt.TimeLimit > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, tStart.Add(opt.TimeLimit))
		defer cancel()
	}

	// The objective constant stays in Go, as in the cbc package, so that
	// the cutoff and all values cbc prints are in one frame.
	coef, constant := m.Objective()
	noConst := m.Clone()
	idx := make([]int, len(coef))
	for j := range idx {
		idx[j] = j
	}
	noConst.SetObjective(idx, coef, 0)
	if err := writeFile(wctx, filepath.Join(dir, modelFile), noConst.WriteMPS); wctx.Err() != nil {
		return early()
	} else if err != nil {
		return nil, err
	}

	var args []string // after the time limit
	if opt.Threads > 1 {
		args = append(args, "-threads", strconv.Itoa(opt.Threads))
	}
	if opt.UseCutoff {
		args = append(args, "-cutoff", fmtNum(opt.Cutoff-constant))
	}
	if opt.SolutionLimit > 0 {
		args = append(args, "-maxSolutions", strconv.Itoa(opt.SolutionLimit))
	}
	if opt.RelGap > 0 {
		args = append(args, "-ratioGap", fmtNum(opt.RelGap))
	}
	if opt.AbsGap > 0 {
		args = append(args, "-allowableGap", fmtNum(opt.AbsGap))
	}
	args = append(args, s.Args...)
	args = append(args, opt.Params...)
	if opt.Start != nil {
		names := m.ColumnNames()
		err := writeFile(wctx, filepath.Join(dir, startFile), func(w io.Writer) error {
			bw := bufio.NewWriter(w)
			fmt.Fprintf(bw, "Feasible - objective value %s\n", fmtNum(m.Eval(opt.Start)-constant))
			for j, v := range opt.Start {
				fmt.Fprintf(bw, "%d %s %s\n", j, names[j], fmtNum(v))
			}
			return bw.Flush()
		})
		if wctx.Err() != nil {
			return early()
		} else if err != nil {
			return nil, err
		}
		args = append(args, "-mipstart", startFile)
	}
	args = append(args, "-solve", "-solution", solFile, "-saveSolution", binSolFile, "-quit")

	if ctx.Err() != nil {
		return early()
	}
	res = &mip.Result{Solver: s.Name(), Bound: math.NaN()}
	grace := s.grace(&opt)
	// own is the limit cbc enforces itself, as a time since tStart: the
	// time left less a head start (headStart). A cbc in branch and
	// bound, which honours its limit, then stops on its own and writes
	// its incumbent before Solve's deadline; the grace after the
	// deadline, which is overrun, can stay short.
	var deadline time.Time
	own := opt
	head := []string{modelFile, "-timeMode", "elapsed"}
	if opt.TimeLimit > 0 {
		deadline = tStart.Add(opt.TimeLimit)
		left := time.Until(deadline)
		if left <= 0 {
			return early()
		}
		// At least 1 ms: cbc takes 0 for no limit.
		sec := max(left-headStart(opt.TimeLimit), time.Millisecond)
		own.TimeLimit = time.Since(tStart) + sec
		head = append(head, "-sec", fmtNum(sec.Seconds()))
	}
	args = append(head, args...)

	log := logState{sink: evsink.New(opt.OnEvent, constant, tStart)}
	// The caller's bound past the deadline (mip.Options.Grace) holds
	// whatever the interrupt was for.
	var killBy time.Time
	if opt.Grace > 0 && !deadline.IsZero() {
		killBy = deadline.Add(opt.Grace)
	}
	out, err := s.run(ctx, bin, args, dir, deadline, grace, killBy, log.read, log.found.Load)
	if err != nil {
		return nil, err
	}
	res.Wall = time.Since(tStart)
	// A stop is the context's if Solve interrupted cbc for it, or if
	// the context ended while cbc finished anyway.
	cancelled := out.reason == stopContext || out.reason == stopNone && ctx.Err() != nil
	// The time limit was reached if Solve interrupted cbc for it or cbc
	// ran until its own limit. Verdicts that arrive then are not
	// trusted (mip.Options.ReachedLimit): cbc stopped by its time limit
	// inside preprocessing writes "Integer infeasible" for a feasible
	// model.
	atLimit := out.reason == stopLimit || own.ReachedLimit(res.Wall)
	if out.killed {
		res.Message = fmt.Sprintf("external: %s did not stop within %v of the interrupt and was killed", filepath.Base(bin), out.waited.Round(time.Millisecond))
	}
	if log.version != "" {
		res.Solver = fmt.Sprintf("%s %s (external)", filepath.Base(s.binary()), log.version)
	}
	res.Nodes = log.nodes

	st, x, serr := readSolution(dir, m)
	if serr != nil {
		// cbc wrote no usable solution file: stopped by Solve before it
		// could, or failed.
		res.Bound = log.rootBound(constant)
		switch {
		case cancelled:
			res.Status = mip.Cancelled
		case atLimit:
			res.Status = mip.TimeLimit
		default:
			res.Status = mip.Error
			res.Message = fmt.Sprintf("external: %s: %v (exit: %v): %s", filepath.Base(bin), serr, out.waitErr, tail(out.stderr+log.text.String()))
		}
		res.Finish(m, &opt)
		return res, nil
	}
	if x != nil {
		res.HasSolution, res.Solution = true, x
	}
	// The summary distinguishes what the solution file's status line
	// does not: cbc writes "Stopped on iterations" both after a
	// solution limit and after SIGINT.
	switch {
	case st == mip.Error && strings.HasPrefix(log.result, "Stopped on solution limit"):
		st = mip.SolutionLimit
	case st == mip.Error && strings.HasPrefix(log.result, "Stopped on time"):
		st = mip.TimeLimit
	}
	if (st == mip.Infeasible || st == mip.Optimal) && atLimit {
		st = mip.TimeLimit
	}
	// A verdict reached before the interrupt stands; anything after
	// one is a cancellation, or a time limit if that was the reason.
	interrupted := strings.Contains(log.result, "ctrl-c") || st == mip.Cancelled
	final := st == mip.Optimal || st == mip.Infeasible || st == mip.Unbounded
	switch {
	case cancelled && (interrupted || !final):
		st = mip.Cancelled
	case out.reason == stopLimit && (interrupted || st == mip.Error):
		st = mip.TimeLimit
	}
	res.Status = st
	switch {
	case !math.IsNaN(log.lowerBound):
		// Printed with three decimals: pad by the rounding.
		res.Bound = log.lowerBound + constant - 1e-3 - 1e-12*math.Abs(log.lowerBound)
	case st == mip.Optimal && res.HasSolution:
		// Proven optimal (cbc prints no bound then): the incumbent,
		// less the pruning slack below, is the bound.
		res.Bound = math.Inf(1)
	default:
		// Stopped before its summary, typically killed.
		res.Bound = log.rootBound(constant)
	}
	if res.HasSolution && (st == mip.Optimal || st == mip.TimeLimit || st == mip.Cancelled || st == mip.SolutionLimit) {
		inc := math.Max(log.increment, prune.DefaultIncrement)
		res.Bound = math.Min(res.Bound, m.Eval(res.Solution)-prune.Slack(m, inc))
	}
	res.Finish(m, &opt)
	if res.Status == mip.Error && res.Message == "" {
		res.Message = fmt.Sprintf("external: %s: unrecognised outcome: solution file says %q, log says %q (exit: %v): %s",
			filepath.Base(bin), st, log.result, out.waitErr, tail(out.stderr+log.text.String()))
	}
	log.sink.Final(res)
	return res, nil
}

// tempPrefix starts the names of the solves' temporary directories, which
// are tempPrefix + pid + "-" + random.
const tempPrefix = "lenspec-mip-"

// ownerFile, in a solve's temporary directory, names the processes it
// belongs to, one "role pid start" line each (start: the process's start
// time in clock ticks since boot, 0 where the system does not say): the
// process that made it (roleOwner), and once started the solver, whose
// pid is its process group's id (roleSolver). With the start time, a
// process that reused a dead owner's pid is not taken for it.
const ownerFile = "owner"

const (
	roleOwner  = "lenspec"
	roleSolver = "solver"
)

// procID is a process as ownerFile records it.
type procID struct {
	pid   int
	start uint64
}

// running reports whether p still runs: its pid exists, is no zombie and,
// where start times are known, started when p did.
func (p procID) running() bool {
	start, _, ok := procStat(p.pid)
	return ok && (p.start == 0 || start == p.start)
}

// record appends the process pid, in the given role, to dir's ownerFile.
func record(dir, role string, pid int) error {
	start, _, _ := procStat(pid)
	f, err := os.OpenFile(filepath.Join(dir, ownerFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err == nil {
		_, err = fmt.Fprintf(f, "%s %d %d\n", role, pid, start)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("external: %w", err)
	}
	return nil
}

// owners reads dir's ownerFile: the owner (pid 0 if not recorded) and the
// solver, if one was started.
func owners(dir string) (owner, solver procID) {
	b, _ := os.ReadFile(filepath.Join(dir, ownerFile))
	for _, line := range strings.Split(string(b), "\n") {
		var role string
		var p procID
		if n, _ := fmt.Sscanf(line, "%s %d %d", &role, &p.pid, &p.start); n != 3 || p.pid <= 0 {
			continue
		}
		switch role {
		case roleOwner:
			owner = p
		case roleSolver:
			solver = p
		}
	}
	return owner, solver
}

// sweepStale removes the temporary directories of solves whose process no
// longer runs, which a SIGKILL leaves behind, first killing what is left
// of their solver's process group (on Linux the solver itself dies with
// its caller, but not a wrapper script's children, and elsewhere nothing
// kills it). The owner is the process ownerFile names, with its start
// time, so that a live owner's directory is never removed and a reused
// pid does not keep a dead one's; a directory without the file (its
// owner killed before writing it, or an older lenspec) goes by the pid
// in its name. The solver's group is killed only if its leader is gone
// or is the process recorded, never a newer process with that pid.
// Processes of another pid namespace look dead: do not share a TMPDIR
// between namespaces.
func sweepStale() {
	self := os.Getpid()
	sweep(func(pid int, owner procID) bool {
		if owner.pid == 0 {
			return pid != self && !processAlive(pid)
		}
		return !owner.running()
	})
}

// RemoveOwn kills the solvers this process started that still run and
// removes the temporary directories of its solves. A program calls it as
// it exits, after its work has returned: a caller that stops waiting for a
// solve leaves it running (the verifier does so for one that overruns its
// time limit), and os.Exit, which the program's exit status needs, runs no
// deferred cleanup, so the solve's directory would stay until another
// process's next solve. A solve still running in this process fails.
func RemoveOwn() {
	self := os.Getpid()
	sweep(func(pid int, owner procID) bool {
		if owner.pid == 0 {
			return pid == self
		}
		return owner.pid == self
	})
}

// sweep removes the solves' temporary directories that take says to take
// (given the pid in the directory's name and the owner its ownerFile
// names, pid 0 if none), first killing what is left of their solver's
// process group, if the group's leader is gone or is the process
// recorded, never a newer process with that pid.
func sweep(take func(pid int, owner procID) bool) {
	tmp := os.TempDir()
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), tempPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		digits, _, ok := strings.Cut(rest, "-")
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
			continue
		}
		pid, err := strconv.Atoi(digits)
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		owner, solver := owners(dir)
		if !take(pid, owner) {
			continue
		}
		if solver.pid != 0 {
			if start, _, ok := procStat(solver.pid); !ok || solver.start == 0 || start == solver.start {
				killGroup(solver.pid)
			}
		}
		os.RemoveAll(dir)
	}
}

// readSolution reads the status and, if the status line announces one,
// the solution from the files cbc wrote in dir.
func readSolution(dir string, m *mip.Model) (st mip.Status, x []float64, err error) {
	header, err := os.ReadFile(filepath.Join(dir, solFile))
	if err != nil {
		return mip.Error, nil, fmt.Errorf("wrote no solution: %w", err)
	}
	st, hasSol := parseHeader(firstLine(header))
	if !hasSol {
		return st, nil, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, binSolFile))
	if err != nil {
		return mip.Error, nil, err
	}
	x, err = parseBinarySolution(b, m.NumRows(), m.NumVars())
	if err != nil {
		return mip.Error, nil, fmt.Errorf("%s: %w", binSolFile, err)
	}
	return st, x, nil
}

// headStart returns how much earlier than Solve's deadline cbc's own
// time limit ends: 5 % of the limit, at least 200 ms but at most a
// quarter of the limit, and at most 1 s. cbc takes 10-30 ms from its
// limit to its exit on an idle machine, but 50-160 ms were measured with
// two other solves on two cores: the head start must cover that, or the
// kill at the deadline loses the incumbent and the bound. It costs
// search time: up to 20 % of a 1 s limit, 5 % from 4 s on.
func headStart(limit time.Duration) time.Duration {
	return min(max(limit/20, 200*time.Millisecond), limit/4, time.Second)
}

// grace returns how long an interrupted cbc may take to stop and write its
// incumbent before it is killed: KillDelay if set, else 2 % of the time
// limit, at least 20 ms and at most 1 s, or 1 s without a time limit. It
// is short because past the deadline it is overrun, which a verifier
// dividing a deadline among solves cannot afford, and because cbc ignores
// SIGINT outside branch and bound, where waiting is pure loss; in branch
// and bound cbc has stopped on its own limit before the deadline (see
// Solve).
func (s Solver) grace(opt *mip.Options) time.Duration {
	switch {
	case s.KillDelay > 0:
		return s.KillDelay
	case opt.TimeLimit > 0:
		return min(max(opt.TimeLimit/50, 20*time.Millisecond), time.Second)
	}
	return time.Second
}

// signal is what Solve sends the solver's process group.
type signal int

const (
	sigInt  signal = iota // SIGINT: stop and write the incumbent
	sigKill               // SIGKILL
)

// stopReason says why Solve interrupted the solver, if it did.
type stopReason int

const (
	stopNone    stopReason = iota
	stopLimit              // the time limit passed
	stopContext            // the context ended
)

// outcome is how a run of the solver ended.
type outcome struct {
	waitErr error         // from exec.Cmd.Wait
	reason  stopReason    // why it was interrupted, if it was
	killed  bool          // it was killed after the grace period
	waited  time.Duration // from the interrupt to the kill
	stderr  string
}

// run runs bin with args in dir, passing its standard output to read (in
// this goroutine) until the output ends, while interrupt watches ctx and
// the deadline (found: whether the output reported an incumbent; grace and
// killBy: see interrupt). The
// solver runs in a process group of its own, which is killed before run
// returns, also when read panics.
func (s Solver) run(ctx context.Context, bin string, args []string, dir string, deadline time.Time, grace time.Duration, killBy time.Time, read func(io.Reader), found func() bool) (out outcome, err error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = sysProcAttr()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// A terminal if there is one (see openPTY), else a pipe.
	var stdout io.Reader
	master, slave, perr := openPTY()
	if perr == nil {
		defer master.Close()
		defer slave.Close() // closed at once after Start, or on failure
		cmd.Stdout, stdout = slave, master
	} else if stdout, err = cmd.StdoutPipe(); err != nil {
		return out, fmt.Errorf("external: %w", err)
	}
	// On Linux the kernel kills the solver when the thread that started
	// it exits (Pdeathsig; meant for the death of this process). The Go
	// runtime ends a thread when a goroutine locked to it exits without
	// unlocking, which any goroutine scheduled on that thread later
	// could do. Holding the thread from the start until the solver is
	// reaped keeps every other goroutine off it for the solver's life.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return out, fmt.Errorf("external: start %s: %w", bin, err)
	}
	started := time.Now()
	if slave != nil {
		// The output ends when the last holder of the terminal's other
		// end exits: that must be cbc, not this process.
		slave.Close()
	}
	// Should this process die without cleanup, the next solve's sweep
	// finds the solver's group here.
	record(dir, roleSolver, cmd.Process.Pid)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		out.reason, out.killed, out.waited = interrupt(ctx, solverProc{cmd.Process, started, found}, deadline, grace, killBy, stop)
	}()
	reaped := false
	defer func() {
		if !reaped {
			// read panicked (in the caller's OnEvent): the solver must
			// not outlive the solve.
			close(stop)
			<-done
			signalGroup(cmd.Process, sigKill)
			cmd.Wait()
		}
	}()
	read(stdout) // until EOF (pipe) or EIO (terminal)
	close(stop)
	<-done
	// cbc closed its output on exit. Whatever remains of its group
	// (children of a wrapper script) goes now, while the unreaped cbc
	// still holds the group's id.
	signalGroup(cmd.Process, sigKill)
	out.waitErr = cmd.Wait()
	reaped = true
	out.stderr = stderr.String()
	return out, nil
}

// solverProc is a running solver as interrupt sees it: its process, when
// it started, and whether it has reported an incumbent.
type solverProc struct {
	p       *os.Process
	started time.Time
	found   func() bool
}

// maxStretch bounds how far an interrupted solver's grace is stretched
// while it writes an incumbent it reported (see interrupt).
const maxStretch = 30

// interrupt waits for ctx to end, the deadline (if not zero) to pass or
// stop to be closed. In the first two cases it sends the solver's process
// group SIGINT repeatedly, since cbc ignores one that arrives before
// branch and bound, until stop is closed, and SIGKILL once grace has
// passed — unless the solver has reported an incumbent, which it writes
// only as it stops: then the grace counts in what the machine lets the
// solver do rather than in wall time, and the kill comes once it has also
// used grace of CPU time since the interrupt (it is busy elsewhere,
// ignoring the interrupt), or at the latest after grace times twice the
// slowdown it showed before the interrupt (its wall time over its CPU
// time, at least 1, at most maxStretch/2), should it get no CPU at all. On
// an idle machine that is grace, as without an incumbent; on a loaded one
// the incumbent is not lost to a wait the solver could not use. Where the
// system reports no CPU times, grace is wall time alone. If killBy is not
// zero (the deadline plus the caller's mip.Options.Grace), the kill comes
// by then at the latest, incumbent or not. It returns why it interrupted
// the solver, if it did, whether it killed it, and when.
func interrupt(ctx context.Context, sp solverProc, deadline time.Time, grace time.Duration, killBy time.Time, stop <-chan struct{}) (stopReason, bool, time.Duration) {
	var limit <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		limit = t.C
	}
	var reason stopReason
	select {
	case <-ctx.Done():
		reason = stopContext
	case <-limit:
		reason = stopLimit
	case <-stop:
		return stopNone, false, 0
	}
	t0 := time.Now()
	_, cpu0, timed := procStat(sp.p.Pid)
	timed = timed && procTimes
	hard := grace * maxStretch
	if life := t0.Sub(sp.started); timed && cpu0 > 0 {
		hard = time.Duration(float64(grace) * min(max(2*float64(life)/float64(cpu0), 2), maxStretch))
	}
	if !killBy.IsZero() {
		hard = min(hard, killBy.Sub(t0))
	}
	kill := time.NewTimer(min(grace, hard))
	defer kill.Stop()
	tick := time.NewTicker(min(max(grace/4, 10*time.Millisecond), 100*time.Millisecond))
	defer tick.Stop()
	waiting := false // past grace, for an incumbent
	for {
		signalGroup(sp.p, sigInt)
		select {
		case <-stop:
			return reason, false, 0
		case <-kill.C:
			if !timed || !sp.found() || time.Since(t0) >= hard {
				signalGroup(sp.p, sigKill)
				return reason, true, time.Since(t0)
			}
			waiting = true
		case <-tick.C:
			if !waiting {
				continue
			}
			_, cpu, ok := procStat(sp.p.Pid)
			if since := time.Since(t0); !ok || cpu-cpu0 >= grace || since >= hard {
				signalGroup(sp.p, sigKill)
				return reason, true, since
			}
		}
	}
}

// writeFile writes path with write, failing once ctx has ended.
func writeFile(ctx context.Context, path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("external: %w", err)
	}
	if err := write(ctxWriter{ctx, f}); err != nil {
		f.Close()
		return fmt.Errorf("external: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("external: write %s: %w", path, err)
	}
	return nil
}

// ctxWriter fails every write once ctx has ended.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func firstLine(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b))
}

// tail returns the end of a long log for an error message.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return s
}

// parseHeader interprets the status line of cbc's solution file, such as
// "Optimal - objective value -3.00000000" or "Stopped on time (no integer
// solution - continuous used) - objective value 54.3". It returns Error
// for the "Stopped on iterations" line, which the caller refines from the
// log, and for anything it does not know.
func parseHeader(line string) (st mip.Status, hasSol bool) {
	noSol := strings.Contains(line, "no integer solution")
	switch {
	case strings.HasPrefix(line, "Optimal"):
		return mip.Optimal, !noSol
	case strings.HasPrefix(line, "Infeasible"), strings.HasPrefix(line, "Integer infeasible"):
		return mip.Infeasible, false
	case strings.HasPrefix(line, "Unbounded"):
		return mip.Unbounded, false
	case strings.HasPrefix(line, "Stopped on time"):
		return mip.TimeLimit, !noSol
	case strings.HasPrefix(line, "Stopped on ctrl-c"):
		return mip.Cancelled, !noSol
	case strings.HasPrefix(line, "Stopped on iterations"):
		return mip.Error, !noSol
	}
	return mip.Error, false
}

// parseBinarySolution reads the column values from the file cbc's
// -saveSolution writes: int32 rows, int32 columns, then float64s: the
// objective, the row activities, the row duals, the column values and the
// reduced costs, in the machine's byte order (little-endian here).
func parseBinarySolution(b []byte, rows, cols int) ([]float64, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("solution file of %d bytes is too short", len(b))
	}
	r := int(int32(binary.LittleEndian.Uint32(b)))
	c := int(int32(binary.LittleEndian.Uint32(b[4:])))
	if r != rows || c != cols {
		return nil, fmt.Errorf("solution is for %d rows and %d columns, model has %d and %d", r, c, rows, cols)
	}
	want := 8 + 8*(1+2*rows+2*cols)
	if len(b) != want {
		return nil, fmt.Errorf("solution file has %d bytes, want %d", len(b), want)
	}
	x := make([]float64, cols)
	off := 8 + 8*(1+2*rows)
	for j := range x {
		x[j] = math.Float64frombits(binary.LittleEndian.Uint64(b[off+8*j:]))
		if math.IsNaN(x[j]) || math.IsInf(x[j], 0) {
			return nil, fmt.Errorf("value %g of column %d is not finite", x[j], j)
		}
	}
	return x, nil
}

var (
	reVersion   = regexp.MustCompile(`^Version: (\S+)`)
	reResult    = regexp.MustCompile(`^Result - (.*)$`)
	reLower     = regexp.MustCompile(`^Lower bound:\s+(\S+)`)
	reRootLP    = regexp.MustCompile(`^Continuous objective value is (\S+) `)
	reNodes     = regexp.MustCompile(`^Enumerated nodes:\s+(\d+)`)
	reIncrement = regexp.MustCompile(`Cutoff increment increased from \S+ to (\S+)`)
	// Cbc0004I, Cbc0012I: "Integer solution of -266 found by ..."
	reSolution = regexp.MustCompile(`^Cbc00(?:04|12)I Integer solution of (\S+) `)
	// Cbc0045I MIPStart provided solution with cost -266
	reStart = regexp.MustCompile(`^Cbc0045I MIPStart provided solution with cost (\S+)`)
	// Cbc0010I After 0 nodes, 1 on tree, 1e+50 best solution, best possible 56.246456 (0.46 seconds)
	reProgress = regexp.MustCompile(`^Cbc0010I After (\d+) nodes, \d+ on tree, (\S+) best solution, best possible (\S+) `)
)

// logState collects what cbc's log says, line by line.
type logState struct {
	sink *evsink.Sink

	text       strings.Builder // the whole log, for error messages
	version    string
	result     string
	lowerBound float64 // NaN if not printed
	rootLP     float64 // the LP relaxation's value; NaN if not printed
	increment  float64
	nodes      int64
	best       float64     // best incumbent reported in events
	found      atomic.Bool // an incumbent was reported (read by interrupt)
	bound      float64     // best bound reported in events
}

// rootBound returns the bound the log's root LP value proves, shifted by
// the objective constant, or NaN: the LP relaxation of the model as read
// bounds its optimum. (The "best possible" values of Cbc0010I lines do
// not: some come from partial searches on restricted sub-models, and
// were seen above the final proven bound.) cbc prints the value with six
// significant digits, so it is padded by the rounding.
func (l *logState) rootBound(constant float64) float64 {
	return l.rootLP + constant - 1e-3 - 1e-5*math.Abs(l.rootLP)
}

func (l *logState) read(r io.Reader) {
	l.lowerBound, l.rootLP = math.NaN(), math.NaN()
	l.best, l.bound = math.Inf(1), math.Inf(-1)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		l.line(sc.Text())
	}
	// Drain whatever a scanner error left, so that cbc never blocks.
	io.Copy(io.Discard, r)
}

func parseFloat(s string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.TrimRight(s, ","), 64)
	return v, err == nil && !math.IsNaN(v)
}

// line interprets one line of cbc's log.
func (l *logState) line(s string) {
	if l.text.Len() < 1<<20 {
		l.text.WriteString(s)
		l.text.WriteByte('\n')
	}
	s = strings.TrimSpace(s)
	if m := reVersion.FindStringSubmatch(s); m != nil {
		l.version = m[1]
	} else if m := reResult.FindStringSubmatch(s); m != nil {
		l.result = m[1]
	} else if m := reLower.FindStringSubmatch(s); m != nil {
		if v, ok := parseFloat(m[1]); ok {
			l.lowerBound = v
		}
	} else if m := reRootLP.FindStringSubmatch(s); m != nil {
		if v, ok := parseFloat(m[1]); ok && !math.IsInf(v, 0) {
			l.rootLP = v
		}
	} else if m := reNodes.FindStringSubmatch(s); m != nil {
		if v, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			l.nodes = v
		}
	} else if m := reIncrement.FindStringSubmatch(s); m != nil {
		if v, ok := parseFloat(m[1]); ok && v > 0 {
			l.increment = v
		}
	} else if m := reSolution.FindStringSubmatch(s); m != nil {
		if v, ok := parseFloat(m[1]); ok {
			l.incumbent(v)
		}
	} else if m := reStart.FindStringSubmatch(s); m != nil {
		if v, ok := parseFloat(m[1]); ok {
			l.incumbent(v)
		}
	} else if m := reProgress.FindStringSubmatch(s); m != nil {
		nodes, err := strconv.ParseInt(m[1], 10, 64)
		bound, ok := parseFloat(m[3])
		if err != nil || !ok {
			return
		}
		l.nodes = nodes
		kind := mip.Progress
		if bound < coin.Infinity && bound > l.bound {
			l.bound = bound
			kind = mip.BoundImproved
		}
		l.emit(kind)
	}
}

func (l *logState) incumbent(v float64) {
	if v >= l.best || v >= coin.Infinity {
		return
	}
	l.best = v
	l.found.Store(true)
	l.emit(mip.IncumbentFound)
}

func (l *logState) emit(kind mip.EventKind) {
	l.sink.Send(mip.Event{Kind: kind, Objective: l.best, Bound: l.bound, Nodes: l.nodes})
}
