package attack

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// Continuous is the continuous input kind: a region around an image (an
// L∞ ball ∩ the input range, or a box of the user's). The searches draw
// and iterate in float32, rounding inward (spec.Region.Float32), so their
// points lie in the set read back exactly in float64; PGD's relaxation is
// the input itself.
type Continuous struct {
	spec.Region
	set32 spec.Set[[]float32] // the float32 view, its box computed once
	// scratch holds float32 buffers for Draw and Decode32, which random
	// search calls for every sample: without them its allocations cost
	// more than the conversions.
	scratch sync.Pool
}

var (
	_ Relaxable[[]float64]    = (*Continuous)(nil)
	_ batchSampler[[]float64] = (*Continuous)(nil)
)

// NewContinuous is the space of the points of set.
func NewContinuous(set spec.Region) *Continuous {
	return &Continuous{Region: set, set32: set.Float32()}
}

// Clone copies x.
func (c *Continuous) Clone(x []float64) []float64 { return slices.Clone(x) }

// Draw fills x with a uniform point of the set, as float32 values rounded
// inward (what the float32 searches evaluate).
func (c *Continuous) Draw(rng *rand.Rand, x []float64) {
	x32 := c.buffer(len(x))
	c.set32.Sample(rng, *x32)
	for i, v := range *x32 {
		x[i] = float64(v)
	}
	c.scratch.Put(x32)
}

// buffer is a float32 buffer of n values from the scratch pool.
func (c *Continuous) buffer(n int) *[]float32 {
	if b, ok := c.scratch.Get().(*[]float32); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]float32, n)
	return &b
}

// Admit projects x onto the set in float64 and checks it lies inside.
func (c *Continuous) Admit(x []float64) error {
	c.Project(x)
	if !c.Contains(x) {
		return errOutside
	}
	return nil
}

// Decode32 decodes the points with the float32 model.
func (c *Continuous) Decode32(ctx context.Context, d model.Decoder[float32], xs [][]float64, maxSteps int) ([]model.Result, error) {
	buf := c.buffer(len(xs) * c.Dim())
	defer c.scratch.Put(buf)
	batch := (*buf)[:0]
	for _, x := range xs {
		for _, v := range x {
			batch = append(batch, float32(v))
		}
	}
	return model.Decode(ctx, d, model.Batch[float32]{X: batch}, maxSteps)
}

// sampler draws points (as Draw) straight into one float32 batch and
// decodes it.
func (c *Continuous) sampler(batch int) sampleDecoder[[]float64] {
	dim := c.Dim()
	buf := make([]float32, batch*dim)
	return func(ctx context.Context, d model.Decoder[float32], rng *rand.Rand, n, maxSteps int) ([]model.Result, func(int) []float64, error) {
		for i := 0; i < n; i++ {
			c.set32.Sample(rng, buf[i*dim:(i+1)*dim])
		}
		res, err := model.Decode(ctx, d, model.Batch[float32]{X: buf[:n*dim]}, maxSteps)
		return res, func(i int) []float64 { return widen(buf[i*dim : (i+1)*dim]) }, err
	}
}

// Decode64 decodes one point with the float64 model.
func (c *Continuous) Decode64(ctx context.Context, d model.Decoder[float64], x []float64, maxSteps int) (model.Result, error) {
	res, err := model.Decode(ctx, d, model.Batch[float64]{X: x}, maxSteps)
	if err != nil {
		return model.Result{}, err
	}
	return res[0], nil
}

// Relax is the input itself: one row of Dim values per run, the first run
// from the image, the others from uniform points of the set, projected
// after every step.
func (c *Continuous) Relax(d32 model.Decoder[float32], tg Target[[]float64], rng *rand.Rand, opt PGDOptions) (*Relaxation[[]float64], error) {
	if in := d32.Input(); in.Kind != model.Continuous || in.Size() != c.Dim() {
		return nil, fmt.Errorf("attack: a set of %d values for a model reading %v %v inputs", c.Dim(), in.Kind, in.Shape)
	}
	return &Relaxation[[]float64]{
		Rows: 1, Cols: c.Dim(), Direct: true,
		Init: func(k int, w []float32) {
			if k == 0 {
				copy(w, narrow(c.Center()))
				c.set32.Project(w)
				return
			}
			c.set32.Sample(rng, w)
		},
		Project: c.set32.Project,
		Input:   func(_ *ad.Tape[float32], v *ad.Node[float32]) Relaxed { return Relaxed{X: v} },
		Candidates: func(w []float32) ([][]float64, []string) {
			return [][]float64{widen(w)}, []string{""}
		},
	}, nil
}
