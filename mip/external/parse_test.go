package external

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/mip/internal/evsink"
	"github.com/lenspec/lenspec/mip/internal/miptest"
)

func TestParseHeader(t *testing.T) {
	tests := []struct {
		line   string
		status mip.Status
		hasSol bool
	}{
		{"Optimal - objective value -3.00000000", mip.Optimal, true},
		{"Infeasible - objective value -309.01886792", mip.Infeasible, false},
		{"Integer infeasible - objective value 0.00000000", mip.Infeasible, false},
		{"Unbounded - objective value 0.00000000", mip.Unbounded, false},
		{"Stopped on time - objective value -187001.00000000", mip.TimeLimit, true},
		{"Stopped on time (no integer solution - continuous used) - objective value 54.31250709", mip.TimeLimit, false},
		{"Stopped on iterations - objective value -309.00000000", mip.Error, true},
		{"Stopped on ctrl-c - objective value 1", mip.Cancelled, true},
		{"Stopped on difficulties - objective value 1", mip.Error, false},
		{"Status unknown - objective value 1", mip.Error, false},
		{"", mip.Error, false},
	}
	for _, tt := range tests {
		st, has := parseHeader(tt.line)
		if st != tt.status || has != tt.hasSol {
			t.Errorf("parseHeader(%q) = %s, %v; want %s, %v", tt.line, st, has, tt.status, tt.hasSol)
		}
	}
}

func binarySolution(rows, cols int, x []float64) []byte {
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, [2]int32{int32(rows), int32(cols)})
	vals := make([]float64, 1+2*rows)
	vals = append(vals, x...)
	vals = append(vals, make([]float64, cols)...)
	binary.Write(&buf, binary.LittleEndian, vals)
	return buf.Bytes()
}

func TestParseBinarySolution(t *testing.T) {
	x := []float64{1, -2.5, 1e-300}
	b := binarySolution(2, 3, x)
	got, err := parseBinarySolution(b, 2, 3)
	if err != nil || !slices.Equal(got, x) {
		t.Fatalf("got %v, %v", got, err)
	}
	bad := map[string][]byte{
		"short":     b[:5],
		"truncated": b[:len(b)-1],
		"shape":     binarySolution(3, 3, x),
		"NaN":       binarySolution(2, 3, []float64{1, math.NaN(), 0}),
	}
	for name, b := range bad {
		if _, err := parseBinarySolution(b, 2, 3); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLog(t *testing.T) {
	log := `Welcome to the CBC MILP Solver
Version: 2.10.8
Continuous objective value is -320.6 - 0.01 seconds
Cutoff increment increased from 1e-05 to 0.9999
Cbc0045I MIPStart provided solution with cost -266
Cbc0012I Integer solution of -300 found by DiveCoefficient after 0 iterations and 0 nodes (0.00 seconds)
Cbc0010I After 100 nodes, 3 on tree, -300 best solution, best possible -320.5 (0.46 seconds)
Cbc0004I Integer solution of -309 found after 10 iterations and 120 nodes (0.50 seconds)
Cbc0010I After 200 nodes, 1 on tree, -309 best solution, best possible -310 (0.46 seconds)

Result - Stopped on time limit

Objective value:                -309.00000000
Lower bound:                    -310.000
Enumerated nodes:               250
`
	var events []mip.Event
	l := logState{sink: evsink.New(func(e mip.Event) { events = append(events, e) }, 1, time.Now())}
	l.read(strings.NewReader(log))
	if l.version != "2.10.8" || l.result != "Stopped on time limit" || l.lowerBound != -310 || l.increment != 0.9999 || l.nodes != 250 || l.rootLP != -320.6 {
		t.Errorf("parsed %+v", &l)
	}
	var kinds []mip.EventKind
	var objs []float64
	for _, e := range events {
		kinds = append(kinds, e.Kind)
		objs = append(objs, e.Objective)
	}
	wantKinds := []mip.EventKind{mip.IncumbentFound, mip.IncumbentFound, mip.BoundImproved, mip.IncumbentFound, mip.BoundImproved}
	wantObjs := []float64{-265, -299, -299, -308, -308}
	if !slices.Equal(kinds, wantKinds) || !slices.Equal(objs, wantObjs) {
		t.Errorf("events %v %v, want %v %v", kinds, objs, wantKinds, wantObjs)
	}
	if events[4].Bound != -309 || events[4].Nodes != 200 {
		t.Errorf("last event %+v", events[4])
	}
}

// FuzzLog feeds arbitrary log text to the parser.
func FuzzLog(f *testing.F) {
	f.Add("Lower bound:                    -310.000\nResult - Optimal solution found\n")
	f.Add("Cbc0010I After 1 nodes, 1 on tree, 1e+50 best solution, best possible nan (0 seconds)\n")
	f.Add("Cbc0012I Integer solution of -inf found by x\nCutoff increment increased from 1 to -2\n")
	f.Fuzz(func(t *testing.T, s string) {
		var l logState
		l.read(strings.NewReader(s))
		if l.increment < 0 {
			t.Fatalf("negative increment %g", l.increment)
		}
	})
}

// FuzzSolutionFiles feeds arbitrary solution files to the parsers.
func FuzzSolutionFiles(f *testing.F) {
	f.Add([]byte("Optimal - objective value 1\n"), binarySolution(1, 2, []float64{1, 2}))
	f.Add([]byte("Stopped on time (no integer solution - continuous used)\n"), []byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, header, bin []byte) {
		st, has := parseHeader(firstLine(header))
		if has && (st == mip.Infeasible || st == mip.Unbounded) {
			t.Fatalf("%s with a solution", st)
		}
		x, err := parseBinarySolution(bin, 1, 2)
		if err == nil && len(x) != 2 {
			t.Fatalf("%d values", len(x))
		}
	})
}

func TestMissingBinary(t *testing.T) {
	m := miptest.Knapsack([]float64{1, 2}, []float64{1, 1}, 1)
	_, err := (Solver{Binary: "/nonexistent/cbc"}).Solve(context.Background(), m, mip.Options{})
	if !errors.Is(err, ErrNoBinary) || !strings.Contains(err.Error(), "/nonexistent/cbc") {
		t.Errorf("error %v", err)
	}
	// A program that runs but writes no solution has failed as a
	// solver: Status Error, not a Go error.
	res, err := (Solver{Binary: "true"}).Solve(context.Background(), m, mip.Options{})
	if err != nil || res.Status != mip.Error || !strings.Contains(res.Message, "wrote no solution") {
		t.Errorf("got %v, %v", res, err)
	}
	if got := (Solver{}).Name(); got != "cbc (external)" {
		t.Errorf("Name %q", got)
	}
}

// TestLPFileWithCBC checks that cbc reads WriteLP's output to the same
// optimum (without the constant, which cbc's LP reader drops).
func TestLPFileWithCBC(t *testing.T) {
	m, lo, hi := miptest.Bounds()
	want, _, _ := miptest.BruteForceBox(m, lo, hi)
	_, constant := m.Objective()
	path := filepath.Join(t.TempDir(), "bounds.lp")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WriteLP(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command("cbc", path, "-solve", "-quit").Output()
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`Objective value:\s+(\S+)`)
	sm := re.FindSubmatch(out)
	if sm == nil {
		t.Fatalf("no objective in cbc output:\n%s", out)
	}
	got, _ := strconv.ParseFloat(string(sm[1]), 64)
	if math.Abs(got+constant-want) > 1e-6 {
		t.Errorf("cbc on the LP file: %g + %g, want %g", got, constant, want)
	}
}
