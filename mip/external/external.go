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
	"strconv"
	"strings"
	"time"

	"github.com/lenspec/lenspec/mip"
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
	// KillDelay is how long to keep interrupting cbc (on cancellation)
	// before killing it; 0 means 5 s.
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
// mip.Solver for the contract. When ctx is done cbc receives SIGINT
// (repeatedly, as it ignores one that arrives too early), stops and
// writes its incumbent, which Solve returns with status Cancelled; if it
// has not exited after KillDelay it is killed.
func (s Solver) Solve(ctx context.Context, m *mip.Model, opt mip.Options) (*mip.Result, error) {
	if err := opt.Validate(m); err != nil {
		return nil, err
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
	dir, err := os.MkdirTemp("", "lenspec-mip-")
	if err != nil {
		return nil, fmt.Errorf("external: %w", err)
	}
	defer os.RemoveAll(dir)

	// The objective constant stays in Go, as in the cbc package, so that
	// the cutoff and all values cbc prints are in one frame.
	coef, constant := m.Objective()
	noConst := m.Clone()
	idx := make([]int, len(coef))
	for j := range idx {
		idx[j] = j
	}
	noConst.SetObjective(idx, coef, 0)
	if err := writeFile(filepath.Join(dir, modelFile), noConst.WriteMPS); err != nil {
		return nil, err
	}

	args := []string{modelFile, "-timeMode", "elapsed"}
	if opt.TimeLimit > 0 {
		args = append(args, "-sec", fmtNum(opt.TimeLimit.Seconds()))
	}
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
		err := writeFile(filepath.Join(dir, startFile), func(w io.Writer) error {
			bw := bufio.NewWriter(w)
			fmt.Fprintf(bw, "Feasible - objective value %s\n", fmtNum(m.Eval(opt.Start)-constant))
			for j, v := range opt.Start {
				fmt.Fprintf(bw, "%d %s %s\n", j, names[j], fmtNum(v))
			}
			return bw.Flush()
		})
		if err != nil {
			return nil, err
		}
		args = append(args, "-mipstart", startFile)
	}
	args = append(args, "-solve", "-solution", solFile, "-saveSolution", binSolFile, "-quit")

	res := &mip.Result{Solver: s.Name(), Bound: math.NaN()}
	t0 := time.Now()
	if ctx.Err() != nil {
		res.Status = mip.Cancelled
		res.Finish(m, &opt)
		return res, nil
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("external: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("external: start %s: %w", bin, err)
	}
	exited := make(chan struct{})
	interrupter := make(chan struct{})
	go func() {
		defer close(interrupter)
		s.interrupt(ctx, cmd.Process, exited)
	}()
	// Read the log as it comes, for events, keeping it for the summary.
	log := logState{sink: evsink.New(opt.OnEvent, constant, t0)}
	log.read(stdout) // until cbc exits and the pipe closes
	waitErr := cmd.Wait()
	close(exited)
	<-interrupter
	res.Wall = time.Since(t0)
	cancelled := ctx.Err() != nil

	if log.version != "" {
		res.Solver = fmt.Sprintf("%s %s (external)", filepath.Base(s.binary()), log.version)
	}
	res.Nodes = log.nodes
	header, herr := os.ReadFile(filepath.Join(dir, solFile))
	if herr != nil {
		if cancelled {
			res.Status = mip.Cancelled
			res.Finish(m, &opt)
			return res, nil
		}
		return nil, fmt.Errorf("external: %s wrote no solution (%v; exit: %v): %s", bin, herr, waitErr, tail(stderr.String()+log.text.String()))
	}
	st, hasSol := parseHeader(firstLine(header))
	if hasSol {
		b, err := os.ReadFile(filepath.Join(dir, binSolFile))
		if err != nil {
			return nil, fmt.Errorf("external: read %s: %w", binSolFile, err)
		}
		x, err := parseBinarySolution(b, m.NumRows(), m.NumVars())
		if err != nil {
			return nil, fmt.Errorf("external: %s: %w", binSolFile, err)
		}
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
	// cbc stopped by its time limit inside preprocessing writes "Integer
	// infeasible" for a feasible model: a verdict that reaches the limit
	// is not trusted (mip.Options.ReachedLimit).
	if (st == mip.Infeasible || st == mip.Optimal) && opt.ReachedLimit(res.Wall) {
		st = mip.TimeLimit
	}
	// A verdict reached before the interrupt stands; anything after
	// one is a cancellation.
	interrupted := strings.Contains(log.result, "ctrl-c")
	if cancelled && (interrupted || st != mip.Optimal && st != mip.Infeasible && st != mip.Unbounded) {
		st = mip.Cancelled
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
	}
	if res.HasSolution && (st == mip.Optimal || st == mip.TimeLimit || st == mip.Cancelled || st == mip.SolutionLimit) {
		inc := math.Max(log.increment, prune.DefaultIncrement)
		res.Bound = math.Min(res.Bound, m.Eval(res.Solution)-prune.Slack(m, inc))
	}
	res.Finish(m, &opt)
	log.sink.Final(res)
	return res, nil
}

// interrupt waits for ctx to be done and then sends p SIGINT every 100 ms
// until it exits, since cbc ignores an interrupt that arrives while it
// reads its input; after KillDelay it kills p.
func (s Solver) interrupt(ctx context.Context, p *os.Process, exited <-chan struct{}) {
	select {
	case <-ctx.Done():
	case <-exited:
		return
	}
	delay := s.KillDelay
	if delay <= 0 {
		delay = 5 * time.Second
	}
	deadline := time.Now().Add(delay)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if time.Now().After(deadline) {
			p.Kill()
			return
		}
		p.Signal(os.Interrupt)
		select {
		case <-exited:
			return
		case <-tick.C:
		}
	}
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("external: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("external: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("external: write %s: %w", path, err)
	}
	return nil
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
	increment  float64
	nodes      int64
	best       float64 // best incumbent reported in events
	bound      float64 // best bound reported in events
}

func (l *logState) read(r io.Reader) {
	l.lowerBound = math.NaN()
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
		if bound < 1e49 && bound > l.bound {
			l.bound = bound
			kind = mip.BoundImproved
		}
		l.emit(kind)
	}
}

func (l *logState) incumbent(v float64) {
	if v >= l.best || v >= 1e49 {
		return
	}
	l.best = v
	l.emit(mip.IncumbentFound)
}

func (l *logState) emit(kind mip.EventKind) {
	l.sink.Send(mip.Event{Kind: kind, Objective: l.best, Bound: l.bound, Nodes: l.nodes})
}
