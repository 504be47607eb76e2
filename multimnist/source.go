package multimnist

import (
	"fmt"
	"math/rand/v2"
)

// Source serves a Dataset to training and evaluation, one batch of
// examples at a time: canvases as values in [Lo, Hi] (a model's input
// range: byte p maps to Lo + p/255·(Hi − Lo)) and their digit labels. It
// satisfies train.Source without either package knowing the other's types.
type Source[T float32 | float64] struct {
	Data   *Dataset
	Lo, Hi float64
	// Shift moves each training canvas horizontally by a random amount
	// that keeps every digit inside it (the label is unchanged): new
	// placements of the same digits, which teaches the encoder the
	// translation invariance it otherwise learns position by position.
	// It applies only when Batch is given a random source.
	Shift bool
}

// NewSource returns the source of d mapped to [lo, hi].
func NewSource[T float32 | float64](d *Dataset, lo, hi float64, shift bool) (*Source[T], error) {
	if !(lo < hi) {
		return nil, fmt.Errorf("multimnist: empty value range [%v, %v]", lo, hi)
	}
	return &Source[T]{Data: d, Lo: lo, Hi: hi, Shift: shift}, nil
}

// Len is the number of canvases.
func (s *Source[T]) Len() int { return s.Data.N }

// Batch returns canvases idx, one after the other in x, and their labels.
// With rng non-nil and Shift set, each canvas is shifted, draws from rng.
// tokens is always nil: canvases are continuous inputs.
func (s *Source[T]) Batch(idx []int, rng *rand.Rand) (x []T, tokens [][]int, labels [][]int) {
	x = make([]T, len(idx)*CanvasPixels)
	NormalizeRange(x, s.Data, idx, s.Lo, s.Hi)
	if s.Shift && rng != nil {
		shiftCanvases(x, s.Data, idx, T(s.Lo), rng)
	}
	labels = make([][]int, len(idx))
	for k, i := range idx {
		labels[k] = s.Data.Labels[i]
	}
	return x, nil, labels
}

// NormalizeRange is Normalize onto [lo, hi] instead of [−1, 1].
func NormalizeRange[T float32 | float64](dst []T, d *Dataset, indices []int, lo, hi float64) {
	if len(dst) != len(indices)*CanvasPixels {
		panic(fmt.Sprintf("multimnist: NormalizeRange: len(dst) = %d, want %d for %d canvases", len(dst), len(indices)*CanvasPixels, len(indices)))
	}
	var table [256]T
	for p := range table {
		table[p] = T(lo + float64(p)/255*(hi-lo))
	}
	for k, i := range indices {
		if i < 0 || i >= d.N {
			panic(fmt.Sprintf("multimnist: NormalizeRange: canvas index %d out of range [0, %d)", i, d.N))
		}
		out := dst[k*CanvasPixels : (k+1)*CanvasPixels]
		for p, v := range d.Canvas(i) {
			out[p] = table[v]
		}
	}
}

// shiftCanvases shifts each normalised canvas in buf horizontally by a
// uniform amount keeping its digits inside, filling with background.
func shiftCanvases[T float32 | float64](buf []T, d *Dataset, idx []int, background T, rng *rand.Rand) {
	const h, w, digit = Height, Width, 28
	row := make([]T, w)
	for k, i := range idx {
		offs := d.Offsets[i]
		lo, hi := -offs[0], w-digit-offs[len(offs)-1]
		shift := lo + rng.IntN(hi-lo+1)
		if shift == 0 {
			continue
		}
		img := buf[k*h*w : (k+1)*h*w]
		for y := 0; y < h; y++ {
			r := img[y*w : (y+1)*w]
			for x := range row {
				row[x] = background
				if sx := x - shift; sx >= 0 && sx < w {
					row[x] = r[sx]
				}
			}
			copy(r, row)
		}
	}
}
