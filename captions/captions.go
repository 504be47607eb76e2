// Package captions generates lenspec's word-captioning data set, the
// stand-in for MSCOCO in the paper's Show-and-Tell experiment ("Knowing
// When to Stop", CVPR 2019, §5.1–5.2): grayscale canvases holding one to
// four MNIST digits and Fashion-MNIST articles of clothing, each captioned
// in English by a small grammar, "a sneaker to the left of a seven and a
// small bag", with caption lengths from 2 to 20 words skewed to the short
// end as COCO's are.
//
// # Canvas
//
// A canvas is Height×Width = 56×112 pixels: two rows of four 28×28 cells.
// Each item occupies one cell: an MNIST or Fashion-MNIST image (28×28) at
// full size filling the cell, or "small", averaged 2×2 down to 14×14 and
// placed at an offset of 0..14 pixels in each direction inside the cell.
// Cells never overlap, so items never do.
//
// # Captions
//
// Items are read column by column, left to right, the top one first within
// a column. Each is a noun phrase ("a"/"an", "small" if it is, and its
// noun: a digit spelled out, or top, trouser, pullover, dress, coat,
// sandal, shirt, sneaker, bag, ankle boot); consecutive items are joined by
// their relation on the canvas: "above" (same column), "to the left of"
// (neighbouring columns) or "and" (columns further apart). The caption is
// thus a function of the canvas, which is what lets exact-caption accuracy
// mean anything, and Parse reads every caption back into its items and
// relations. docs/models.md gives the grammar, the vocabulary and the
// length histogram.
//
// # Construction
//
// Each canvas is drawn independently from one random source: the number of
// items k from Options.Items; k distinct cells uniformly; for each item, an
// MNIST digit or a Fashion-MNIST article with equal probability, its image
// uniformly from that split, small with probability Options.Small (and then
// its offset); a canvas whose caption is longer than Options.MaxTokens is
// drawn again, as the paper's training captions are within 20 words.
// Randomness comes only from math/rand/v2's PCG seeded with the caller's
// seed and a fixed stream constant, so a seed determines every byte of a
// data set on every platform.
package captions

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/lenspec/lenspec/mnist"
)

// Canvas geometry.
const (
	Height, Width = 56, 112
	// CanvasPixels is the number of bytes of one canvas.
	CanvasPixels = Height * Width
	// Cell is the side of a cell; the canvas has Rows×Cols cells.
	Cell       = 28
	Rows, Cols = Height / Cell, Width / Cell
	// SmallSide is a small item's side.
	SmallSide = Cell / 2
	// MaxItems is the largest number of items on a canvas.
	MaxItems = 4
	// MaxTokens is the paper's training cap on caption length.
	MaxTokens = 20
)

// Split sizes, as Multi-MNIST's.
const (
	DefaultTrain = 50000
	DefaultTest  = 10000
)

// pcgStream is the PCG stream constant used with every seed: the bytes of
// "captions". Changing it changes every generated data set.
const pcgStream = 0x63617074696f6e73

// Options are the distribution canvases are drawn from.
type Options struct {
	// Items[k−1] is the relative weight of canvases with k items.
	Items [MaxItems]float64
	// Small is the probability that an item is drawn small.
	Small float64
	// MaxTokens caps caption length: longer captions are drawn again.
	MaxTokens int
}

// Skewed is the default distribution: most captions short, as COCO's
// (mean 5.9 words, 67 % at most 8; docs/models.md has the histogram).
func Skewed() Options {
	return Options{Items: [MaxItems]float64{0.45, 0.3, 0.17, 0.08}, Small: 0.25, MaxTokens: MaxTokens}
}

// Flat is the distribution without the bias to short captions: canvases
// with more items are drawn more often, so caption lengths spread nearly
// evenly over 2–20 words (docs/models.md).
func Flat() Options {
	return Options{Items: [MaxItems]float64{0.1, 0.2, 0.3, 0.4}, Small: 0.25, MaxTokens: MaxTokens}
}

// Validate checks the options describe a distribution Generate can draw
// from in bounded time.
func (o Options) Validate() error {
	var errs []error
	total := 0.0
	most := 0
	for k, w := range o.Items {
		if !(w >= 0) || math.IsInf(w, 0) {
			errs = append(errs, fmt.Errorf("item weight %v for %d items must be finite and non-negative", w, k+1))
		}
		if w > 0 {
			total += w
			most = k + 1
		}
	}
	if !(total > 0) {
		errs = append(errs, errors.New("no item count has a positive weight"))
	}
	if !(o.Small >= 0 && o.Small <= 1) {
		errs = append(errs, fmt.Errorf("small-item probability %v must be in [0, 1]", o.Small))
	}
	// The shortest caption of k items: k two-word phrases joined by "above".
	if shortest := 3*most - 1; o.MaxTokens < shortest {
		errs = append(errs, fmt.Errorf("caption cap %d is below %d, the shortest caption of %d items", o.MaxTokens, shortest, most))
	}
	return errors.Join(errs...)
}

// Item is one item of a canvas.
type Item struct {
	Phrase
	// Source is the image's index in its split of MNIST or Fashion-MNIST.
	Source int
	// Row and Col are its cell; DY and DX its offset inside the cell
	// (small items only).
	Row, Col, DY, DX int
}

// Dataset is a generated set of canvases.
type Dataset struct {
	// N is the number of canvases.
	N int
	// Pixels holds N canvases of Height×Width bytes each, row-major.
	Pixels []uint8
	// Items[j] are canvas j's items in caption order.
	Items [][]Item
	// Captions[j] is canvas j's caption, Tokens[j] its token ids (no EOS).
	Captions []Caption
	Tokens   [][]int
	// Redrawn counts canvases drawn again because their caption was over
	// the cap.
	Redrawn int
}

// Canvas returns the bytes of canvas i, aliasing d.Pixels.
func (d *Dataset) Canvas(i int) []uint8 {
	return d.Pixels[i*CanvasPixels : (i+1)*CanvasPixels : (i+1)*CanvasPixels]
}

// CaptionOf is the caption of items in caption order: their phrases, and
// the relation of each to the next given by their cells.
func CaptionOf(items []Item) Caption {
	c := Caption{Phrases: make([]Phrase, len(items))}
	for i, it := range items {
		c.Phrases[i] = it.Phrase
		if i > 0 {
			c.Relations = append(c.Relations, relation(items[i-1], it))
		}
	}
	return c
}

// relation is how a caption joins item a to the next item b.
func relation(a, b Item) Relation {
	switch b.Col - a.Col {
	case 0:
		return Above
	case 1:
		return LeftOf
	}
	return And
}

// maxDraws bounds the redraws of one canvas; Validate makes a caption
// within the cap likely enough that it is never reached in practice.
const maxDraws = 10000

// Generate draws n canvases as described in the package documentation,
// deterministically from seed: digits from MNIST split digits, articles
// from Fashion-MNIST split fashion.
func Generate(digits, fashion *mnist.Set, n int, seed uint64, opt Options) (*Dataset, error) {
	for _, s := range []struct {
		name string
		set  *mnist.Set
	}{{"MNIST", digits}, {"Fashion-MNIST", fashion}} {
		if err := s.set.Validate(); err != nil {
			return nil, fmt.Errorf("captions: %s set: %w", s.name, err)
		}
		if n > 0 && s.set.N == 0 {
			return nil, fmt.Errorf("captions: %s set is empty", s.name)
		}
	}
	if n < 0 {
		return nil, fmt.Errorf("captions: negative number of canvases %d", n)
	}
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("captions: %w", err)
	}
	r := rand.New(rand.NewPCG(seed, pcgStream))
	d := &Dataset{N: n, Pixels: make([]uint8, n*CanvasPixels), Items: make([][]Item, n), Captions: make([]Caption, n), Tokens: make([][]int, n)}
	total := 0.0
	for _, w := range opt.Items {
		total += w
	}
	for j := range n {
		for draw := 0; ; draw++ {
			if draw == maxDraws {
				return nil, fmt.Errorf("captions: canvas %d: no caption within %d words in %d draws", j, opt.MaxTokens, maxDraws)
			}
			items := drawItems(r, opt, total, digits, fashion)
			c := CaptionOf(items)
			if tok := c.Tokens(); len(tok) <= opt.MaxTokens {
				d.Items[j], d.Captions[j], d.Tokens[j] = items, c, tok
				break
			}
			d.Redrawn++
		}
		paint(d.Canvas(j), d.Items[j], digits, fashion)
	}
	return d, nil
}

// drawItems draws one canvas's items in caption order.
func drawItems(r *rand.Rand, opt Options, total float64, digits, fashion *mnist.Set) []Item {
	u, k := r.Float64()*total, MaxItems
	for i, w := range opt.Items {
		if u < w {
			k = i + 1
			break
		}
		u -= w
	}
	for k > 1 && opt.Items[k-1] == 0 {
		k-- // rounding at the top end
	}
	cells := r.Perm(Rows * Cols)[:k]
	// Caption order: by column, then row. Cell c is row c/Cols, column c%Cols.
	slices.SortFunc(cells, func(a, b int) int {
		if a%Cols != b%Cols {
			return a%Cols - b%Cols
		}
		return a/Cols - b/Cols
	})
	items := make([]Item, k)
	for i, c := range cells {
		it := Item{Row: c / Cols, Col: c % Cols}
		if r.IntN(2) == 1 {
			it.Kind, it.Source = Fashion, r.IntN(fashion.N)
			it.Class = int(fashion.Labels[it.Source])
		} else {
			it.Kind, it.Source = Digit, r.IntN(digits.N)
			it.Class = int(digits.Labels[it.Source])
		}
		if r.Float64() < opt.Small {
			it.Small = true
			it.DY, it.DX = r.IntN(Cell-SmallSide+1), r.IntN(Cell-SmallSide+1)
		}
		items[i] = it
	}
	return items
}

// paint paints items onto a zero canvas.
func paint(canvas []uint8, items []Item, digits, fashion *mnist.Set) {
	for _, it := range items {
		set := digits
		if it.Kind == Fashion {
			set = fashion
		}
		img := set.Image(it.Source)
		y0, x0 := it.Row*Cell, it.Col*Cell
		if !it.Small {
			for y := range Cell {
				copy(canvas[(y0+y)*Width+x0:][:Cell], img[y*mnist.Cols:][:mnist.Cols])
			}
			continue
		}
		y0, x0 = y0+it.DY, x0+it.DX
		for y := range SmallSide {
			for x := range SmallSide {
				s := int(img[2*y*mnist.Cols+2*x]) + int(img[2*y*mnist.Cols+2*x+1]) +
					int(img[(2*y+1)*mnist.Cols+2*x]) + int(img[(2*y+1)*mnist.Cols+2*x+1])
				canvas[(y0+y)*Width+x0+x] = uint8((s + 2) / 4)
			}
		}
	}
}

// DeriveSeeds returns the seeds Build uses for the training and test
// splits: two outputs of SplitMix64 started at seed, unrelated to each
// other and to Multi-MNIST's (which mixes the seed without the stream).
func DeriveSeeds(seed uint64) (train, test uint64) {
	const gamma = 0x9e3779b97f4a7c15
	s := seed ^ pcgStream
	return splitmix64(s + gamma), splitmix64(s + gamma + gamma)
}

func splitmix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Build generates nTrain canvases from the training splits of MNIST and
// Fashion-MNIST and nTest from their test splits, with the seeds
// DeriveSeeds(seed).
func Build(digitsTrain, digitsTest, fashionTrain, fashionTest *mnist.Set, nTrain, nTest int, seed uint64, opt Options) (train, test *Dataset, err error) {
	trainSeed, testSeed := DeriveSeeds(seed)
	if train, err = Generate(digitsTrain, fashionTrain, nTrain, trainSeed, opt); err != nil {
		return nil, nil, fmt.Errorf("captions: training split: %w", err)
	}
	if test, err = Generate(digitsTest, fashionTest, nTest, testSeed, opt); err != nil {
		return nil, nil, fmt.Errorf("captions: test split: %w", err)
	}
	return train, test, nil
}

// LengthHistogram counts the data set's captions by length in words
// (index = length).
func (d *Dataset) LengthHistogram() []int {
	var h []int
	for _, t := range d.Tokens {
		for len(h) <= len(t) {
			h = append(h, 0)
		}
		h[len(t)]++
	}
	return h
}

// Source serves a Dataset to training, evaluation and experiments:
// canvases as values in [Lo, Hi] (byte p maps to Lo + p/255·(Hi − Lo)) and
// their captions' tokens. It satisfies train.Source.
type Source[T float32 | float64] struct {
	Data   *Dataset
	Lo, Hi float64
}

// NewSource returns the source of d mapped to [lo, hi].
func NewSource[T float32 | float64](d *Dataset, lo, hi float64) (*Source[T], error) {
	if !(lo < hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil, fmt.Errorf("captions: bad value range [%v, %v]", lo, hi)
	}
	return &Source[T]{Data: d, Lo: lo, Hi: hi}, nil
}

// Len is the number of canvases.
func (s *Source[T]) Len() int { return s.Data.N }

// Batch returns canvases idx one after the other in x and their captions'
// tokens. The data set has no augmentation: rng is unused. It panics on an
// index out of range, a programming error.
func (s *Source[T]) Batch(idx []int, _ *rand.Rand) (x []T, tokens [][]int, labels [][]int) {
	var table [256]T
	for p := range table {
		table[p] = T(s.Lo + float64(p)/255*(s.Hi-s.Lo))
	}
	x = make([]T, len(idx)*CanvasPixels)
	labels = make([][]int, len(idx))
	for k, i := range idx {
		out := x[k*CanvasPixels : (k+1)*CanvasPixels]
		for p, v := range s.Data.Canvas(i) {
			out[p] = table[v]
		}
		labels[k] = s.Data.Tokens[i]
	}
	return x, nil, labels
}
