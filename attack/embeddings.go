package attack

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// Embeddings is the embedding kind: a ball around a source sentence's
// embedding rows, the rows at ⌈δ·n⌉ positions free (spec.EmbeddingBall).
// A point is the sentence's n embedding rows, [n, E] in row order, which
// the model reads in place of its tokens' (model.Input.Embedded). PGD's
// relaxation is the free rows themselves: the paper's analysis attack
// (§5.2), unconstrained at radius +Inf.
type Embeddings struct {
	*spec.EmbeddingBall
	// Tokens is the sentence, whose tokens the model is given beside the
	// rows (for their positions and lengths).
	Tokens []int
	table  *ad.Param[float32]
}

var _ Relaxable[[]float64] = (*Embeddings)(nil)

// NewEmbeddings is the ball of radius around sentence x's embedding rows
// in d32's source table, the rows at ⌈delta·n⌉ positions drawn from rng
// free (spec.Substitution.Positions).
func NewEmbeddings(d32 model.Decoder[float32], x []int, delta, radius float64, rng *rand.Rand) (*Embeddings, error) {
	table, err := sourceTable(d32)
	if err != nil {
		return nil, err
	}
	in := d32.Input()
	sub, err := spec.NewSubstitution(x, delta, in.Vocab, in.Special)
	if err != nil {
		return nil, err
	}
	e := table.W.Cols()
	rows := make([]float64, len(x)*e)
	for i, id := range x {
		for c := 0; c < e; c++ {
			rows[i*e+c] = float64(table.W.Data[id*e+c])
		}
	}
	ball, err := spec.NewEmbeddingBall(rows, e, sub.Positions(rng), radius)
	if err != nil {
		return nil, err
	}
	return &Embeddings{EmbeddingBall: ball, Tokens: slices.Clone(x), table: table}, nil
}

// Center is the sentence's own rows.
func (s *Embeddings) Center() []float64 { return s.X }

// Clone copies x.
func (s *Embeddings) Clone(x []float64) []float64 { return slices.Clone(x) }

// Draw fills x with a point of the ball (Sample).
func (s *Embeddings) Draw(rng *rand.Rand, x []float64) { s.Sample(rng, x) }

// Admit projects x onto the ball in float64 (float32 iterates clamped to
// the radius may sit an ulp outside) and checks it lies inside.
func (s *Embeddings) Admit(x []float64) error {
	s.Project(x)
	if !s.Contains(x) {
		return errOutside
	}
	return nil
}

// Decode32 decodes points with the float32 model.
func (s *Embeddings) Decode32(ctx context.Context, d model.Decoder[float32], xs [][]float64, maxSteps int) ([]model.Result, error) {
	if len(xs) == 0 {
		return nil, nil
	}
	rows := make([]float32, 0, len(xs)*len(s.X))
	toks := make([][]int, len(xs))
	for i, x := range xs {
		rows, toks[i] = append(rows, narrow(x)...), s.Tokens
	}
	tp := ad.NewTape[float32](false)
	return model.Greedy(tp, d, model.Input[float32]{Tokens: toks, Embedded: tp.Const(ad.FromSlice(rows, len(xs)*len(s.Tokens), s.Cols))},
		model.GreedyOptions[float32]{MaxSteps: maxSteps})
}

// Decode64 decodes one point with the float64 model.
func (s *Embeddings) Decode64(ctx context.Context, d model.Decoder[float64], x []float64, maxSteps int) (model.Result, error) {
	if err := ctx.Err(); err != nil {
		return model.Result{}, err
	}
	tp := ad.NewTape[float64](false)
	res, err := model.Greedy(tp, d, model.Input[float64]{Tokens: [][]int{s.Tokens}, Embedded: tp.Const(ad.FromSlice(slices.Clone(x), len(s.Tokens), s.Cols))},
		model.GreedyOptions[float64]{MaxSteps: maxSteps})
	if err != nil {
		return model.Result{}, err
	}
	return res[0], nil
}

// Relax is the free rows themselves, started at the original tokens'
// rows (runs after the first at points drawn from the ball), clamped to
// the radius after every step. A run retires once its output reaches
// the horizon without stopping (the objective has nothing left to gain
// there) and gives back its last rows.
func (s *Embeddings) Relax(d32 model.Decoder[float32], tg Target[[]float64], rng *rand.Rand, opt PGDOptions) (*Relaxation[[]float64], error) {
	if t, err := sourceTable(d32); err != nil {
		return nil, err
	} else if t != s.table {
		return nil, errors.New("attack: an embedding ball of another model's table")
	}
	e, free := s.Cols, s.Free
	rel := &Relaxation[[]float64]{
		Rows: len(free), Cols: e,
		Init: func(k int, w []float32) {
			x := s.X
			if k > 0 {
				x = make([]float64, len(s.X))
				s.Sample(rng, x)
			}
			for j, p := range free {
				for c := 0; c < e; c++ {
					w[j*e+c] = float32(x[p*e+c])
				}
			}
		},
		Input: func(tp *ad.Tape[float32], v *ad.Node[float32]) Relaxed {
			return Relaxed{Tokens: s.Tokens, Embedded: withRows(tp, s.table, s.Tokens, free, v)}
		},
		Candidates: func(w []float32) ([][]float64, []string) {
			rows := slices.Clone(s.X)
			for j, p := range free {
				for c := 0; c < e; c++ {
					rows[p*e+c] = float64(w[j*e+c])
				}
			}
			return [][]float64{rows}, []string{""}
		},
		Retire: func(r model.Result) bool { return !r.Stopped },
	}
	if !math.IsInf(s.Radius, 1) {
		rel.Project = func(w []float32) {
			for j, p := range free {
				for c := 0; c < e; c++ {
					x := s.X[p*e+c]
					w[j*e+c] = min(max(w[j*e+c], float32(x-s.Radius)), float32(x+s.Radius))
				}
			}
		}
	}
	return rel, nil
}

// String describes the space for messages.
func (s *Embeddings) String() string { return fmt.Sprintf("embedding ball: %s", s.Describe()) }
