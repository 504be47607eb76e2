package model

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/lenspec/lenspec/ad"
)

// Result is one greedily decoded output.
type Result struct {
	// Tokens are the emitted tokens before eos (eos itself excluded).
	Tokens []int
	// Stopped reports whether eos came within the step cap. When false,
	// Tokens holds the cap's worth of tokens and ℓ(x) ≥ len(Tokens).
	Stopped bool
	// MinMargin is the smallest gap between the largest and second largest
	// logit over the decoded steps (eos step included): how far the input is
	// from changing the path. MinRelMargin divides each gap by
	// max(1, |largest logit|); below 1e-6 it is a tie, not a result.
	MinMargin, MinRelMargin float64
}

// Length returns ℓ(x) and true when the output stopped; otherwise the number
// of tokens emitted within the cap and false (ℓ(x) is at least that).
func (r Result) Length() (int, bool) { return len(r.Tokens), r.Stopped }

// RelTieMargin is the relative top-2 logit margin below which a decoded
// step counts as a tie: float32 and float64 may then disagree.
const RelTieMargin = 1e-6

// decodeChunk bounds memory and is the unit of parallel work: images are
// decoded this many at a time.
const decodeChunk = 256

// Decode greedily decodes n images stored consecutively in x (n·InputSize
// values) with at most maxSteps steps (≤ 0: the config's MaxSteps). Ties go
// to the lowest token index.
func (m *Captioner[T]) Decode(ctx context.Context, x []T, n, maxSteps int) ([]Result, error) {
	size := m.Cfg.InputSize()
	if len(x) != n*size {
		return nil, fmt.Errorf("decode: %d input values for %d images of %d", len(x), n, size)
	}
	if maxSteps <= 0 {
		maxSteps = m.Cfg.MaxSteps
	}
	// Chunks are independent: decode them on all cores. Each chunk's result
	// does not depend on which worker ran it, so output is deterministic.
	out := make([]Result, n)
	chunks := (n + decodeChunk - 1) / decodeChunk
	workers := min(runtime.GOMAXPROCS(0), chunks)
	next := make(chan int, chunks)
	for c := 0; c < chunks; c++ {
		next <- c
	}
	close(next)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				if ctx.Err() != nil {
					return
				}
				start := c * decodeChunk
				end := min(n, start+decodeChunk)
				copy(out[start:end], m.decodeBatch(x[start*size:end*size], end-start, maxSteps))
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func (m *Captioner[T]) decodeBatch(x []T, b, maxSteps int) []Result {
	tp := ad.NewTape[T](false)
	in := m.Encode(tp, tp.Const(ad.FromSlice(x, b, m.Cfg.InputSize())))
	res := make([]Result, b)
	for i := range res {
		res[i].MinMargin, res[i].MinRelMargin = math.Inf(1), math.Inf(1)
	}
	active := b
	var h *ad.Node[T]
	ids := make([]int, b)
	v := m.Vocab()
	for t := 0; t < maxSteps && active > 0; t++ {
		var logits *ad.Node[T]
		logits, h = m.Step(tp, in, h)
		for r := range res {
			if res[r].Stopped {
				continue // finished rows keep computing (cheaper than compacting) but are ignored
			}
			y, gap, rel := Argmax(logits.Value.Data[r*v : (r+1)*v])
			res[r].MinMargin = math.Min(res[r].MinMargin, gap)
			res[r].MinRelMargin = math.Min(res[r].MinRelMargin, rel)
			ids[r] = y
			if y == m.Cfg.EOS {
				res[r].Stopped = true
				active--
				continue
			}
			res[r].Tokens = append(res[r].Tokens, y)
		}
		in = m.Embed(tp, ids)
	}
	return res
}

// Argmax returns the index of the largest value (lowest index on ties), the
// gap to the second largest and that gap relative to max(1, |largest|).
func Argmax[T ad.Float](row []T) (idx int, gap, rel float64) {
	idx = 0
	for j, v := range row {
		if v > row[idx] {
			idx = j
		}
	}
	second := math.Inf(-1)
	for j, v := range row {
		if j != idx {
			second = math.Max(second, float64(v))
		}
	}
	top := float64(row[idx])
	gap = top - second
	return idx, gap, gap / math.Max(1, math.Abs(top))
}

// Cast returns a copy of m with parameters converted to U. Converting a
// float32 model to float64 is exact, which is what replay needs.
func Cast[U, T ad.Float](m *Captioner[T]) *Captioner[U] {
	out, err := NewCaptioner[U](m.Cfg, nil)
	if err != nil {
		panic(err) // m was built from a validated config
	}
	src, dst := m.Params(), out.Params()
	for i := range src {
		for j, v := range src[i].W.Data {
			dst[i].W.Data[j] = U(v)
		}
	}
	return out
}
