package attack

import (
	"context"
	"math/rand/v2"

	"github.com/lenspec/lenspec/spec"
)

// RandomOptions configures random search.
type RandomOptions struct {
	Samples  int // inputs drawn uniformly from the ball per target
	Batch    int // inputs decoded per batch
	MaxSteps int // decoding step cap (≤ 0: the model's)
	Seed     uint64
	// Progress, if set, is called after each batch with the samples done
	// and the longest float32 output so far.
	Progress func(done, best int)
}

// RandomSearch draws Samples uniform points of the target's ball (paper
// §5.2), decodes them in float32 batches and keeps the longest output (the
// first found on ties), then replays it in float64.
func RandomSearch(ctx context.Context, m Model[float32], m64 Model[float64], tg Target, opt RandomOptions) (Outcome, error) {
	maxSteps := opt.MaxSteps
	if maxSteps <= 0 {
		maxSteps = m.MaxSteps()
	}
	batch := max(1, opt.Batch)
	rng := rand.New(rand.NewPCG(opt.Seed, 0x72616e64))
	size := m.InputSize()
	buf := make([]float32, batch*size)
	best := make([]float32, size)
	copy32(best, tg.Spec.Ball.Center)
	bestLen := -1
	counts := make([]int64, maxSteps+2)
	var evals int64
	for done := 0; done < opt.Samples; {
		if err := ctx.Err(); err != nil {
			return Outcome{}, err
		}
		n := min(batch, opt.Samples-done)
		for i := 0; i < n; i++ {
			spec.Sample(tg.Spec.Ball, rng, buf[i*size:(i+1)*size])
		}
		res, err := m.Decode(ctx, buf[:n*size], n, maxSteps)
		if err != nil {
			return Outcome{}, err
		}
		for i, r := range res {
			l := len(r.Tokens)
			if !r.Stopped {
				counts[len(counts)-1]++
				l = maxSteps + 1 // longer than any stopped output
			} else {
				counts[l]++
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
	out, err := replay(ctx, m64, tg, widen(best), maxSteps)
	if err != nil {
		return Outcome{}, err
	}
	out.Found32, out.Evals, out.LengthCounts = bestLen, evals, counts
	return out, nil
}

func copy32(dst []float32, src []float64) {
	for i, v := range src {
		dst[i] = float32(v)
	}
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}
