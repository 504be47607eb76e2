package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

// argmaxSkipNaive is the two-pass reference argmaxSkip is checked
// against: the largest by a first pass (lowest index on ties), the second
// largest by math.Max in float64 over the others.
func argmaxSkipNaive[T ad.Float](row []T, skip int) (idx int, gap, rel float64) {
	idx = -1
	for j, v := range row {
		if j != skip && (idx < 0 || v > row[idx]) {
			idx = j
		}
	}
	second := math.Inf(-1)
	for j, v := range row {
		if j != idx && j != skip {
			second = math.Max(second, float64(v))
		}
	}
	top := float64(row[idx])
	gap = top - second
	return idx, gap, gap / math.Max(1, math.Abs(top))
}

// same reports whether a and b are equal, NaN equal to NaN.
func same(a, b float64) bool { return a == b || a != a && b != b }

// TestArgmaxSkipMatchesNaive: the one-pass argmax gives the reference's
// index, gap and relative gap bit for bit on random rows full of ties,
// infinities, signed zeros and NaNs, with and without a skipped entry.
func TestArgmaxSkipMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	specials := []float64{0, math.Copysign(0, -1), 1, -1, math.Inf(1), math.Inf(-1), math.NaN(), 3.5}
	check := func(row []float32, skip int) {
		t.Helper()
		i, g, rel := argmaxSkip(row, skip)
		ni, ng, nrel := argmaxSkipNaive(row, skip)
		if i != ni || !same(g, ng) || !same(rel, nrel) {
			t.Fatalf("row %v skip %d: (%d, %v, %v), want (%d, %v, %v)", row, skip, i, g, rel, ni, ng, nrel)
		}
		row64 := make([]float64, len(row))
		for k, v := range row {
			row64[k] = float64(v)
		}
		i, g, rel = argmaxSkip(row64, skip)
		ni, ng, nrel = argmaxSkipNaive(row64, skip)
		if i != ni || !same(g, ng) || !same(rel, nrel) {
			t.Fatalf("float64 row %v skip %d: (%d, %v, %v), want (%d, %v, %v)", row64, skip, i, g, rel, ni, ng, nrel)
		}
	}
	for n := 1; n <= 6; n++ {
		for trial := 0; trial < 20000; trial++ {
			row := make([]float32, n)
			for k := range row {
				if r.IntN(3) == 0 {
					row[k] = float32(specials[r.IntN(len(specials))])
				} else {
					row[k] = float32(r.IntN(5) - 2) // many ties
				}
			}
			skip := -1
			if n > 1 && r.IntN(2) == 0 {
				skip = r.IntN(n)
			}
			check(row, skip)
		}
	}
	row := make([]float32, 8000)
	for k := range row {
		row[k] = float32(r.NormFloat64())
	}
	check(row, -1)
	check(row, 17)
}

// BenchmarkArgmaxSkip times one row of the translator's vocabulary.
func BenchmarkArgmaxSkip(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	row := make([]float32, 8000)
	for i := range row {
		row[i] = float32(r.NormFloat64())
	}
	b.ResetTimer()
	for range b.N {
		argmaxSkip(row, 3)
	}
}
