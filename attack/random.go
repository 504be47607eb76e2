package attack

import (
	"context"

	"github.com/lenspec/lenspec/model"
)

// RandomOptions configures random search.
type RandomOptions struct {
	Samples  int // inputs drawn uniformly from the set per target
	Batch    int // inputs decoded per batch
	MaxSteps int // decoding step cap (≤ 0: the model's)
	// Progress, if set, is called after each batch with the samples done
	// and the longest float32 output so far.
	Progress func(done, best int)
}

// RandomSearch draws Samples uniform points of the target's set (paper
// §5.2), decodes them in float32 batches and keeps the longest output (the
// first found on ties), then replays it in float64.
func RandomSearch(ctx context.Context, d32 model.Decoder[float32], d64 model.Decoder[float64], tg Target, opt RandomOptions) (Outcome, error) {
	maxSteps := opt.MaxSteps
	if maxSteps <= 0 {
		maxSteps = d32.MaxSteps()
	}
	batch := max(1, opt.Batch)
	rng := tg.rng()
	set := tg.Set.Float32()
	size := tg.Set.Dim()
	buf := make([]float32, batch*size)
	best := narrow(tg.Set.Center())
	bestLen := -1
	counts := make([]int64, maxSteps+2)
	var evals int64
	for done := 0; done < opt.Samples; {
		if err := ctx.Err(); err != nil {
			return Outcome{}, err
		}
		n := min(batch, opt.Samples-done)
		for i := 0; i < n; i++ {
			set.Sample(rng, buf[i*size:(i+1)*size])
		}
		res, err := model.Decode(ctx, d32, model.Batch[float32]{X: buf[:n*size]}, maxSteps)
		if err != nil {
			return Outcome{}, err
		}
		for i, r := range res {
			l := rank(r, maxSteps)
			if r.Stopped {
				counts[l]++
			} else {
				counts[len(counts)-1]++
			}
			if l > bestLen {
				bestLen = l
				copy(best, buf[i*size:(i+1)*size])
			}
		}
		evals += int64(n)
		done += n
		if opt.Progress != nil {
			opt.Progress(done, bestLen)
		}
	}
	out, err := Replay(ctx, d64, tg, widen(best), maxSteps)
	if err != nil {
		return Outcome{}, err
	}
	out.Found32, out.Evals, out.LengthCounts = bestLen, evals, counts
	return out, nil
}

func narrow(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}
