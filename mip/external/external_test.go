package external

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/mip/internal/miptest"
)

func TestSuite(t *testing.T) {
	miptest.Run(t, Solver{})
}

// TestCancelEarly cancels while cbc is still starting up, when it ignores
// a single SIGINT. The limit is generous: the point is stopping long before
// the 20 s time limit, also on a loaded machine.
func TestCancelEarly(t *testing.T) {
	m := miptest.MultiKnapsack(rand.New(rand.NewPCG(0, 4)), 500, 10)
	for _, d := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		t0 := time.Now()
		res, err := (Solver{}).Solve(ctx, m, mip.Options{TimeLimit: 20 * time.Second})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if wall := time.Since(t0); res.Status != mip.Cancelled || wall > 5*time.Second {
			t.Errorf("cancelled after %v: got %s after %v", d, res.Status, wall)
		}
	}
}
