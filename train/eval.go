package train

import (
	"context"
	"slices"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
)

// Eval summarises greedy decoding of a model over a dataset.
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

// Evaluate decodes ds in chunks and compares with its labels. progress, if
// set, is called with the number of samples done.
func Evaluate[T float32 | float64](ctx context.Context, m *model.Captioner[T], ds *multimnist.Dataset, maxSteps int, progress func(done int)) (Eval, error) {
	const chunk = 1000
	size := m.Cfg.InputSize()
	buf := make([]T, chunk*size)
	var ev Eval
	correct := 0
	for start := 0; start < ds.N; start += chunk {
		n := min(chunk, ds.N-start)
		idx := make([]int, n)
		for i := range idx {
			idx[i] = start + i
		}
		multimnist.Normalize(buf[:n*size], ds, idx)
		res, err := m.Decode(ctx, buf[:n*size], n, maxSteps)
		if err != nil {
			return ev, err
		}
		for i, r := range res {
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
			if slices.Equal(r.Tokens, ds.Labels[start+i]) {
				correct++
			}
		}
		if progress != nil {
			progress(start + n)
		}
	}
	ev.Samples = ds.N
	if ds.N > 0 {
		ev.SequenceAccuracy = float64(correct) / float64(ds.N)
	}
	return ev, nil
}
