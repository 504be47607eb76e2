// Package multimnist generates the Multi-MNIST data set of "Knowing When to
// Stop: Evaluation and Verification of Conformity to Output-size
// Specifications" (CVPR 2019): grayscale canvases of Height×Width pixels,
// each holding one to three MNIST digits side by side, labelled with the digit
// sequence read left to right. The paper uses 50,000 training canvases drawn
// from MNIST train and 10,000 test canvases drawn from MNIST test.
//
// # Construction
//
// Each canvas is drawn independently from one random source:
//
//  1. k, the number of digits, uniformly from {1, 2, 3};
//  2. k source images uniformly, with replacement, from the MNIST split;
//  3. k integers q_1..q_k, each uniformly from [0, Width-28k], sorted into
//     non-decreasing order, and offsets x_i = q_i + 28(i-1).
//
// Digit i is copied unchanged into columns x_i..x_i+27 (all 28 rows) of a
// zero canvas. Because x_{i+1}-x_i = q_{i+1}-q_i+28 >= 28 and
// x_k <= Width-28, the digits never overlap and lie fully inside the canvas,
// and every such placement can occur, each from exactly one sorted q
// sequence. Sorting independent draws makes this nearly, not exactly,
// uniform over placements: one whose q values are all distinct has
// probability k!/(Width-28k+1)^k, one with tied q values (some digits exactly
// touching) proportionally less. The label of the canvas is the labels of the
// sources in order, which is left to right.
//
// Randomness comes only from math/rand/v2's PCG seeded with the caller's seed
// and a fixed stream constant, so a seed determines every byte of a data set
// on every platform.
//
// # Normalisation
//
// Models see a pixel byte p as p/127.5 - 1, which maps the background 0 to -1
// and full ink 255 to 1.
package multimnist

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/lenspec/lenspec/mnist"
)

// Canvas geometry.
const (
	Height = 28
	Width  = 112
	// CanvasPixels is the number of bytes of one canvas.
	CanvasPixels = Height * Width
	// MaxDigits is the largest number of digits on a canvas.
	MaxDigits = 3
)

// The paper's split sizes.
const (
	DefaultTrain = 50000
	DefaultTest  = 10000
)

// pcgStream is the PCG stream (increment) constant used with every seed:
// the bytes of "multimni". Changing it changes every generated data set.
const pcgStream = 0x6d756c74696d6e69

// Dataset is a generated set of canvases.
type Dataset struct {
	// N is the number of canvases.
	N int
	// Pixels holds N canvases of Height×Width bytes each, row-major.
	Pixels []uint8
	// Labels[j] is the digit sequence of canvas j, left to right.
	Labels [][]int
	// Sources[j][i] is the index in the MNIST split of the i-th digit (from
	// the left) of canvas j.
	Sources [][]int
	// Offsets[j][i] is the x coordinate of the left column of that digit.
	Offsets [][]int
}

// Canvas returns the Height×Width bytes of canvas i, aliasing d.Pixels.
func (d *Dataset) Canvas(i int) []uint8 {
	return d.Pixels[i*CanvasPixels : (i+1)*CanvasPixels : (i+1)*CanvasPixels]
}

// Generate draws n canvases from src as described in the package
// documentation, deterministically from seed.
func Generate(src *mnist.Set, n int, seed uint64) (*Dataset, error) {
	if err := src.Validate(); err != nil {
		return nil, fmt.Errorf("multimnist: source set: %w", err)
	}
	if n < 0 {
		return nil, fmt.Errorf("multimnist: negative number of canvases %d", n)
	}
	if n > 0 && src.N == 0 {
		return nil, errors.New("multimnist: source set is empty")
	}
	r := rand.New(rand.NewPCG(seed, pcgStream))
	d := &Dataset{
		N:       n,
		Pixels:  make([]uint8, n*CanvasPixels),
		Labels:  make([][]int, n),
		Sources: make([][]int, n),
		Offsets: make([][]int, n),
	}
	// The per-canvas slices share three backing arrays, which keeps a
	// 50,000-canvas set at a handful of allocations.
	var labels, sources, offsets []int
	for j := range n {
		k := 1 + r.IntN(MaxDigits)
		if len(labels) < k {
			labels = make([]int, MaxDigits*min(n-j, 4096))
			sources = make([]int, len(labels))
			offsets = make([]int, len(labels))
		}
		lab, srcs, offs := labels[:k:k], sources[:k:k], offsets[:k:k]
		labels, sources, offsets = labels[k:], sources[k:], offsets[k:]

		for i := range srcs {
			srcs[i] = r.IntN(src.N)
		}
		for i := range offs {
			offs[i] = r.IntN(Width - mnist.Cols*k + 1)
		}
		slices.Sort(offs)
		canvas := d.Canvas(j)
		for i := range offs {
			offs[i] += mnist.Cols * i
			lab[i] = int(src.Labels[srcs[i]])
			img := src.Image(srcs[i])
			for y := range mnist.Rows {
				copy(canvas[y*Width+offs[i]:][:mnist.Cols], img[y*mnist.Cols:][:mnist.Cols])
			}
		}
		d.Labels[j], d.Sources[j], d.Offsets[j] = lab, srcs, offs
	}
	return d, nil
}

// DeriveSeeds returns the seeds Build uses for the training and test splits.
// They are two outputs of the SplitMix64 generator started at seed, so the
// splits are drawn from unrelated random sequences and each split can be
// regenerated alone with Generate.
func DeriveSeeds(seed uint64) (train, test uint64) {
	const gamma = 0x9e3779b97f4a7c15 // SplitMix64's increment
	train = splitmix64(seed + gamma)
	test = splitmix64(seed + gamma + gamma)
	return train, test
}

// splitmix64 is the output function of SplitMix64 (Steele, Lea and Flood,
// 2014), a bijective mixer of 64-bit values.
func splitmix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Build generates nTrain canvases from the MNIST training split and nTest
// canvases from the MNIST test split, using the seeds DeriveSeeds(seed).
// The paper's sizes are DefaultTrain and DefaultTest.
func Build(train, test *mnist.Set, nTrain, nTest int, seed uint64) (trainDS, testDS *Dataset, err error) {
	trainSeed, testSeed := DeriveSeeds(seed)
	trainDS, err = Generate(train, nTrain, trainSeed)
	if err != nil {
		return nil, nil, fmt.Errorf("multimnist: training split: %w", err)
	}
	testDS, err = Generate(test, nTest, testSeed)
	if err != nil {
		return nil, nil, fmt.Errorf("multimnist: test split: %w", err)
	}
	return trainDS, testDS, nil
}

// Normalize fills dst with the normalised pixels (p/127.5 − 1, in
// [−1, 1]) of the canvases indices of d, in order, each row-major with one
// channel. As with gonum's dimension checks, it panics if len(dst) is not
// len(indices)*CanvasPixels or an index is out of range: either is a
// programming error, not bad input.
func Normalize[T float32 | float64](dst []T, d *Dataset, indices []int) {
	NormalizeRange(dst, d, indices, -1, 1)
}
