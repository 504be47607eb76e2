package train

import (
	"math/rand/v2"
	"slices"
)

// TokenPairs is a Source of token sequence pairs (a translator's source
// and target sides, ids from its tokenizer) that batches sequences of
// similar length together (Bucketer): within pools of bucketPool batches
// drawn at random, examples are sorted by length and cut into batches, and
// the batches are shuffled, so a batch pads little and the order still
// varies from epoch to epoch.
type TokenPairs struct {
	src, tgt [][]int
}

// bucketPool is how many batches' worth of examples are sorted together:
// enough for batches of near-equal lengths, few enough that an epoch's
// batches still mix the whole corpus.
const bucketPool = 50

// NewTokenPairs returns the source of pairs (src[i], tgt[i]); the target
// sequences exclude the end of sequence, which the loss adds.
func NewTokenPairs(src, tgt [][]int) *TokenPairs {
	if len(src) != len(tgt) {
		panic("train: NewTokenPairs with sides of different lengths")
	}
	return &TokenPairs{src: src, tgt: tgt}
}

// Len is the number of pairs.
func (p *TokenPairs) Len() int { return len(p.src) }

// Batch returns pairs idx: sources as tokens, targets as labels.
func (p *TokenPairs) Batch(idx []int, _ *rand.Rand) (x []float32, tokens, labels [][]int) {
	tokens, labels = make([][]int, len(idx)), make([][]int, len(idx))
	for k, i := range idx {
		tokens[k], labels[k] = p.src[i], p.tgt[i]
	}
	return nil, tokens, labels
}

// Batches returns one epoch's batches of size pairs, bucketed by length.
func (p *TokenPairs) Batches(size int, rng *rand.Rand) [][]int {
	perm := rng.Perm(p.Len())
	n := p.Len() / size
	perm = perm[:n*size]
	for lo := 0; lo < len(perm); lo += bucketPool * size {
		pool := perm[lo:min(len(perm), lo+bucketPool*size)]
		slices.SortStableFunc(pool, func(a, b int) int {
			if d := len(p.src[a]) - len(p.src[b]); d != 0 {
				return d
			}
			return len(p.tgt[a]) - len(p.tgt[b])
		})
	}
	out := make([][]int, n)
	for i := range out {
		out[i] = perm[i*size : (i+1)*size]
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
