package verify

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestCutsAgainstGrid: branch and bound with learned cuts, their
// multipliers in the bounds and input clipping never proves a property a
// dense grid search breaks, ends proven where branch and bound without
// them does, and all are used (nogoods strengthened and covering domains,
// rows bounded with multipliers, boxes clipped), also when 25–300 ms
// limits stop it; with a pool that learns from open leaves too
// (unsound cuts planted), some search proves a property the grid breaks:
// the check has teeth.
func TestCutsAgainstGrid(t *testing.T) {
	var proven, strengthened, pruned, learned, clipped, cutRows, withoutMult, withMult int64
	bothProved := 0
	wrongPlanted := 0
	forBaBProblems(t, 80, func(seed uint64) (int, float64) { return 2 + int(seed%3), []float64{0.2, 0.5, 1}[seed%3] }, func() bool { return true }, func(p babProblem) {
		maxLen, K, lo, hi, g, b, candidate := p.maxLen, p.K, p.lo, p.hi, p.g, p.b, p.candidate
		searchFor := func(limit time.Duration, cuts, multipliers, clip, plant bool) (babOutcome, *babSearch) {
			opt := verifyOpts()
			opt.Cuts, opt.CutMultipliers, opt.Clip = cuts, multipliers, clip
			s := g.newBaB(context.Background(), lo, hi, opt, []*domain{{splits: splitSet{}, b: b}}, candidate)
			s.learnOpen = plant
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			out, err := s.run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return out, s
		}
		search := func(cuts, multipliers, clip, plant bool) (babOutcome, *babSearch) {
			return searchFor(5*time.Second, cuts, multipliers, clip, plant)
		}
		if K < maxLen {
			// A longer output exists: never proven, with both on, whatever
			// the time limit stops.
			for _, limit := range []time.Duration{25 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond, 5 * time.Second} {
				if out, _ := searchFor(limit, true, true, true, false); out.status == babProven {
					t.Fatalf("seed %d: branch and bound with cuts, their multipliers and clipping (%v limit) proves K̂ %d, the grid finds length %d", p.seed, limit, K, maxLen)
				}
			}
			if bad, _ := search(true, p.seed%2 == 0, false, true); bad.status == babProven {
				wrongPlanted++
			}
			return
		}
		plain, _ := search(false, false, false, false)
		domains := map[bool]int64{}
		for _, on := range []struct{ cuts, multipliers, clip bool }{{true, false, false}, {true, true, false}, {false, false, true}} {
			out, s := search(on.cuts, on.multipliers, on.clip, false)
			if plain.status != babTimeLimit && out.status != babTimeLimit && (plain.status == babProven) != (out.status == babProven) {
				t.Fatalf("seed %d K̂ %d: with cuts %v, multipliers %v and clipping %v the search ends %v, without %v", p.seed, K, on.cuts, on.multipliers, on.clip, out.status, plain.status)
			}
			if out.status == babProven {
				proven++
				if on.cuts {
					domains[on.multipliers] = out.domains
				}
			}
			if on.cuts {
				learned += s.cuts.learned
				strengthened += s.cuts.strengthened
				pruned += s.cuts.pruned
				cutRows += s.bd.cutRows
			}
			clipped += s.bd.clipped
		}
		if len(domains) == 2 {
			bothProved++
			withoutMult += domains[false]
			withMult += domains[true]
		}
	})
	t.Logf("%d proofs with cuts, multipliers or clipping; %d nogoods learned, %d strengthened, %d domains closed by them, %d rows bounded with their multipliers, %d input boxes clipped; planted cuts proved %d false properties; %d problems proved with cuts both without and with multipliers, in %d and %d domains", proven, learned, strengthened, pruned, cutRows, clipped, wrongPlanted, bothProved, withoutMult, withMult)
	if proven == 0 || strengthened == 0 || pruned == 0 || clipped == 0 || cutRows == 0 {
		t.Fatalf("cuts, multipliers or clipping unused: %d proofs, %d strengthened, %d domains closed by them, %d rows with multipliers, %d boxes clipped", proven, strengthened, pruned, cutRows, clipped)
	}
	if wrongPlanted == 0 {
		t.Fatal("nogoods learned from open leaves proved nothing false: the grid check cannot tell sound cuts from unsound ones")
	}
}

// TestClipBox: the clipped box holds every point of the box in the
// half-space (sampled, and the box's corners), and is the smallest box
// that does: each face it moved is touched by a point of the half-space.
func TestClipBox(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	moved := 0
	for trial := 0; trial < 300; trial++ {
		n := 1 + rng.IntN(5)
		in := make([]Interval, n)
		a := make([]float64, n)
		for i := range in {
			lo := rng.Float64()*2 - 1
			in[i] = Interval{lo, lo + rng.Float64()}
			a[i] = rng.NormFloat64()
		}
		if trial%7 == 0 {
			a[0] = 0
		}
		// h between the smallest and largest a·x over the box, so that
		// the half-space cuts it in most trials.
		lo, hi := 0.0, 0.0
		for i, iv := range in {
			lo += math.Min(a[i]*iv.Lo, a[i]*iv.Hi)
			hi += math.Max(a[i]*iv.Lo, a[i]*iv.Hi)
		}
		h := lo + (hi-lo)*(rng.Float64()*1.2-0.1)
		out, empty, cut := clipBox(in, a, 1, h)
		if empty != (h < lo) {
			t.Fatalf("trial %d: empty %v, the box's smallest a·x %g, h %g", trial, empty, lo, h)
		}
		if empty {
			continue
		}
		if cut {
			moved++
		}
		x := make([]float64, n)
		for range 2000 {
			dot := 0.0
			for i, iv := range in {
				x[i] = iv.Lo + (iv.Hi-iv.Lo)*rng.Float64()
				if rng.IntN(3) == 0 { // corners and faces too
					x[i] = []float64{iv.Lo, iv.Hi}[rng.IntN(2)]
				}
				dot += a[i] * x[i]
			}
			if dot > h {
				continue
			}
			for i, v := range x {
				if v < out[i].Lo || v > out[i].Hi {
					t.Fatalf("trial %d: %v in the half-space lies outside the clipped box %v (coordinate %d)", trial, x, out, i)
				}
			}
		}
		// Tight: a moved face is reached with the other coordinates at
		// their a-minimising ends.
		for i := range in {
			if out[i] == in[i] {
				continue
			}
			dot := 0.0
			for j, iv := range in {
				if j != i {
					dot += math.Min(a[j]*iv.Lo, a[j]*iv.Hi)
				}
			}
			face := out[i].Hi
			if a[i] < 0 {
				face = out[i].Lo
			}
			if v := dot + a[i]*face; math.Abs(v-h) > 1e-6*(1+math.Abs(h)) {
				t.Fatalf("trial %d: coordinate %d moved to %g, where a·x reaches %g, not h = %g: not the smallest box", trial, i, face, v, h)
			}
		}
	}
	if moved < 100 {
		t.Fatalf("only %d of 300 boxes clipped", moved)
	}
}
