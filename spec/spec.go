// Package spec defines what lenspec attacks and verifies: a perturbation set
// S(x, δ) = {x' : ‖x' − x‖∞ ≤ δ} ∩ [min, max]ⁿ around an input, and a length
// threshold K̂. The property is "ℓ(x') ≤ K̂ for every x' ∈ S"; an input of S
// whose greedy output is longer than K̂ violates it.
package spec

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lenspec/lenspec/model"
)

// Ball is the L∞ ball of radius Delta around Center intersected with the
// input box [Min, Max]ⁿ.
type Ball struct {
	Center   []float64
	Delta    float64
	Min, Max float64
}

// NewBall validates and returns S(center, delta) ∩ [min, max]ⁿ.
func NewBall(center []float64, delta, min, max float64) (Ball, error) {
	if !(delta >= 0) || math.IsInf(delta, 0) {
		return Ball{}, fmt.Errorf("spec: radius %v must be finite and non-negative", delta)
	}
	if !(min < max) {
		return Ball{}, fmt.Errorf("spec: input range [%v, %v] is empty", min, max)
	}
	for i, v := range center {
		if !(v >= min && v <= max) {
			return Ball{}, fmt.Errorf("spec: input value %d is %v, outside [%v, %v]", i, v, min, max)
		}
	}
	return Ball{Center: center, Delta: delta, Min: min, Max: max}, nil
}

// Bounds returns the interval of coordinate i.
func (b Ball) Bounds(i int) (lo, hi float64) {
	return math.Max(b.Center[i]-b.Delta, b.Min), math.Min(b.Center[i]+b.Delta, b.Max)
}

// Box returns the per-coordinate bounds.
func (b Ball) Box() (lo, hi []float64) {
	lo, hi = make([]float64, len(b.Center)), make([]float64, len(b.Center))
	for i := range b.Center {
		lo[i], hi[i] = b.Bounds(i)
	}
	return lo, hi
}

// Contains reports whether x lies in the ball (exactly, in float64).
func Contains[T float32 | float64](b Ball, x []T) bool {
	if len(x) != len(b.Center) {
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

// Project clamps x onto the ball in place. For float32, the bounds are
// rounded inwards first, so the projected point lies in the ball even when
// read back exactly in float64 — unless a coordinate's interval holds no
// float32 value at all (radius 0 around a centre float32 cannot represent),
// where the nearest float32 is used: replay therefore projects witnesses
// again in float64. NaN coordinates go to the centre.
func Project[T float32 | float64](b Ball, x []T) {
	for i := range x {
		lo, hi := inward[T](b.Bounds(i))
		switch v := x[i]; {
		case v != v:
			x[i] = clampT(T(b.Center[i]), lo, hi)
		case v < lo:
			x[i] = lo
		case v > hi:
			x[i] = hi
		}
	}
}

// Sample fills x with a point drawn uniformly from the ball.
func Sample[T float32 | float64](b Ball, rng *rand.Rand, x []T) {
	for i := range x {
		lo, hi := b.Bounds(i)
		x[i] = T(lo + (hi-lo)*rng.Float64())
	}
	Project(b, x) // float32 rounding may step outside by an ulp
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

func clampT[T float32 | float64](v, lo, hi T) T { return min(max(v, lo), hi) }

// Spec is an output-length specification: every x' in Ball must decode to
// at most K tokens before eos.
type Spec struct {
	Ball Ball
	K    int
}

// Exceeds reports whether a decoded output violates ℓ ≤ k. An output that
// did not stop within the step cap has ℓ ≥ len(Tokens), so len(Tokens) > k
// decides both cases; a cap of k or less can never show a violation.
func Exceeds(r model.Result, k int) bool { return len(r.Tokens) > k }
