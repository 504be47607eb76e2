package external

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/mip/internal/miptest"
)

// TestQuiet checks that cbc's chatter does not reach standard output.
func TestQuiet(t *testing.T) {
	got := miptest.CaptureStdout(t, func() {
		m := miptest.RandomInteger(rand.New(rand.NewPCG(1, 1)), 10, 2, 4)
		if _, err := (Solver{}).Solve(context.Background(), m, mip.Options{TimeLimit: time.Second}); err != nil {
			t.Error(err)
		}
	})
	if got != "" {
		t.Errorf("standard output during a solve: %q", got)
	}
}
