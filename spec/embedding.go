package spec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// EmbeddingBall is the embedding attack's set (paper §5.2): a token
// sequence's embedding rows, n rows of Cols values in X, of which the rows
// at the Free positions may move within Radius of their original values
// (L∞) and the others stay the rows of the original tokens. Radius +Inf
// is the paper's unconstrained attack: no sentence has these embeddings,
// so what it reaches bounds what the discrete attacks can.
type EmbeddingBall struct {
	X      []float64
	Cols   int
	Free   []int
	Radius float64
	free   []bool // by row
}

var _ Set[[]float64] = (*EmbeddingBall)(nil)

// NewEmbeddingBall validates and returns the set: x holds whole rows of
// cols values, free lists distinct rows in increasing order, and radius is
// non-negative (+Inf allowed).
func NewEmbeddingBall(x []float64, cols int, free []int, radius float64) (*EmbeddingBall, error) {
	if cols < 1 || len(x) == 0 || len(x)%cols != 0 {
		return nil, fmt.Errorf("spec: %d embedding values are not whole rows of %d", len(x), cols)
	}
	if !(radius >= 0) {
		return nil, fmt.Errorf("spec: embedding radius %v must be non-negative", radius)
	}
	n := len(x) / cols
	b := &EmbeddingBall{X: x, Cols: cols, Free: slices.Clone(free), Radius: radius, free: make([]bool, n)}
	for i, p := range free {
		if p < 0 || p >= n || (i > 0 && p <= free[i-1]) {
			return nil, fmt.Errorf("spec: free rows %v are not distinct increasing rows of %d", free, n)
		}
		b.free[p] = true
	}
	return b, nil
}

// Rows is the number of rows.
func (b *EmbeddingBall) Rows() int { return len(b.free) }

// Contains reports whether y has the original rows where they are fixed,
// and finite free rows within the radius.
func (b *EmbeddingBall) Contains(y []float64) bool {
	if len(y) != len(b.X) {
		return false
	}
	for i, v := range y {
		if !b.free[i/b.Cols] {
			if v != b.X[i] {
				return false
			}
			continue
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v-b.X[i]) > b.Radius {
			return false
		}
	}
	return true
}

// Project restores the fixed rows and clamps the free ones to the radius
// in place; NaN values go to the original.
func (b *EmbeddingBall) Project(y []float64) {
	for i, v := range y {
		switch {
		case !b.free[i/b.Cols] || math.IsNaN(v):
			y[i] = b.X[i]
		case v < b.X[i]-b.Radius:
			y[i] = b.X[i] - b.Radius
		case v > b.X[i]+b.Radius:
			y[i] = b.X[i] + b.Radius
		}
	}
}

// Sample fills y with the original rows, the free ones drawn uniformly
// within the radius. An unbounded ball has no uniform distribution: with
// Radius +Inf, Sample gives the original rows.
func (b *EmbeddingBall) Sample(rng *rand.Rand, y []float64) {
	copy(y, b.X)
	if math.IsInf(b.Radius, 1) {
		return
	}
	for _, p := range b.Free {
		for i := p * b.Cols; i < (p+1)*b.Cols; i++ {
			y[i] = b.X[i] + b.Radius*(2*rng.Float64()-1)
		}
	}
	b.Project(y) // rounding may step outside by an ulp
}

// Describe names the set.
func (b *EmbeddingBall) Describe() string {
	return fmt.Sprintf("%d of %d embedding rows free within L∞ %g", len(b.Free), b.Rows(), b.Radius)
}
