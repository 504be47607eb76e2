package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
)

// Sinusoidal is the fixed position code of "Attention is all you need"
// (Vaswani et al. 2017, §3.5):
//
//	PE[pos, 2i] = sin(pos / 10000^(2i/Dim)),  PE[pos, 2i+1] = cos(pos / 10000^(2i/Dim)).
//
// It has no parameters and no length limit.
type Sinusoidal[T ad.Float] struct{ Dim int }

// Table returns PE for positions start … start+n−1, [n, Dim].
func (p Sinusoidal[T]) Table(start, n int) *ad.Tensor[T] {
	pe := ad.New[T](n, p.Dim)
	for s := 0; s < n; s++ {
		pos := float64(start + s)
		for j := 0; j < p.Dim; j++ {
			a := pos / math.Pow(10000, float64(j/2*2)/float64(p.Dim))
			if j%2 == 0 {
				pe.Data[s*p.Dim+j] = T(math.Sin(a))
			} else {
				pe.Data[s*p.Dim+j] = T(math.Cos(a))
			}
		}
	}
	return pe
}

// Add returns x [T, B, Dim] (time-major) plus the codes of positions
// start … start+T−1: start is the number of steps before x, 0 for a whole
// sequence, t for the step after t cached ones.
func (p Sinusoidal[T]) Add(tp *ad.Tape[T], x *ad.Node[T], start int) *ad.Node[T] {
	t, b := x.Value.Shape[0], x.Value.Shape[1]
	if len(x.Value.Shape) != 3 || x.Value.Shape[2] != p.Dim {
		panic(fmt.Sprintf("nn.Sinusoidal.Add: input %v for width %d", x.Value.Shape, p.Dim))
	}
	pe := p.Table(start, t)
	full := tp.Empty(x.Value.Shape...)
	for s := 0; s < t; s++ {
		for i := 0; i < b; i++ {
			copy(full.Data[(s*b+i)*p.Dim:(s*b+i+1)*p.Dim], pe.Data[s*p.Dim:(s+1)*p.Dim])
		}
	}
	return tp.Add(x, tp.Const(full))
}

// LearnedPositions is a trained position code: an embedding of positions
// (tensor prefix.weight, [MaxLen, Dim]), added to the inputs.
type LearnedPositions[T ad.Float] struct{ Emb *Embedding[T] }

// NewLearnedPositions returns codes for maxLen positions named prefix,
// initialised N(0, 1) as nn.Embedding (zero for a nil rng).
func NewLearnedPositions[T ad.Float](prefix string, maxLen, dim int, rng *rand.Rand) *LearnedPositions[T] {
	return &LearnedPositions[T]{Emb: NewEmbedding[T](prefix, maxLen, dim, rng)}
}

// Add returns x [T, B, Dim] (time-major) plus the codes of positions
// start … start+T−1, which must be below MaxLen.
func (p *LearnedPositions[T]) Add(tp *ad.Tape[T], x *ad.Node[T], start int) *ad.Node[T] {
	t, b := x.Value.Shape[0], x.Value.Shape[1]
	ids := make([]int, 0, t*b)
	for s := 0; s < t; s++ {
		for i := 0; i < b; i++ {
			ids = append(ids, start+s)
		}
	}
	return tp.Add(x, tp.Reshape(p.Emb.Forward(tp, ids), x.Value.Shape...))
}

// Params lists the codes' parameters.
func (p *LearnedPositions[T]) Params() []*ad.Param[T] { return p.Emb.Params() }
