package verify

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lenspec/lenspec/mip/external"
	"github.com/lenspec/lenspec/spec"
)

// stubbornSolver writes a solver script that reports an incumbent, as cbc
// does before it writes one only as it stops, then ignores SIGINT and
// sleeps: the solver the external backend waits longest for.
func stubbornSolver(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stubborn-cbc")
	script := "#!/bin/sh\n" +
		"echo 'Cbc0012I Integer solution of 1000000 found by heuristic after 0 iterations and 0 nodes (0.00 seconds)'\n" +
		"trap '' INT\n" +
		"sleep 30\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// solveDirs lists the external backend's temporary directories in dir.
func solveDirs(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "lenspec-mip-") {
			left = append(left, e.Name())
		}
	}
	return left
}

// TestExternalSolveEndsWithSample: with --solver external, a sample stopped
// by its time limit, or by its context's deadline, ends within 5 % of it +
// 50 ms × the slowdown (as TestLimitsHoldInBaB), its solve included: the
// solve's temporary directory, removed once its solver is dead, is gone
// when Verify returns, since lenspec exits straight after its last sample
// and an abandoned solve's cleanup never runs. Cases: cbc on a MIP it does
// not finish in the limit, and a solver that ignores the interrupt after
// reporting an incumbent. Broken (the backend's grace longer than the
// verifier's, and stretched while an incumbent is unwritten), the solve is
// abandoned with its directory and its solver, which runs on for up to a
// second past the limit.
func TestExternalSolveEndsWithSample(t *testing.T) {
	m, n := randomNet(t, limitConfig(), 2)
	rng := rand.New(rand.NewPCG(2, 5))
	x := make([]float64, n.InputSize)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	K := len(decode(t, m, x, 8)[0].Tokens)
	ball, err := spec.NewBall(x, 0.2, -1, 1)
	if err != nil {
		t.Fatal(err)
	}
	stubborn := stubbornSolver(t)
	tests := []struct {
		name     string
		binary   string
		limit    time.Duration
		ctxLimit time.Duration // the context's deadline, if not 0
	}{
		{"cbc, time limit", "cbc", 1500 * time.Millisecond, 0},
		{"stubborn, time limit", stubborn, 1500 * time.Millisecond, 0},
		{"stubborn, context deadline", stubborn, 2 * time.Second, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			opt := verifyOpts()
			opt.Solver, opt.NewLP, opt.Abstract = &external.Solver{Binary: tt.binary}, nil, false
			opt.TimeLimit = tt.limit
			ctx, limit := context.Background(), tt.limit
			if tt.ctxLimit > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxLimit)
				defer cancel()
				limit = tt.ctxLimit
			}
			t0 := time.Now()
			r, err := Verify(ctx, n, m, Sample{Name: "t", Set: ball, K: K}, opt)
			took := time.Since(t0)
			left := solveDirs(t, tmp)
			// The sample has ended once its solve has too: an abandoned one
			// removes its directory when its solver is dead.
			for len(solveDirs(t, tmp)) > 0 && time.Since(t0) < 20*time.Second {
				time.Sleep(5 * time.Millisecond)
			}
			ended := time.Since(t0)
			if err != nil {
				t.Fatal(err)
			}
			// The process mostly waits for the solver here, so its own CPU
			// time says nothing of the load: a busy loop measures it.
			slow := min(slowdown(), maxSlowdown)
			t.Logf("returned after %v, solve ended after %v, of %v (slowdown %.1f): %s (%s; phases %+v)", took, ended, limit, slow, r.Verdict, r.Reason, r.Phases)
			if r.Verdict != Unknown {
				t.Fatalf("%s (%s): the test needs a solve stopped by the limit", r.Verdict, r.Reason)
			}
			// On a busy machine a solve abandoned at the grace removes its
			// directory a few milliseconds after the sample returns (left);
			// that it is gone within the limit's allowance is ended's check
			// below, which a directory never removed fails at 20 s.
			if len(left) > 0 {
				t.Logf("directories still there when the sample returned: %v", left)
			}
			if allow := limit + limit/20 + time.Duration(float64(50*time.Millisecond)*slow); ended > allow {
				t.Errorf("the sample and its solve took %v, more than %v + 5 %% + 50 ms × %.1f = %v", ended, limit, slow, allow)
			}
		})
	}
}
