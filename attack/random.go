package attack

import (
	"context"
	"math/rand/v2"

	"github.com/lenspec/lenspec/model"
)

// RandomOptions configures random search.
type RandomOptions struct {
	Samples  int // inputs drawn from the set per target
	Batch    int // inputs decoded per batch (rounded up to whole chunks of model.Decode; speed only)
	MaxSteps int // decoding step cap (≤ 0: the model's)
	// Progress, if set, is called after each batch with the samples done
	// and the longest float32 output so far.
	Progress func(done, best int)
}

// RandomSearch is the paper's random search (§5.2), on a set of any
// kind: it draws Samples points of the target's set (Space.Draw: uniform
// in an image's ball; a sentence's substitutions at ⌈δ·n⌉ uniform
// positions, drawn again until they are a text), decodes them in float32
// batches, counts every output's length and keeps the longest (the first
// found on ties), then replays it in float64.
func RandomSearch[E any](ctx context.Context, d32 model.Decoder[float32], d64 model.Decoder[float64], tg Target[E], opt RandomOptions) (Outcome[E], error) {
	maxSteps := capSteps(opt.MaxSteps, d32)
	set := tg.Set
	best := set.Clone(set.Center())
	bestLen := -1
	counts := make([]int64, maxSteps+2)
	var evals int64
	err := draws(ctx, d32, tg, opt, maxSteps, func(r model.Result, point func(int) E, i int) {
		evals++
		countLength(counts, r)
		if l := rank(r, maxSteps); l > bestLen {
			bestLen = l
			best = point(i)
		}
	})
	if err != nil {
		return Outcome[E]{}, err
	}
	out, err := Replay(ctx, d64, tg, best, maxSteps)
	if err != nil {
		return Outcome[E]{}, err
	}
	out.Found32, out.Evals, out.LengthCounts = bestLen, evals, counts
	return out, nil
}

// draws draws opt.Samples points of tg's set from its own source and
// decodes them in float32, a batch at a time, passing each result, its
// batch's points and its index among them (point(i) is valid during the
// call) to visit in the order drawn: no closure a draw. A batch
// holds whole chunks of model.Decode (model.ChunkRows): a draw is then
// decoded beside the same draws whatever opt.Batch and the cores, and
// since a float32 row's rounding depends on the rows decoded with it,
// that is what makes every result the same for any batch size.
func draws[E any](ctx context.Context, d32 model.Decoder[float32], tg Target[E], opt RandomOptions, maxSteps int, visit func(r model.Result, point func(int) E, i int)) error {
	set := tg.Set
	tokens := 0
	if x, ok := any(set.Center()).([]int); ok {
		tokens = len(x) // a token sequence's points all have its length
	}
	chunk := model.ChunkRows(d32.Input(), tokens)
	batch := (max(1, opt.Batch) + chunk - 1) / chunk * chunk
	rng := tg.rng()
	var fast sampleDecoder[E]
	if bs, ok := set.(batchSampler[E]); ok {
		fast = bs.sampler(batch)
	}
	var buf []E
	if fast == nil {
		buf = make([]E, batch)
		for i := range buf {
			buf[i] = set.Clone(set.Center())
		}
	}
	bestLen := -1
	for done := 0; done < opt.Samples; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(batch, opt.Samples-done)
		var res []model.Result
		var err error
		var point func(i int) E
		if fast != nil {
			res, point, err = fast(ctx, d32, rng, n, maxSteps)
		} else {
			for i := 0; i < n; i++ {
				set.Draw(rng, buf[i])
			}
			res, err = set.Decode32(ctx, d32, buf[:n], maxSteps)
			point = func(i int) E { return set.Clone(buf[i]) }
		}
		if err != nil {
			return err
		}
		for i, r := range res {
			visit(r, point, i)
			bestLen = max(bestLen, rank(r, maxSteps))
		}
		done += n
		if opt.Progress != nil {
			opt.Progress(done, bestLen)
		}
	}
	return nil
}

// batchSampler is a space whose random points random search draws and
// decodes in one float32 batch, as Draw then Decode32 would (the same
// points from the same draws) without building each point first: on
// images, points of float64 values cost random search a fifth of its time.
type batchSampler[E any] interface {
	// sampler returns a sampleDecoder for batches of up to batch points,
	// with a buffer of its own.
	sampler(batch int) sampleDecoder[E]
}

// sampleDecoder draws n points and decodes them with the float32 model;
// point(i) is the i-th, valid until the next call.
type sampleDecoder[E any] func(ctx context.Context, d model.Decoder[float32], rng *rand.Rand, n, maxSteps int) (res []model.Result, point func(i int) E, err error)
