package nn

import (
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
)

// Embedding maps token ids to rows of a [Vocab, Dim] table (PyTorch
// nn.Embedding).
type Embedding[T ad.Float] struct {
	Vocab, Dim int
	W          *ad.Param[T]
}

// NewEmbedding returns an embedding table named prefix.weight, initialised
// N(0, 1) as PyTorch does (zero for a nil rng).
func NewEmbedding[T ad.Float](prefix string, vocab, dim int, rng *rand.Rand) *Embedding[T] {
	e := &Embedding[T]{Vocab: vocab, Dim: dim, W: ad.NewParam[T](prefix+".weight", vocab, dim)}
	for i := range e.W.W.Data {
		if rng == nil {
			break
		}
		e.W.W.Data[i] = T(rng.NormFloat64())
	}
	return e
}

// Forward looks up ids, giving [len(ids), Dim].
func (e *Embedding[T]) Forward(tp *ad.Tape[T], ids []int) *ad.Node[T] {
	return tp.Gather(tp.Param(e.W), ids)
}

// Params lists the layer's parameters.
func (e *Embedding[T]) Params() []*ad.Param[T] { return []*ad.Param[T]{e.W} }
