//go:build cgo && linux

package cbc

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/mip/internal/miptest"
)

// TestQuiet checks that solves write nothing to standard output, while
// Go's own writes to os.Stdout during a solve still get through.
func TestQuiet(t *testing.T) {
	const marker = "written by Go during the solve\n"
	got := miptest.CaptureStdout(t, func() {
		for seed := range uint64(10) {
			m := miptest.RandomInteger(rand.New(rand.NewPCG(seed, 1)), 10, 2, 4)
			if _, err := (Solver{}).Solve(context.Background(), m, mip.Options{Threads: 2}); err != nil {
				t.Error(err)
			}
		}
		m := miptest.MultiKnapsack(rand.New(rand.NewPCG(1, 1)), 300, 10)
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(100 * time.Millisecond)
			os.Stdout.WriteString(marker)
		}()
		if _, err := (Solver{}).Solve(context.Background(), m, mip.Options{TimeLimit: 400 * time.Millisecond}); err != nil {
			t.Error(err)
		}
		<-done
		lp, err := NewLP(m)
		if err != nil {
			t.Fatal(err)
		}
		defer lp.Close()
		if _, st, err := lp.Optimize([]int{0, 1}, []float64{1, 1}, true); err != nil || st != mip.Optimal {
			t.Errorf("LP: %v %v", st, err)
		}
	})
	if got != marker {
		t.Errorf("standard output during solves: %q, want only %q", got, marker)
	}
}

// TestSignals checks that a solve leaves the SIGINT handler (Go's) alone:
// CbcMain1 installs its own unless told not to.
func TestSignals(t *testing.T) {
	before := sigintHandler()
	m := miptest.Knapsack([]float64{60, 100, 120}, []float64{10, 20, 30}, 50)
	if _, err := (Solver{}).Solve(context.Background(), m, mip.Options{}); err != nil {
		t.Fatal(err)
	}
	if after := sigintHandler(); after != before {
		t.Errorf("SIGINT handler changed from %#x to %#x", before, after)
	}
}
