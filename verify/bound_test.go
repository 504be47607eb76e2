package verify

import (
	"context"
	"testing"
)

// TestBoundAgainstGrid: on random tiny captioners the certified interval
// [Lower, Upper] holds the worst case a dense grid search finds (Upper is
// never below it: soundness), the witness lies in the ball and replays to
// Lower tokens, and most samples are certified exactly.
func TestBoundAgainstGrid(t *testing.T) {
	certified, total, raised := 0, 0, 0
	for seed := uint64(1); seed <= 40; seed++ {
		pixels := 2 + int(seed%2)
		m, ball := pixelProblem(t, seed, pixels, []float64{0.05, 0.2, 0.5, 1}[seed%4])
		lo, hi := ball.Box()
		gridLen, _ := gridMax(t, m, lo, hi, map[int]int{2: 301, 3: 61}[pixels], 12)
		net, err := Lower(m)
		if err != nil {
			t.Fatal(err)
		}
		opt := BoundOptions{Options: verifyOpts(), MaxK: 10}
		b, err := Bound(context.Background(), net, m, ball, seed, opt)
		if err != nil {
			t.Fatal(err)
		}
		if gridLen > 11 {
			// Runs to the step cap: no proof exists; the search must
			// say so (no upper bound) and show a capped witness.
			if b.Upper >= 0 || b.Lower != 12 {
				t.Fatalf("seed %d: the grid reaches the cap, the bound says [%d, %d]", seed, b.Lower, b.Upper)
			}
			continue
		}
		total++
		if b.Upper >= 0 && b.Upper < gridLen {
			t.Fatalf("seed %d: proven maximum %d below the grid's %d", seed, b.Upper, gridLen)
		}
		if b.Upper >= 0 && b.Lower > b.Upper {
			t.Fatalf("seed %d: lower %d above upper %d", seed, b.Lower, b.Upper)
		}
		x := b.Witness
		if x == nil {
			x = ball.X
		}
		if !ball.Contains(x) {
			t.Fatalf("seed %d: witness outside the ball", seed)
		}
		if res := decode(t, m, x, 12); len(res[0].Tokens) < b.Lower {
			t.Fatalf("seed %d: witness decodes %d tokens, lower bound %d", seed, len(res[0].Tokens), b.Lower)
		}
		for _, st := range b.Steps {
			if st.Verdict == Vulnerable {
				raised++ // a witness raised the lower bound past the centre's length
				break
			}
		}
		if b.Certified() {
			certified++
		} else {
			t.Logf("seed %d: [%d, %d], grid %d, steps %+v", seed, b.Lower, b.Upper, gridLen, b.Steps)
		}
	}
	t.Logf("certified %d of %d; %d raised by a witness", certified, total, raised)
	if raised == 0 {
		t.Fatal("no search found a witness: the test does not exercise raising the lower bound")
	}
	if total < 12 || certified < total*3/4 {
		t.Fatalf("certified only %d of %d", certified, total)
	}
}
