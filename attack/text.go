package attack

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// TextTarget is one attack problem on a token-sequence model: a source
// sentence's substitution set S(x, δ) and K̂.
type TextTarget struct {
	Set *spec.Substitution
	K   int
	// Original is the greedy output on the unperturbed source (float64).
	Original model.Result
	// Seed and Stream seed every random choice made for this target, as
	// Target's do.
	Seed, Stream uint64
	// Textual, if set, tells the token sequences that are texts: those
	// that decode to valid UTF-8 on one line, which the model's tokenizer
	// gives back when encoded again. Attacks only report such sequences, so that every
	// witness replays from its text (lenspec translate); candidates that
	// are not are skipped (random search draws again).
	Textual func([]int) bool
}

// textual returns the Textual test of a model with a tokenizer (nil
// without one).
func textual(d model.Decoder[float64]) func([]int) bool {
	tok := d.Config().Tokenizer
	if tok == nil {
		return nil
	}
	return func(ids []int) bool {
		s, err := model.DecodeText(tok, ids)
		// Valid UTF-8 on one line: a JSON record keeps it exactly and
		// translate reads it back as one text, from arguments or stdin.
		return err == nil && utf8.ValidString(s) && !strings.ContainsAny(s, "\r\n") &&
			slices.Equal(model.EncodeText(tok, s), ids)
	}
}

// isText reports whether x is a sequence tg may report.
func (tg TextTarget) isText(x []int) bool { return tg.Textual == nil || tg.Textual(x) }

// maxDraws bounds how many random draws a sample of the set that is a
// text may take before the original (always a text) is used instead.
const maxDraws = 1000

// sampleText fills y with a random point of the set that is a text.
func (tg TextTarget) sampleText(rng *rand.Rand, y []int) {
	for range maxDraws {
		tg.Set.Sample(rng, y)
		if tg.isText(y) {
			return
		}
	}
	copy(y, tg.Set.X)
}

func (tg TextTarget) rng() *rand.Rand { return rand.New(rand.NewPCG(tg.Seed, tg.Stream)) }

// NewTextTarget decodes x with the float64 model and builds the target for
// S(x, δ) over d64's source vocabulary, its special tokens excluded. k < 0
// selects K̂ = ℓ(x): "longer than the original".
func NewTextTarget(ctx context.Context, d64 model.Decoder[float64], x []int, delta float64, k, maxSteps int, seed, stream uint64) (TextTarget, error) {
	in := d64.Input()
	if in.Kind != model.Tokens {
		return TextTarget{}, fmt.Errorf("attack: the %s model reads %v inputs, not token sequences", d64.Config().Architecture, in.Kind)
	}
	set, err := spec.NewSubstitution(x, delta, in.Vocab, in.Special)
	if err != nil {
		return TextTarget{}, err
	}
	res, err := model.Decode(ctx, d64, model.Batch[float64]{Tokens: [][]int{x}}, maxSteps)
	if err != nil {
		return TextTarget{}, err
	}
	if k < 0 {
		k = len(res[0].Tokens)
	}
	return TextTarget{Set: set, K: k, Original: res[0], Seed: seed, Stream: stream, Textual: textual(d64)}, nil
}

// TextOutcome is what a text attack found for one target, as replayed in
// float64.
type TextOutcome struct {
	// Input is the best source found (token ids, inside the set), or nil
	// for the embedding attack, whose best input is Embedded: the source's
	// embedding rows [n, E], every position's (only the chosen positions
	// differ from the table's).
	Input    []int
	Embedded []float64
	Replayed
	// Pick says which candidate of the Gumbel attack won: "sample" (drawn
	// from softmax(π)) or "argmax".
	Pick string
}

// ReplayText decodes x with the float64 model, after checking it lies in
// the target's set: the only result lenspec reports.
func ReplayText(ctx context.Context, d64 model.Decoder[float64], tg TextTarget, x []int, maxSteps int) (TextOutcome, error) {
	if !tg.Set.Contains(x) {
		return TextOutcome{}, errOutsideText
	}
	if !tg.isText(x) {
		return TextOutcome{}, errors.New("attack: witness is not the tokenisation of any text")
	}
	res, err := model.Decode(ctx, d64, model.Batch[float64]{Tokens: [][]int{x}}, maxSteps)
	if err != nil {
		return TextOutcome{}, err
	}
	r := res[0]
	return TextOutcome{Input: append([]int(nil), x...), Replayed: replayed(r, tg.K)}, nil
}

var errOutsideText = errors.New("attack: witness outside the substitution set")

// countLength adds a float32 result to a length histogram of maxSteps+2
// bins (the last for outputs that hit the cap).
func countLength(counts []int64, r model.Result) {
	if r.Stopped {
		counts[len(r.Tokens)]++
	} else {
		counts[len(counts)-1]++
	}
}

// RandomSubstitution is the paper's random search on text (§5.2): Samples
// draws per target, each substituting uniform allowed tokens at ⌈δ·n⌉
// positions drawn uniformly (drawn again until the sequence is a text, for
// a target with a Textual test), decoded in float32 batches; the longest
// output is kept (the first on ties) and replayed in float64, and every
// sampled length is counted.
func RandomSubstitution(ctx context.Context, d32 model.Decoder[float32], d64 model.Decoder[float64], tg TextTarget, opt RandomOptions) (TextOutcome, error) {
	maxSteps := opt.MaxSteps
	if maxSteps <= 0 {
		maxSteps = d32.MaxSteps()
	}
	batch := max(1, opt.Batch)
	rng := tg.rng()
	n := len(tg.Set.X)
	best := append([]int(nil), tg.Set.X...)
	bestLen := -1
	counts := make([]int64, maxSteps+2)
	var evals int64
	buf := make([][]int, batch)
	for i := range buf {
		buf[i] = make([]int, n)
	}
	for done := 0; done < opt.Samples; {
		if err := ctx.Err(); err != nil {
			return TextOutcome{}, err
		}
		m := min(batch, opt.Samples-done)
		for i := 0; i < m; i++ {
			tg.sampleText(rng, buf[i])
		}
		res, err := model.Decode(ctx, d32, model.Batch[float32]{Tokens: buf[:m]}, maxSteps)
		if err != nil {
			return TextOutcome{}, err
		}
		for i, r := range res {
			countLength(counts, r)
			if l := rank(r, maxSteps); l > bestLen {
				bestLen = l
				copy(best, buf[i])
			}
		}
		evals += int64(m)
		done += m
		if opt.Progress != nil {
			opt.Progress(done, bestLen)
		}
	}
	out, err := ReplayText(ctx, d64, tg, best, maxSteps)
	if err != nil {
		return TextOutcome{}, err
	}
	out.Found32, out.Evals, out.LengthCounts = bestLen, evals, counts
	return out, nil
}
