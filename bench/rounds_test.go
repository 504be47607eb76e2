package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMidMedian(t *testing.T) {
	xs := []float64{5, 1, 4, 2}
	if m := midMedian(xs); m != 3 {
		t.Fatalf("median of %v: %v, want 3", xs, m)
	}
	if !slices.Equal(xs, []float64{5, 1, 4, 2}) {
		t.Fatalf("input changed: %v", xs)
	}
	if m := midMedian([]float64{7, 1, 3}); m != 3 {
		t.Fatalf("median of 7 1 3: %v", m)
	}
	if m := midMedian(nil); !math.IsNaN(m) {
		t.Fatalf("median of none: %v", m)
	}
}

// TestMedianCI: the order statistics chosen are the binomial ones (worked
// out by hand), and over many samples of a known distribution the
// interval holds the true median at least as often as claimed, while the
// next narrower one would not.
func TestMedianCI(t *testing.T) {
	seq := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(n - i) // descending: medianCI must sort
		}
		return xs
	}
	for _, c := range []struct {
		n      int
		ok     bool
		lo, hi float64
	}{
		{1, false, 0, 0},
		{4, false, 0, 0},  // [min, max] of 4 misses with probability 1/8 > 10 %
		{5, true, 1, 5},   // 2/32 = 6.25 %
		{7, true, 1, 7},   // [x2, x6] would miss with 2·8/128 = 12.5 %
		{8, true, 2, 7},   // 2·9/256 = 7 %
		{15, true, 4, 12}, // 2·576/32768 = 3.5 %; [x5, x11] 11.8 %
	} {
		lo, hi, ok := medianCI(seq(c.n), 0.9)
		if ok != c.ok || lo != c.lo || hi != c.hi {
			t.Errorf("n %d: [%v, %v] %v, want [%v, %v] %v", c.n, lo, hi, ok, c.lo, c.hi, c.ok)
		}
	}

	rng := rand.New(rand.NewPCG(1, 1))
	const trials = 4000
	for _, n := range []int{5, 6, 9, 15, 30} {
		hits := 0
		for range trials {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = rng.ExpFloat64() // skewed; the median is ln 2
			}
			if lo, hi, ok := medianCI(xs, 0.9); ok && lo <= math.Ln2 && math.Ln2 <= hi {
				hits++
			}
		}
		if cover := float64(hits) / trials; cover < 0.88 {
			t.Errorf("n %d: the interval held the median in %.3f of the samples, want ≥ 0.9", n, cover)
		}
	}
}

func TestRoundsDone(t *testing.T) {
	opt := DefaultPeerOptions()
	opt.Rounds, opt.MinRounds, opt.Tolerance, opt.Budget = 10, 5, 0.05, time.Minute
	tight := []float64{0.50, 0.51, 0.49, 0.50, 0.505}
	wide := []float64{0.3, 0.5, 0.7, 0.5, 0.45}
	for _, c := range []struct {
		name   string
		ratios []float64
		spent  time.Duration
		opt    func(*PeerOptions)
		want   string // "" = go on
	}{
		{"fewer than the fewest, however tight", tight[:4], time.Second, nil, ""},
		{"fewer than the fewest, however late", wide[:4], time.Hour, nil, ""},
		{"tight at the fewest", tight, time.Second, nil, StopConverged},
		{"wide, time left", wide, time.Second, nil, ""},
		{"wide, the next round would pass the budget", wide, 51 * time.Second, nil, StopBudget},
		{"wide, the next round ends within the budget", wide, 49 * time.Second, nil, ""},
		{"wide, no budget", wide, time.Hour, func(o *PeerOptions) { o.Budget = 0 }, ""},
		{"tolerance 0 never converges", tight, time.Second, func(o *PeerOptions) { o.Tolerance = 0 }, ""},
		{"a wide tolerance takes a wide interval", wide, time.Second, func(o *PeerOptions) { o.Tolerance = 0.5 }, StopConverged},
		{"the cap", append(slices.Clone(wide), wide...), time.Second, nil, StopCap},
		{"the cap before the fewest", tight[:3], time.Second, func(o *PeerOptions) { o.Rounds, o.MinRounds = 3, 3 }, StopCap},
		{"too few for an interval never converge", tight[:3], time.Second, func(o *PeerOptions) { o.MinRounds = 3 }, ""},
	} {
		o := opt
		if c.opt != nil {
			c.opt(&o)
		}
		stop, why := roundsDone(c.ratios, c.spent, o)
		if stop != (c.want != "") || why != c.want {
			t.Errorf("%s: stop %v (%q), want %q", c.name, stop, why, c.want)
		}
	}
}

func TestRunsPerRound(t *testing.T) {
	for _, c := range []struct {
		warmup []float64
		round  time.Duration
		most   int
		want   int
	}{
		{[]float64{0.02, 0.03}, 500 * time.Millisecond, 100, 17}, // the slower side's 0.03 s: 16.7 runs
		{[]float64{0.004, 0.001}, 500 * time.Millisecond, 100, 100},
		{[]float64{4, 12}, 500 * time.Millisecond, 100, 1},
		{[]float64{0.1, 0.1}, 0, 100, 1},
		{[]float64{0, math.NaN()}, time.Second, 7, 7},
	} {
		if got := runsPerRound(c.warmup, c.round, c.most); got != c.want {
			t.Errorf("runsPerRound(%v, %v, %d) = %d, want %d", c.warmup, c.round, c.most, got, c.want)
		}
	}
}

func TestPeerOptionsValidate(t *testing.T) {
	if err := DefaultPeerOptions().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, c := range []struct {
		set  func(*PeerOptions)
		want string
	}{
		{func(o *PeerOptions) { o.Rounds = 0 }, "rounds 0"},
		{func(o *PeerOptions) { o.MinRounds = 16 }, "minimum rounds 16"},
		{func(o *PeerOptions) { o.MinRounds = 0 }, "minimum rounds 0"},
		{func(o *PeerOptions) { o.Reps = 0 }, "runs per round 0"},
		{func(o *PeerOptions) { o.Tolerance = math.NaN() }, "tolerance NaN"},
		{func(o *PeerOptions) { o.Tolerance = math.Inf(1) }, "tolerance +Inf"},
		{func(o *PeerOptions) { o.Tolerance = -0.1 }, "tolerance -0.1"},
		{func(o *PeerOptions) { o.Budget = -time.Second }, "budget -1s"},
		{func(o *PeerOptions) { o.RoundTime = -time.Second }, "round time -1s"},
		{func(o *PeerOptions) { o.PGDLR = math.Inf(1) }, "PGD"},
	} {
		o := DefaultPeerOptions()
		c.set(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error naming %q, got %v", c.want, err)
		}
	}
}
