package verify

import "math"

// Interval is a closed interval [Lo, Hi].
type Interval struct{ Lo, Hi float64 }

// Floating-point rounding: every bound lenspec computes is a sum of
// products evaluated in float64. For a sum of n terms the rounding error is
// at most γₙ·Σ|terms| with γₙ = n·2⁻⁵³/(1 − n·2⁻⁵³) (Higham, Accuracy and
// Stability of Numerical Algorithms, §3.1). The bound computations here
// chain at most a few hundred thousand such operations, so padding every
// bound outward by relPad·(Σ|terms|) + absPad, with relPad = 1e-9, covers
// γₙ for n up to 10⁷ with room to spare; bounds are never rounded inward.
const (
	relPad = 1e-9
	absPad = 1e-12
)

// pad widens [lo, hi] by the rounding allowance for a computation whose
// terms have absolute sum abs.
func pad(lo, hi, abs float64) Interval {
	p := relPad*abs + absPad
	return Interval{lo - p, hi + p}
}

// intersect keeps the tighter of two sound bounds.
func intersect(a, b Interval) Interval {
	return Interval{math.Max(a.Lo, b.Lo), math.Min(a.Hi, b.Hi)}
}
