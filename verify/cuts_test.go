package verify

import (
	"context"
	"testing"
	"time"

	"github.com/lenspec/lenspec/spec"
)

// TestCutsAgainstGrid: branch and bound with learned cuts never proves a
// property a dense grid search breaks, ends as branch and bound without
// them does wherever that one ends, and its cuts are used (strengthened
// and covering domains); with a pool that learns from open leaves too
// (unsound cuts planted), some search proves a property the grid breaks:
// the check has teeth.
func TestCutsAgainstGrid(t *testing.T) {
	var proven, strengthened, pruned, learned int64
	wrongPlanted := 0
	for seed := uint64(1); seed <= 80; seed++ {
		pixels := 2 + int(seed%3)
		m, ball := pixelProblem(t, seed, pixels, []float64{0.2, 0.5, 1}[seed%3])
		lo, hi := ball.Box()
		maxLen, _ := gridMax(t, m, lo, hi, map[int]int{2: 301, 3: 61, 4: 25}[pixels], 12)
		if maxLen > 11 {
			continue
		}
		n, err := Lower(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, K := range []int{maxLen - 1, maxLen} {
			if K < 0 {
				continue
			}
			g := newGraph(n, K)
			b := computeBounds(context.Background(), g, lo, hi, BoundCROWN)
			if b.Proven {
				continue
			}
			candidate := func(x []float64) (bool, error) {
				return spec.Exceeds(decode(t, m, x, 12)[0], K), nil
			}
			search := func(cuts, plant bool) (babOutcome, *babSearch) {
				opt := verifyOpts()
				opt.Cuts = cuts
				s := g.newBaB(context.Background(), lo, hi, opt, []*domain{{splits: splitSet{}, b: b}}, candidate)
				s.learnOpen = plant
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				out, err := s.run(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return out, s
			}
			plain, _ := search(false, false)
			out, s := search(true, false)
			if out.status == babProven && maxLen > K {
				t.Fatalf("seed %d: branch and bound with cuts proves K̂ %d, the grid finds length %d", seed, K, maxLen)
			}
			if plain.status != babTimeLimit && out.status != babTimeLimit && (plain.status == babProven) != (out.status == babProven) {
				t.Fatalf("seed %d K̂ %d: with cuts the search ends %v, without %v", seed, K, out.status, plain.status)
			}
			if out.status == babProven {
				proven++
			}
			if s.cuts.learned > 0 {
				t.Logf("seed %d K̂ %d (grid %d): %v, %d domains; %d nogoods, %d strengthened, %d domains closed by them", seed, K, maxLen, out.status, out.domains, s.cuts.learned, s.cuts.strengthened, s.cuts.pruned)
			}
			learned += s.cuts.learned
			strengthened += s.cuts.strengthened
			pruned += s.cuts.pruned
			if bad, _ := search(true, true); bad.status == babProven && maxLen > K {
				wrongPlanted++
			}
		}
	}
	t.Logf("%d proofs with cuts; %d nogoods learned, %d strengthened, %d domains closed by them; planted cuts proved %d false properties", proven, learned, strengthened, pruned, wrongPlanted)
	if proven == 0 || strengthened == 0 || pruned == 0 {
		t.Fatalf("cuts unused: %d proofs, %d strengthened, %d domains closed by them", proven, strengthened, pruned)
	}
	if wrongPlanted == 0 {
		t.Fatal("nogoods learned from open leaves proved nothing false: the grid check cannot tell sound cuts from unsound ones")
	}
}
