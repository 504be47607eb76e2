package train

import (
	"context"
	"slices"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
)

// Eval summarises greedy decoding of a model over a data set.
type Eval struct {
	Samples int `json:"samples"`
	// SequenceAccuracy is the fraction of outputs equal to the label
	// exactly (all tokens, and stopping right after them).
	SequenceAccuracy float64 `json:"sequence_accuracy"`
	// MaxLen is the longest stopped output; Unstopped counts outputs with no
	// eos within the step cap.
	MaxLen    int `json:"max_len"`
	Unstopped int `json:"unstopped"`
	// LengthHistogram[k] counts stopped outputs of length k.
	LengthHistogram []int `json:"length_histogram"`
}

// Evaluate decodes src in chunks and compares with its labels. progress, if
// set, is called with the number of samples done.
func Evaluate[T ad.Float](ctx context.Context, d model.Decoder[T], src Source[T], maxSteps int, progress func(done int)) (Eval, error) {
	return evaluate(ctx, d, src, maxSteps, progress, nil)
}

// evaluate is Evaluate that also shows every output and its label to
// visit (if set), so that other scores come from the same decoding.
func evaluate[T ad.Float](ctx context.Context, d model.Decoder[T], src Source[T], maxSteps int, progress func(done int), visit func(r model.Result, label []int)) (Eval, error) {
	const chunk = 1000
	var ev Eval
	n, correct := src.Len(), 0
	for start := 0; start < n; start += chunk {
		idx := make([]int, min(chunk, n-start))
		for i := range idx {
			idx[i] = start + i
		}
		x, tokens, labels := src.Batch(idx, nil)
		res, err := model.Decode(ctx, d, model.Batch[T]{X: x, Tokens: tokens}, maxSteps)
		if err != nil {
			return ev, err
		}
		for i, r := range res {
			if visit != nil {
				visit(r, labels[i])
			}
			if !r.Stopped {
				ev.Unstopped++
				continue
			}
			l := len(r.Tokens)
			ev.MaxLen = max(ev.MaxLen, l)
			for len(ev.LengthHistogram) <= l {
				ev.LengthHistogram = append(ev.LengthHistogram, 0)
			}
			ev.LengthHistogram[l]++
			if slices.Equal(r.Tokens, labels[i]) {
				correct++
			}
		}
		if progress != nil {
			progress(start + len(idx))
		}
	}
	ev.Samples = n
	if n > 0 {
		ev.SequenceAccuracy = float64(correct) / float64(n)
	}
	return ev, nil
}
