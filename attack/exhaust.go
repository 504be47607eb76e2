package attack

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
)

// ExhaustOptions adjusts ExhaustSubstitutions.
type ExhaustOptions struct {
	// MaxLen, if ≥ 0, asks only for the verdict on ℓ ≤ MaxLen (K̂): each
	// candidate is decoded for at most MaxLen+1 steps and the search stops
	// at the first candidate whose output is longer. Negative: bound mode,
	// the longest output over every candidate.
	MaxLen int
	// MaxSteps is the step cap of bound mode (≤ 0: the decoder's). An
	// output that reaches it without eos is at least that long.
	MaxSteps int
}

// Exhaustion is the outcome of ExhaustSubstitutions.
type Exhaustion struct {
	// Position and Token are the witness's substitution, source position
	// and new token id (Position −1: there was no candidate, or in
	// verdict mode none exceeded K̂); Witness is the substituted source
	// and Output its output tokens (eos excluded).
	Position, Token int
	Witness, Output []int
	// Length is len(Output): in bound mode the longest output over all
	// candidates; in verdict mode the witness's, MaxLen+1 (its decode
	// stopped there).
	Length int
	// Stopped reports whether the witness's output ended with eos within
	// the cap; when false, Length is the cap and the true ℓ ≥ Length.
	Stopped bool
	// Vulnerable is verdict mode's answer: some candidate's output is
	// longer than MaxLen. Robust is the opposite, proved by decoding every
	// candidate (the set is finite, so the verdict is exact). Neither is
	// set when a decode overflowed (NonFinite) short of the cap, which
	// leaves that candidate's length unknown.
	Vulnerable, Robust bool
	// Candidates is the number of one-substitution neighbours: every
	// position times every token but the specials and the original one.
	// Decoded of them were decoded (whole batches: the candidates after a
	// witness in its batch count); Pruned were not, each for an exact
	// reason (a duplicate encoder input, or an outcome already settled).
	Candidates, Decoded, Pruned int
	// NonFinite counts candidates whose logits overflowed before eos and
	// the cap: their length is only bounded below (model.Result).
	NonFinite int
	// Seconds is the search's wall time.
	Seconds float64
}

// exhaustChunks is how many of Decode's chunks one call decodes per core:
// enough that the cores stay busy while chunks finish unevenly, few
// enough that verdict mode stops soon after the first long output.
const exhaustChunks = 2

// ExhaustSubstitutions decodes every source that differs from x in
// exactly one position, the new token any of d's source tokens but the
// specials, and returns the longest output with its substitution (ties:
// the lowest position, then the lowest token id) or, with a K̂
// (ExhaustOptions.MaxLen ≥ 0), the first candidate in that order whose
// output is longer than K̂. Candidates are decoded in batches through
// model.Decode, in a fixed order and batch size, so the outcome does not
// depend on the cores. What is not decoded is pruned exactly:
//   - a token whose source embedding equals, bit for bit, the original
//     token's or a lower token's gives the same encoder input as a
//     candidate already counted, so it cannot be longer nor win a tie;
//   - bound mode stops once an output reaches the step cap without eos:
//     no later candidate can be longer, and ties go to the earlier one;
//   - verdict mode stops at its first witness.
//
// The biLSTM encoder's states change at every position with one token,
// so no encoder work is shared between candidates.
func ExhaustSubstitutions[T ad.Float](ctx context.Context, d model.Decoder[T], x []int, opt ExhaustOptions) (Exhaustion, error) {
	start := time.Now()
	spec := d.Input()
	if spec.Kind != model.Tokens {
		return Exhaustion{}, fmt.Errorf("exhaust: the %s model reads %v inputs, not token sequences", d.Config().Architecture, spec.Kind)
	}
	if len(x) == 0 {
		return Exhaustion{}, fmt.Errorf("exhaust: empty source")
	}
	if spec.MaxLen > 0 && len(x) > spec.MaxLen {
		return Exhaustion{}, fmt.Errorf("exhaust: the source has %d tokens, more than the model's %d", len(x), spec.MaxLen)
	}
	steps := opt.MaxSteps
	if steps <= 0 {
		steps = d.MaxSteps()
	}
	verdict := opt.MaxLen >= 0
	if verdict {
		steps = opt.MaxLen + 1
	}
	if steps > model.MaxStepCap {
		return Exhaustion{}, fmt.Errorf("exhaust: step cap %d exceeds the supported %d", steps, model.MaxStepCap)
	}
	all, tokens := substitutes(d, spec, x)
	out := Exhaustion{Position: -1, Token: -1}
	type cand struct{ pos, tok int }
	var todo []cand
	for p, orig := range x {
		for _, t := range tokens[orig] {
			todo = append(todo, cand{p, t})
		}
		out.Candidates += len(all) // every non-special token …
		if !slices.Contains(spec.Special, orig) {
			out.Candidates-- // … but the original
		}
	}
	out.Pruned = out.Candidates - len(todo)
	batch := model.ChunkRows(spec, len(x)) * exhaustChunks * runtime.GOMAXPROCS(0)
	for lo := 0; lo < len(todo); lo += batch {
		hi := min(len(todo), lo+batch)
		b := model.Batch[T]{Tokens: make([][]int, hi-lo)}
		for i, c := range todo[lo:hi] {
			src := slices.Clone(x)
			src[c.pos] = c.tok
			b.Tokens[i] = src
		}
		res, err := model.Decode(ctx, d, b, steps)
		if err != nil {
			return Exhaustion{}, fmt.Errorf("exhaust: %w", err)
		}
		out.Decoded += hi - lo
		done := false
		for i, r := range res {
			if r.NonFinite {
				out.NonFinite++
			}
			if len(r.Tokens) > out.Length || out.Position < 0 && !verdict {
				if verdict && len(r.Tokens) < steps {
					continue // a NonFinite short of the cap is no witness
				}
				out.Length, out.Output, out.Stopped = len(r.Tokens), r.Tokens, r.Stopped
				out.Position, out.Token, out.Witness = todo[lo+i].pos, todo[lo+i].tok, b.Tokens[i]
				if len(r.Tokens) >= steps {
					done = true // verdict: a witness; bound: nothing is longer
					break
				}
			}
		}
		if done {
			out.Pruned += len(todo) - hi
			break
		}
	}
	if verdict {
		out.Vulnerable = out.Position >= 0
		out.Robust = !out.Vulnerable && out.NonFinite == 0
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// sourceEmbedder is a model whose source tokens go through one embedding
// table (the translator).
type sourceEmbedder[T ad.Float] interface {
	SourceEmbedding() *ad.Param[T]
}

// substitutes returns every token but the specials, ascending, and for
// each token o of x the tokens a substitution for o may bring in: those
// but o, without the ones whose embedding row equals the row of o or of
// a lower token kept (their encoder input is one already decoded).
func substitutes[T ad.Float](d model.Decoder[T], spec model.InputSpec, x []int) ([]int, map[int][]int) {
	all := make([]int, 0, spec.Vocab)
	for t := range spec.Vocab {
		if !slices.Contains(spec.Special, t) {
			all = append(all, t)
		}
	}
	// rep[t] is the lowest token whose embedding row equals t's.
	rep := make([]int, spec.Vocab)
	for t := range rep {
		rep[t] = t
	}
	if e, ok := d.(sourceEmbedder[T]); ok {
		w := e.SourceEmbedding().W
		dim := len(w.Data) / spec.Vocab
		first := map[string]int{}
		for t := range spec.Vocab {
			key := rowKey(w.Data[t*dim : (t+1)*dim])
			if f, ok := first[key]; ok {
				rep[t] = f
			} else {
				first[key] = t
			}
		}
	}
	lists := map[int][]int{}
	for _, o := range x {
		if _, ok := lists[o]; ok {
			continue
		}
		l := []int{}
		for _, u := range all {
			if rep[u] == u && rep[u] != rep[o] {
				l = append(l, u)
			}
		}
		lists[o] = l
	}
	return all, lists
}

// rowKey is an embedding row's bits as a map key.
func rowKey[T ad.Float](row []T) string {
	b := make([]byte, 0, 8*len(row))
	for _, v := range row {
		u := math.Float64bits(float64(v))
		for k := range 8 {
			b = append(b, byte(u>>(8*k)))
		}
	}
	return string(b)
}
