// Package spec defines what lenspec attacks and verifies: a perturbation
// set S(x, δ) around an input, the inputs an adversary may present, and a
// length threshold K̂. The property is "ℓ(x') ≤ K̂ for every x' ∈ S"; an
// input of S whose greedy output is longer than K̂ violates it.
//
// Sets share one interface, Set, over their element type; the L∞ ball
// S(x, δ) = {x' : ‖x' − x‖∞ ≤ δ} ∩ [min, max]ⁿ around a continuous input is
// the first (Ball), a Region: a set with a bounding box the verifier's
// bounds start from.
package spec

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lenspec/lenspec/model"
)

// Set is a perturbation set over inputs of type E ([]float64 for images).
type Set[E any] interface {
	// Contains reports exactly whether x is in the set.
	Contains(x E) bool
	// Project moves x to a nearby point of the set, in place.
	Project(x E)
	// Sample fills x with a point of the set drawn from rng.
	Sample(rng *rand.Rand, x E)
	// Describe says what the set is, for people ("L∞ ball δ=0.1 ∩ [-1, 1]").
	Describe() string
}

// Region is a continuous perturbation set: float64 vectors of Dim values.
type Region interface {
	Set[[]float64]
	Dim() int
	// Center is the unperturbed input.
	Center() []float64
	// Box is the smallest box containing the set, per coordinate: where
	// bound propagation starts (exact for an L∞ ball).
	Box() (lo, hi []float64)
	// Float32 is the same set for float32 iterates: its Project and Sample
	// round inward, so their points lie in the set read back exactly in
	// float64.
	Float32() Set[[]float32]
}

// Ball is the L∞ ball of radius Delta around X intersected with the input
// box [Min, Max]ⁿ.
type Ball struct {
	X        []float64
	Delta    float64
	Min, Max float64
}

var _ Region = Ball{}

// CheckRadius checks an L∞ radius for inputs in [min, max]: finite,
// non-negative, and at most max − min. Around any point of the range, a
// ball of radius max − min is the whole range already, so a larger radius
// says nothing more, and is far more often a slip (5 for 5/255) than an
// intent. Every radius lenspec takes — the CLI's --eps, a spec file's
// "eps", certified and verification-friendly training's — is checked
// here, so that one is refused wherever another is.
func CheckRadius(delta, min, max float64) error {
	if !(delta >= 0) || math.IsInf(delta, 0) {
		return fmt.Errorf("radius %v must be finite and non-negative", delta)
	}
	if !(min < max) || math.IsInf(min, 0) || math.IsInf(max, 0) {
		return fmt.Errorf("input range [%v, %v] is empty or unbounded", min, max)
	}
	if w := max - min; delta > w {
		return fmt.Errorf("radius %v is wider than the input range [%v, %v]: at most %v, the whole range", delta, min, max, w)
	}
	return nil
}

// NewBall validates and returns S(center, delta) ∩ [min, max]ⁿ.
func NewBall(center []float64, delta, min, max float64) (Ball, error) {
	if err := CheckRadius(delta, min, max); err != nil {
		return Ball{}, fmt.Errorf("spec: %w", err)
	}
	for i, v := range center {
		if !(v >= min && v <= max) {
			return Ball{}, fmt.Errorf("spec: input value %d is %v, outside [%v, %v]", i, v, min, max)
		}
	}
	return Ball{X: center, Delta: delta, Min: min, Max: max}, nil
}

// Dim is the number of coordinates.
func (b Ball) Dim() int { return len(b.X) }

// Center is the unperturbed input.
func (b Ball) Center() []float64 { return b.X }

// Describe names the ball.
func (b Ball) Describe() string {
	return fmt.Sprintf("L∞ ball δ=%g ∩ [%g, %g]^%d", b.Delta, b.Min, b.Max, len(b.X))
}

// Bounds returns the interval of coordinate i: the float64 values x with
// |x − X[i]| ≤ δ in exact arithmetic, within [Min, Max]. fl(X[i] ± δ) can
// sit an ulp outside the real interval; such an end is moved one ulp in,
// so a point inside Bounds is inside the ball, and every float64 point of
// the ball is inside Bounds.
func (b Ball) Bounds(i int) (lo, hi float64) {
	lo, e := twoSum(b.X[i], -b.Delta)
	if e > 0 { // the exact X − δ lies above lo
		lo = math.Nextafter(lo, math.Inf(1))
	}
	hi, e = twoSum(b.X[i], b.Delta)
	if e < 0 { // the exact X + δ lies below hi
		hi = math.Nextafter(hi, math.Inf(-1))
	}
	return math.Max(lo, b.Min), math.Min(hi, b.Max)
}

// twoSum returns fl(a + b) and its rounding error: a + b = s + e exactly
// (Knuth's TwoSum; exact barring overflow).
func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	return s, (a - (s - bb)) + (b - bb)
}

// Box returns the per-coordinate bounds.
func (b Ball) Box() (lo, hi []float64) {
	lo, hi = make([]float64, len(b.X)), make([]float64, len(b.X))
	for i := range b.X {
		lo[i], hi[i] = b.Bounds(i)
	}
	return lo, hi
}

// Contains reports whether x lies in the ball (exactly, in float64).
func (b Ball) Contains(x []float64) bool { return contains(b, x) }

// Project clamps x onto the ball in place; NaN coordinates go to the
// centre.
func (b Ball) Project(x []float64) { project(b, x) }

// Sample fills x with a point drawn uniformly from the ball.
func (b Ball) Sample(rng *rand.Rand, x []float64) { sample(b, rng, x) }

// Float32 is the ball for float32 iterates. Its inward-rounded bounds are
// computed here, once: an attack projects thousands of times.
func (b Ball) Float32() Set[[]float32] { return newBall32(b) }

// boxed is what the shared set arithmetic needs: a centre and exact
// per-coordinate bounds.
type boxed interface {
	Dim() int
	Center() []float64
	Bounds(i int) (lo, hi float64)
	Describe() string
}

func newBall32(b boxed) *ball32 {
	n := b.Dim()
	s := &ball32{b: b, lo: make([]float32, n), hi: make([]float32, n), mid: make([]float32, n)}
	for i := range n {
		s.lo[i], s.hi[i] = inward[float32](b.Bounds(i))
		s.mid[i] = min(max(float32(b.Center()[i]), s.lo[i]), s.hi[i])
	}
	return s
}

// ball32 is a set seen by float32 code, with its float32 box.
type ball32 struct {
	b           boxed
	lo, hi, mid []float32
}

func (s *ball32) Contains(x []float32) bool { return contains(s.b, x) }
func (s *ball32) Describe() string          { return s.b.Describe() + " (float32)" }

// Project clamps x to the precomputed box: the points project gives.
func (s *ball32) Project(x []float32) {
	if len(x) != len(s.lo) {
		project(s.b, x)
		return
	}
	for i, v := range x {
		switch {
		case v != v:
			x[i] = s.mid[i]
		case v < s.lo[i]:
			x[i] = s.lo[i]
		case v > s.hi[i]:
			x[i] = s.hi[i]
		}
	}
}

func (s *ball32) Sample(rng *rand.Rand, x []float32) {
	for i := range x {
		lo, hi := s.b.Bounds(i)
		x[i] = float32(lo + (hi-lo)*rng.Float64())
	}
	s.Project(x) // float32 rounding may step outside by an ulp
}

func contains[T float32 | float64](b boxed, x []T) bool {
	if len(x) != b.Dim() {
		return false
	}
	for i, v := range x {
		lo, hi := b.Bounds(i)
		if f := float64(v); !(f >= lo && f <= hi) {
			return false
		}
	}
	return true
}

// project clamps x onto the ball in place. For float32, the bounds are
// rounded inwards first, so the projected point lies in the ball even when
// read back exactly in float64 — unless a coordinate's interval holds no
// float32 value at all (radius 0 around a centre float32 cannot represent),
// where the nearest float32 is used: replay therefore projects witnesses
// again in float64. NaN coordinates go to the centre.
func project[T float32 | float64](b boxed, x []T) {
	for i := range x {
		lo, hi := inward[T](b.Bounds(i))
		switch v := x[i]; {
		case v != v:
			x[i] = min(max(T(b.Center()[i]), lo), hi)
		case v < lo:
			x[i] = lo
		case v > hi:
			x[i] = hi
		}
	}
}

func sample[T float32 | float64](b boxed, rng *rand.Rand, x []T) {
	for i := range x {
		lo, hi := b.Bounds(i)
		x[i] = T(lo + (hi-lo)*rng.Float64())
	}
	project(b, x) // float32 rounding may step outside by an ulp
}

// inward returns [lo, hi] as T values inside the real interval.
func inward[T float32 | float64](lo, hi float64) (T, T) {
	l, h := T(lo), T(hi)
	if float64(l) < lo {
		l = next(l, true)
	}
	if float64(h) > hi {
		h = next(h, false)
	}
	if l > h { // no T value inside: use the nearest one
		l = T(lo)
		h = l
	}
	return l, h
}

func next[T float32 | float64](v T, up bool) T {
	dir := math.Inf(-1)
	if up {
		dir = math.Inf(1)
	}
	switch any(v).(type) {
	case float32:
		return T(math.Nextafter32(float32(v), float32(dir)))
	default:
		return T(math.Nextafter(float64(v), dir))
	}
}

// Exceeds reports whether a decoded output violates ℓ ≤ k. An output that
// did not stop within the step cap has ℓ ≥ len(Tokens), so len(Tokens) > k
// decides both cases; a cap of k or less can never show a violation.
func Exceeds(r model.Result, k int) bool { return len(r.Tokens) > k }

// Box is a per-coordinate perturbation set {x' : Lo ≤ x' ≤ Hi} around an
// input X inside it: what a user's own specification gives when the
// allowed change differs between coordinates (a region of an image, a
// sensor's tolerance).
type Box struct {
	X, Lo, Hi []float64
}

var _ Region = Box{}

// NewBox validates and returns the box [lo, hi] around center, within the
// input range [min, max] (the bounds are clipped to it).
func NewBox(center, lo, hi []float64, min, max float64) (Box, error) {
	if len(lo) != len(center) || len(hi) != len(center) {
		return Box{}, fmt.Errorf("spec: %d lower and %d upper bounds for an input of %d values", len(lo), len(hi), len(center))
	}
	b := Box{X: center, Lo: make([]float64, len(center)), Hi: make([]float64, len(center))}
	for i, v := range center {
		l, h := math.Max(lo[i], min), math.Min(hi[i], max)
		if math.IsNaN(lo[i]) || math.IsNaN(hi[i]) || !(l <= v && v <= h) {
			return Box{}, fmt.Errorf("spec: value %d is %v, outside its bounds [%v, %v] ∩ [%v, %v]", i, v, lo[i], hi[i], min, max)
		}
		b.Lo[i], b.Hi[i] = l, h
	}
	return b, nil
}

// Dim is the number of coordinates.
func (b Box) Dim() int { return len(b.X) }

// Center is the unperturbed input.
func (b Box) Center() []float64 { return b.X }

// Describe names the box.
func (b Box) Describe() string { return fmt.Sprintf("box of %d per-coordinate intervals", len(b.X)) }

// Bounds returns the interval of coordinate i (exact: given as float64).
func (b Box) Bounds(i int) (lo, hi float64) { return b.Lo[i], b.Hi[i] }

// Box returns the per-coordinate bounds.
func (b Box) Box() (lo, hi []float64) {
	return append([]float64(nil), b.Lo...), append([]float64(nil), b.Hi...)
}

// Contains reports whether x lies in the box.
func (b Box) Contains(x []float64) bool { return contains(b, x) }

// Project clamps x onto the box in place; NaN coordinates go to the centre.
func (b Box) Project(x []float64) { project(b, x) }

// Sample fills x with a point drawn uniformly from the box.
func (b Box) Sample(rng *rand.Rand, x []float64) { sample(b, rng, x) }

// Float32 is the box for float32 iterates (bounds rounded inward).
func (b Box) Float32() Set[[]float32] { return newBall32(b) }
