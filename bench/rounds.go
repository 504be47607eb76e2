package bench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// CILevel is the confidence of the interval a peer operation's ratio is
// reported with and stopped on: 90 %, which five rounds are the fewest to
// give without assuming how the rounds' ratios are distributed.
const CILevel = 0.9

// Why an operation's rounds stopped (PeerOp.Stop).
const (
	StopConverged = "converged" // the ratio's confidence interval is within the tolerance
	StopBudget    = "budget"    // another round would pass the operation's time budget
	StopCap       = "cap"       // the most rounds were run
)

// midMedian is the middle of xs (the mean of the two middle values for an
// even count), xs unchanged; NaN for none.
func midMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// medianCI is the distribution-free confidence interval of the median of
// the population xs were drawn from, at level conf: the order statistics
// x(k) and x(n+1-k) for the largest k whose interval covers the median with
// probability at least conf (each draw falls below the median with
// probability 1/2, so the count below it is binomial). ok is false where n
// draws are too few for that level (fewer than 5 at 90 %).
func medianCI(xs []float64, conf float64) (lo, hi float64, ok bool) {
	n := len(xs)
	if n == 0 {
		return 0, 0, false
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	// tail(j) = P(Binomial(n, 1/2) ≤ j); the interval [x(k), x(n+1-k)]
	// misses the median with probability 2·tail(k-1).
	logC := func(i int) float64 {
		a, _ := math.Lgamma(float64(n + 1))
		b, _ := math.Lgamma(float64(i + 1))
		c, _ := math.Lgamma(float64(n - i + 1))
		return a - b - c - float64(n)*math.Ln2
	}
	k, tail := 0, 0.0
	for j := 0; j < (n+1)/2; j++ {
		tail += math.Exp(logC(j))
		if 2*tail > 1-conf {
			break
		}
		k = j + 1
	}
	if k == 0 {
		return 0, 0, false
	}
	return s[k-1], s[n-k], true
}

// relHalfWidth is the larger distance from m to lo or hi, relative to m.
func relHalfWidth(lo, m, hi float64) float64 {
	return math.Max(m-lo, hi-m) / m
}

// roundsDone decides, after the rounds whose ratios are ratios and that
// took spent together, whether an operation needs no more: the most rounds
// are run; or at least the fewest are, and either the ratio's confidence
// interval (CILevel) is within opt.Tolerance of its median or one more
// round, as long as the average so far, would pass opt.Budget. why is one
// of StopCap, StopConverged, StopBudget when stop.
func roundsDone(ratios []float64, spent time.Duration, opt PeerOptions) (stop bool, why string) {
	n := len(ratios)
	switch {
	case n >= opt.Rounds:
		return true, StopCap
	case n < opt.MinRounds:
		return false, ""
	}
	if lo, hi, ok := medianCI(ratios, CILevel); ok && opt.Tolerance > 0 && relHalfWidth(lo, midMedian(ratios), hi) <= opt.Tolerance {
		return true, StopConverged
	}
	if opt.Budget > 0 && spent+spent/time.Duration(n) > opt.Budget {
		return true, StopBudget
	}
	return false, ""
}

// runsPerRound is how many timed runs each side makes per round: enough
// for the slower side's runs to add up to roundTime, at the time one run
// took in the warm-up, and between 1 and most. Both sides make the same
// number, so a round's two medians are of the same kind of sample.
func runsPerRound(warmup []float64, roundTime time.Duration, most int) int {
	slowest := 0.0
	for _, t := range warmup {
		slowest = math.Max(slowest, t)
	}
	if slowest <= 0 || math.IsNaN(slowest) {
		return most
	}
	r := math.Ceil(roundTime.Seconds() / slowest)
	return int(math.Max(1, math.Min(float64(most), r)))
}

// Validate checks the peer benchmark's settings before any work.
func (o PeerOptions) Validate() error {
	switch {
	case o.Rounds < 1 || o.Rounds > 1000:
		return fmt.Errorf("peer rounds %d must be in 1..1000", o.Rounds)
	case o.MinRounds < 1 || o.MinRounds > o.Rounds:
		return fmt.Errorf("peer minimum rounds %d must be in 1..%d (the most rounds)", o.MinRounds, o.Rounds)
	case o.Reps < 1 || o.Reps > 1000:
		return fmt.Errorf("peer runs per round %d must be in 1..1000", o.Reps)
	case !(o.Tolerance >= 0) || math.IsInf(o.Tolerance, 0):
		return fmt.Errorf("peer tolerance %v must be finite and at least 0", o.Tolerance)
	case o.Budget < 0:
		return fmt.Errorf("peer time budget %v must not be negative", o.Budget)
	case o.RoundTime < 0 || o.RoundTime > time.Hour:
		return fmt.Errorf("peer round time %v must be in 0..1h", o.RoundTime)
	}
	for _, v := range []float64{o.PGDEps, o.PGDLR, o.PGDClip} {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("peer PGD radius %v, learning rate %v and clip %v must be positive and finite", o.PGDEps, o.PGDLR, o.PGDClip)
		}
	}
	return nil
}
