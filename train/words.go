package train

import (
	"context"
	"strings"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/bleu"
	"github.com/lenspec/lenspec/model"
)

// EvaluateWords is Evaluate that also scores the outputs against the
// labels with corpus BLEU-4, both spelled as the model's vocabulary words
// separated by spaces (eos left out): the captioning score of word
// captioners, from the same greedy decoding.
func EvaluateWords[T ad.Float](ctx context.Context, d model.Decoder[T], src Source[T], maxSteps int) (Eval, bleu.Score, error) {
	n := src.Len()
	hyps, refs := make([]string, 0, n), make([]string, 0, n)
	spell := func(ids []int) string {
		w := make([]string, len(ids))
		for i, id := range ids {
			w[i] = d.Config().Token(id)
		}
		return strings.Join(w, " ")
	}
	ev, err := evaluate(ctx, d, src, maxSteps, nil, func(r model.Result, label []int) {
		hyps, refs = append(hyps, spell(r.Tokens)), append(refs, spell(label))
	})
	if err != nil {
		return ev, bleu.Score{}, err
	}
	score, err := bleu.Corpus(hyps, refs)
	return ev, score, err
}
