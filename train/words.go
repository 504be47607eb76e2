package train

import (
	"context"
	"strings"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/bleu"
	"github.com/lenspec/lenspec/model"
)

// WordsBLEU decodes src greedily and scores the outputs against the
// labels with corpus BLEU-4, both spelled as the model's vocabulary words
// separated by spaces (eos left out): the captioning score of word
// captioners, beside Evaluate's exact-sequence accuracy.
func WordsBLEU[T ad.Float](ctx context.Context, d model.Decoder[T], src Source[T], maxSteps int) (bleu.Score, error) {
	const chunk = 1000
	n := src.Len()
	hyps, refs := make([]string, 0, n), make([]string, 0, n)
	spell := func(ids []int) string {
		w := make([]string, len(ids))
		for i, id := range ids {
			w[i] = d.Config().Token(id)
		}
		return strings.Join(w, " ")
	}
	for start := 0; start < n; start += chunk {
		idx := make([]int, min(chunk, n-start))
		for i := range idx {
			idx[i] = start + i
		}
		x, tokens, labels := src.Batch(idx, nil)
		res, err := model.Decode(ctx, d, model.Batch[T]{X: x, Tokens: tokens}, maxSteps)
		if err != nil {
			return bleu.Score{}, err
		}
		for i, r := range res {
			hyps, refs = append(hyps, spell(r.Tokens)), append(refs, spell(labels[i]))
		}
	}
	return bleu.Corpus(hyps, refs)
}
