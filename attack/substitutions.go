package attack

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// Substitutions is the token-substitution kind: a source sentence's set
// S(x, δ) of sequences with at most ⌈δ·n⌉ tokens substituted (paper §3.1,
// "Discrete inputs"). PGD's relaxation is the paper's Gumbel-softmax over
// the tokens at ⌈δ·n⌉ chosen positions (§3.3).
type Substitutions struct {
	*spec.Substitution
	// Textual, if set, tells the token sequences that are texts: those
	// that decode to valid UTF-8 on one line, which the model's tokenizer
	// gives back when encoded again. Attacks only report such sequences,
	// so that every witness replays from its text (lenspec translate);
	// candidates that are not are skipped (random search draws again).
	Textual func([]int) bool
}

var _ Relaxable[[]int] = (*Substitutions)(nil)

// NewSubstitutions is S(x, δ) over d's source vocabulary, its special
// tokens excluded, reporting only texts if d has a tokenizer.
func NewSubstitutions(d model.Decoder[float64], x []int, delta float64) (*Substitutions, error) {
	in := d.Input()
	if in.Kind != model.Tokens {
		return nil, fmt.Errorf("attack: the %s model reads %v inputs, not token sequences", d.Config().Architecture, in.Kind)
	}
	set, err := spec.NewSubstitution(x, delta, in.Vocab, in.Special)
	if err != nil {
		return nil, err
	}
	return &Substitutions{Substitution: set, Textual: Textual(d.Config())}, nil
}

// Textual returns the test of the token sequences that are texts for a
// model with a tokenizer (nil without one): valid UTF-8 on one line, which
// the tokenizer gives back when encoded again.
func Textual(cfg *model.Config) func([]int) bool {
	tok := cfg.Tokenizer
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

// isText reports whether x is a sequence the set may report.
func (s *Substitutions) isText(x []int) bool { return s.Textual == nil || s.Textual(x) }

// Center is the original sentence.
func (s *Substitutions) Center() []int { return s.X }

// Clone copies x.
func (s *Substitutions) Clone(x []int) []int { return slices.Clone(x) }

// Draw fills y with a random point of the set that is a text: up to
// maxDraws draws, then the original.
func (s *Substitutions) Draw(rng *rand.Rand, y []int) {
	for range maxDraws {
		s.Sample(rng, y)
		if s.isText(y) {
			return
		}
	}
	copy(y, s.X)
}

// Admit checks that x lies in the set and is a text.
func (s *Substitutions) Admit(x []int) error {
	if !s.Contains(x) {
		return errOutside
	}
	if !s.isText(x) {
		return errors.New("attack: witness is not the tokenisation of any text")
	}
	return nil
}

// Decode32 decodes the sequences with the float32 model.
func (s *Substitutions) Decode32(ctx context.Context, d model.Decoder[float32], xs [][]int, maxSteps int) ([]model.Result, error) {
	return model.Decode(ctx, d, model.Batch[float32]{Tokens: xs}, maxSteps)
}

// Decode64 decodes one sequence with the float64 model.
func (s *Substitutions) Decode64(ctx context.Context, d model.Decoder[float64], x []int, maxSteps int) (model.Result, error) {
	res, err := model.Decode(ctx, d, model.Batch[float64]{Tokens: [][]int{x}}, maxSteps)
	if err != nil {
		return model.Result{}, err
	}
	return res[0], nil
}

// sourceTable is a model's source embedding table, which the relaxed
// text attacks move through.
func sourceTable(d32 model.Decoder[float32]) (*ad.Param[float32], error) {
	emb, ok := d32.(model.SourceEmbedder[float32])
	if !ok {
		return nil, fmt.Errorf("attack: the %s model exposes no source embedding to relax", d32.Config().Architecture)
	}
	return emb.SourceEmbedding(), nil
}

// withRows is the embedding rows of x on tp: the table's rows of the
// original tokens, those at pos replaced by the rows of chosen
// [len(pos), E].
func withRows(tp *ad.Tape[float32], table *ad.Param[float32], x, pos []int, chosen *ad.Node[float32]) *ad.Node[float32] {
	orig := tp.Gather(tp.Const(table.W), x)
	if len(pos) == 0 {
		return orig
	}
	slot := make([]int, len(x))
	for i := range slot {
		slot[i] = i
	}
	for j, p := range pos {
		slot[p] = len(x) + j // the chosen rows follow the originals
	}
	return tp.Gather(tp.Concat(0, orig, chosen), slot)
}

// Relax is the paper's Gumbel-softmax relaxation (§3.3): at ⌈δ·n⌉
// positions drawn from the target's stream, a logit vector πᵢ over the
// vocabulary, set +1 at xᵢ and −1 elsewhere (special tokens excluded); the
// input embedding there is the Gumbel-softmax sample
// softmax((gᵢ + log softmax(πᵢ))/τ) times the embedding table, with fresh
// noise from the target's own stream at every step. A run gives back a
// sentence drawn from Categorical(softmax(π)) (drawn again, up to maxDraws
// times, until it is a text) and the argmax (if a text), or the original.
// Runs after the first start from π +1 at a random text of the set.
func (s *Substitutions) Relax(d32 model.Decoder[float32], tg Target[[]int], rng *rand.Rand, opt PGDOptions) (*Relaxation[[]int], error) {
	table, err := sourceTable(d32)
	if err != nil {
		return nil, err
	}
	if !(opt.Tau > 0) {
		return nil, fmt.Errorf("attack: Gumbel-softmax temperature %v must be positive", opt.Tau)
	}
	v := table.W.Rows()
	pos := s.Positions(rng)
	keep := make([]bool, v)
	mask := ad.New[float32](1, v) // −1e4 on tokens π may not use
	for id := range keep {
		if keep[id] = s.Allowed(id); !keep[id] {
			mask.Data[id] = -1e4
		}
	}
	noise := rand.New(rand.NewPCG(tg.Seed, tg.Stream^0x9e3779b97f4a7c15)) // Gumbel noise
	final := rand.New(rand.NewPCG(tg.Seed, tg.Stream^0x5851f42d4c957f2d)) // the final draws
	tau := float32(opt.Tau)
	return &Relaxation[[]int]{
		Rows: len(pos), Cols: v,
		Init: func(k int, w []float32) {
			start := s.X
			if k > 0 {
				start = make([]int, len(s.X))
				s.Draw(rng, start)
			}
			for j, p := range pos {
				row := w[j*v : (j+1)*v]
				for id := range row {
					row[id] = -1
				}
				row[start[p]] = 1
			}
		},
		Input: func(tp *ad.Tape[float32], pi *ad.Node[float32]) Relaxed {
			if len(pos) == 0 {
				return Relaxed{Tokens: s.X, Embedded: withRows(tp, table, s.X, nil, nil)}
			}
			g := ad.New[float32](len(pos), v)
			for i := range g.Data {
				g.Data[i] = float32(gumbel(noise))
			}
			chosen := gumbelEmbedding(tp, pi, g, mask, keep, tau, tp.Const(table.W))
			return Relaxed{Tokens: s.X, Embedded: withRows(tp, table, s.X, pos, chosen)}
		},
		Candidates: func(pi []float32) ([][]int, []string) {
			draw := func() (sample, argmax []int) {
				sample, argmax = slices.Clone(s.X), slices.Clone(s.X)
				for j, p := range pos {
					sample[p], argmax[p] = drawAllowed(pi[j*v:(j+1)*v], keep, final)
				}
				return sample, argmax
			}
			sample, argmax := draw()
			for d := 1; d < maxDraws && !s.isText(sample); d++ {
				sample, _ = draw()
			}
			var cands [][]int
			var picks []string
			for i, c := range [][]int{sample, argmax} {
				if s.isText(c) {
					cands, picks = append(cands, c), append(picks, []string{"sample", "argmax"}[i])
				}
			}
			if len(cands) == 0 {
				return [][]int{slices.Clone(s.X)}, []string{"original"}
			}
			return cands, picks
		},
	}, nil
}

// drawAllowed draws a token from softmax(row) over the allowed tokens and
// returns it with the row's argmax among them (lowest id on ties).
func drawAllowed(row []float32, keep []bool, rng *rand.Rand) (sample, argmax int) {
	m := math.Inf(-1)
	argmax = -1
	for id, v := range row {
		if keep[id] && float64(v) > m {
			m, argmax = float64(v), id
		}
	}
	var z float64
	for id, v := range row {
		if keep[id] {
			z += math.Exp(float64(v) - m)
		}
	}
	u := rng.Float64() * z
	sample = argmax
	for id, v := range row {
		if !keep[id] {
			continue
		}
		if u -= math.Exp(float64(v) - m); u < 0 {
			sample = id
			break
		}
	}
	return sample, argmax
}

// gumbelEmbedding is the relaxed embedding of Gumbel-softmax samples:
// softmax((g + log softmax(π + mask))/τ)·table over the allowed tokens
// (keep; mask is −1e4 on the others), for logits π [n, V] and noise g
// [n, V] drawn from Gumbel(0, 1).
func gumbelEmbedding[T ad.Float](tp *ad.Tape[T], pi *ad.Node[T], g, mask *ad.Tensor[T], keep []bool, tau T, table *ad.Node[T]) *ad.Node[T] {
	n, v := pi.Value.Rows(), pi.Value.Cols()
	masked := tp.Add(pi, tp.Const(repeatRows(mask, n)))
	logits := tp.Scale(tp.Add(tp.LogSoftmax(masked), tp.Const(g)), 1/tau)
	rowKeep := make([]bool, n*v)
	for i := range rowKeep {
		rowKeep[i] = keep[i%v]
	}
	return tp.MatMul(tp.MaskedSoftmax(logits, rowKeep), table)
}

// gumbel draws from Gumbel(0, 1): −log(−log u), u uniform in (0, 1).
func gumbel(rng *rand.Rand) float64 {
	return -math.Log(-math.Log(rng.Float64()*(1-1e-12) + 1e-12))
}

func repeatRows[T ad.Float](t *ad.Tensor[T], n int) *ad.Tensor[T] {
	out := ad.New[T](n, t.Len())
	for i := 0; i < n; i++ {
		copy(out.Data[i*t.Len():], t.Data)
	}
	return out
}
