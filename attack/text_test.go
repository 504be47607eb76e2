package attack

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
)

// tinyTranslator builds a small random translator (vocabulary 30, ids 0..3
// special) at both precisions; its weights are large enough that outputs
// vary with the input.
func tinyTranslator(t testing.TB, seed uint64) (model.Decoder[float32], model.Decoder[float64]) {
	return translatorOf(t, seed, 8, 6, 10, 8, 8, 0.8)
}

// wideTranslator is tinyTranslator at widths where a batch changes how
// OpenBLAS rounds a row (see wideCell).
func wideTranslator(t testing.TB, seed uint64) (model.Decoder[float32], model.Decoder[float64]) {
	return translatorOf(t, seed, 64, 128, 128, 64, 128, 0.2)
}

// translatorOf builds the random translator of tinyTranslator with these
// widths and weights of standard deviation sd.
func translatorOf(t testing.TB, seed uint64, emb, enc, dec, att, comb int, sd float64) (model.Decoder[float32], model.Decoder[float64]) {
	t.Helper()
	cfg := model.DefaultTranslatorConfig(30, 0, 1, 2, 3)
	a := cfg.Arch.(*model.TranslatorConfig)
	a.Embedding, a.EncoderHidden, a.DecoderHidden, a.Attention, a.Combine = emb, enc, dec, att, comb
	cfg.MaxSteps = 40
	m, err := model.NewTranslator[float32](&cfg, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	for _, p := range m.Params() {
		for i := range p.W.Data {
			p.W.Data[i] = float32(sd * rng.NormFloat64())
		}
	}
	m64, err := model.Cast[float64](model.Decoder[float32](m))
	if err != nil {
		t.Fatal(err)
	}
	return m, m64
}

// sentences are n random sentences of the tiny translators' vocabulary.
func sentences(n int) [][]int {
	rng := rand.New(rand.NewPCG(9, 9))
	var out [][]int
	for i := 0; i < n; i++ {
		x := make([]int, 2+rng.IntN(6))
		for j := range x {
			x[j] = 4 + rng.IntN(26)
		}
		out = append(out, x)
	}
	return out
}

func textTargets(t testing.TB, d64 model.Decoder[float64], delta float64, n int) []Target[[]int] {
	t.Helper()
	var out []Target[[]int]
	for i, x := range sentences(n) {
		set, err := NewSubstitutions(d64, x, delta)
		if err != nil {
			t.Fatal(err)
		}
		tg, err := NewTarget[[]int](context.Background(), d64, set, -1, 40, 3, uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tg)
	}
	return out
}

// embeddingTargets are the embedding balls (radius +Inf) of the same
// sentences, their free rows drawn from each target's stream.
func embeddingTargets(t testing.TB, d32 model.Decoder[float32], d64 model.Decoder[float64], delta float64, n int) []Target[[]float64] {
	t.Helper()
	var out []Target[[]float64]
	for i, x := range sentences(n) {
		set, err := NewEmbeddings(d32, x, delta, math.Inf(1), rand.New(rand.NewPCG(3, uint64(i))))
		if err != nil {
			t.Fatal(err)
		}
		tg, err := NewTarget[[]float64](context.Background(), d64, set, -1, 40, 3, uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tg)
	}
	return out
}

// TestTextAttacksStayInSet: every method's witness lies in S(x, δ) — at
// most ⌈δ·n⌉ substitutions, never a special token — replays in float64 to
// the recorded result, and counts its evaluations.
func TestTextAttacksStayInSet(t *testing.T) {
	d32, d64 := tinyTranslator(t, 1)
	ctx := context.Background()
	for _, delta := range []float64{0.3, 1} {
		targets := textTargets(t, d64, delta, 4)
		check := func(method string, tg Target[[]int], o Outcome[[]int]) {
			t.Helper()
			set := tg.Set.(*Substitutions)
			if !set.Contains(o.Input) || set.Changed(o.Input) > set.Budget {
				t.Fatalf("%s δ=%v: witness %v outside the set of %v", method, delta, o.Input, set.X)
			}
			res, err := model.Decode(ctx, d64, model.Batch[float64]{Tokens: [][]int{o.Input}}, 40)
			if err != nil || !slices.Equal(res[0].Tokens, o.Result.Tokens) || res[0].Stopped != o.Result.Stopped {
				t.Fatalf("%s: outcome does not replay: %v vs %v (%v)", method, res, o.Result, err)
			}
			if o.Evals <= 0 {
				t.Fatalf("%s: %d evaluations", method, o.Evals)
			}
		}
		for _, tg := range targets {
			o, err := RandomSearch(ctx, d32, d64, tg, RandomOptions{Samples: 50, Batch: 16, MaxSteps: 40})
			if err != nil {
				t.Fatal(err)
			}
			check("random", tg, o)
			var total int64
			for _, c := range o.LengthCounts {
				total += c
			}
			if total != 50 || o.Evals != 50 {
				t.Fatalf("random: %d lengths counted, %d evaluations; want 50", total, o.Evals)
			}
			fo := DefaultFlip()
			fo.Evals, fo.MaxSteps = 60, 40
			of, err := Flip(ctx, d32, d64, tg, fo)
			if err != nil {
				t.Fatal(err)
			}
			check("flip", tg, of)
			if of.Evals > 60+int64(fo.Beam) {
				t.Fatalf("flip spent %d evaluations of 60", of.Evals)
			}
			fo.Loop = true
			ol, err := Flip(ctx, d32, d64, tg, fo)
			if err != nil {
				t.Fatal(err)
			}
			check("flip loop", tg, ol)
			if ol.Evals > 60+2*int64(fo.Beam) {
				t.Fatalf("flip with loops spent %d evaluations of 60", ol.Evals)
			}
		}
		g := DefaultGumbel()
		g.Steps, g.MaxSteps = 10, 40
		outs, err := PGD(ctx, d32, d64, targets, g)
		if err != nil {
			t.Fatal(err)
		}
		for k, o := range outs {
			check("gumbel", targets[k], o)
			if o.Pick != "sample" && o.Pick != "argmax" {
				t.Fatalf("gumbel pick %q", o.Pick)
			}
		}
	}
}

// TestGumbelEmbeddingGradient: the Gumbel-softmax relaxation's gradient
// with respect to the logits π, through the translator and J̃, matches
// central finite differences (float64, fixed noise).
func TestGumbelEmbeddingGradient(t *testing.T) {
	_, d64 := tinyTranslator(t, 2)
	table := d64.(model.SourceEmbedder[float64]).SourceEmbedding().W
	v := table.Rows()
	rng := rand.New(rand.NewPCG(4, 4))
	x := []int{5, 9, 12, 7}
	pos := []int{1, 3}
	pi := make([]float64, len(pos)*v)
	g := ad.New[float64](len(pos), v)
	for i := range pi {
		pi[i], g.Data[i] = rng.NormFloat64(), gumbel(rng)
	}
	mask := ad.New[float64](1, v)
	keep := make([]bool, v)
	for id := range keep {
		keep[id] = id >= 4
		if !keep[id] {
			mask.Data[id] = -1e4
		}
	}
	eval := func(tp *ad.Tape[float64], pin *ad.Node[float64]) *ad.Node[float64] {
		e := gumbelEmbedding(tp, pin, g, mask, keep, 0.7, tp.Const(table))
		rows := tp.Gather(tp.Const(table), x)
		// Positions 1 and 3 come from the relaxation.
		all := tp.Gather(tp.Concat(0, rows, e), []int{0, 4, 2, 5})
		loss, _, err := Objective(tp, d64, model.Input[float64]{Tokens: [][]int{x}, Embedded: all}, 12, LossEOSLogProb, 1)
		if err != nil {
			t.Fatal(err)
		}
		return loss
	}
	tp := ad.NewTape[float64](true)
	pn := tp.Var(ad.FromSlice(slices.Clone(pi), len(pos), v))
	l := eval(tp, pn)
	if err := tp.Backward(l); err != nil {
		t.Fatal(err)
	}
	const h = 1e-6
	checked := 0
	for i := 0; i < len(pi); i += 7 { // every 7th logit: a spread over both rows
		f := func(d float64) float64 {
			p := slices.Clone(pi)
			p[i] += d
			tq := ad.NewTape[float64](false)
			return eval(tq, tq.Const(ad.FromSlice(p, len(pos), v))).Value.Data[0]
		}
		num := (f(h) - f(-h)) / (2 * h)
		if got := pn.Grad.Data[i]; math.Abs(got-num) > 1e-5*math.Max(1, math.Abs(num)) {
			t.Fatalf("∂J/∂π[%d]: analytic %.9g, finite difference %.9g", i, got, num)
		}
		checked++
	}
	if checked < 8 {
		t.Fatalf("only %d logits checked", checked)
	}
}

// TestTextPGDReproducesAlone: Gumbel and embedding PGD give a sentence the
// outcome it gets alone whatever batch it runs in, in any position, on one
// core or two, on a tiny and a wide translator: its positions and noise
// come from its own stream and its runs are computed apart from the
// others' — also when a short gradient horizon retires embedding runs.
func TestTextPGDReproducesAlone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(testing.TB, uint64) (model.Decoder[float32], model.Decoder[float64])
		n     int
	}{{"tiny", tinyTranslator, 3}, {"wide", wideTranslator, 9}} {
		d32, d64 := tc.build(t, 3)
		for _, horizon := range []int{0, 2} {
			t.Run(fmt.Sprintf("%s horizon %d", tc.name, horizon), func(t *testing.T) {
				g := DefaultGumbel()
				g.Steps, g.MaxSteps, g.Horizon = 8, 40, horizon
				reproducesAlone(t, d32, d64, textTargets(t, d64, 0.5, tc.n), g)
				outs := reproducesAlone(t, d32, d64, embeddingTargets(t, d32, d64, 0.5, tc.n), g)
				retired := 0
				for i, o := range outs {
					if g.Horizon > 0 && o.Found32 > g.Horizon+1 {
						t.Fatalf("embedding: float32 rank %d past the horizon %d", o.Found32, g.Horizon)
					}
					if g.Horizon > 0 && o.Found32 == g.Horizon+1 {
						// Retired at the horizon: the kept rows are those that got
						// there, and the replay decodes on past it.
						retired++
						if len(o.Result.Tokens) <= g.Horizon {
							t.Fatalf("retired target %d replays to %d tokens, not past the horizon %d", i, len(o.Result.Tokens), g.Horizon)
						}
						if o.Steps > g.Steps || o.Evals != int64(o.Steps)+1 {
							t.Fatalf("retired target %d: %d iterations, %d evaluations", i, o.Steps, o.Evals)
						}
					}
				}
				if tc.name == "tiny" && horizon > 0 && retired == 0 {
					t.Fatalf("no target reached horizon %d: the test does not exercise retirement", horizon)
				}
			})
		}
	}
}

// TestFlipSameOnAnyCoreCount: flip, which attacks one sentence at a time
// (its candidates decoded in model.Decode's fixed chunks), gives the same
// outcome on one core and two, with and without loops, on the wide
// translator.
func TestFlipSameOnAnyCoreCount(t *testing.T) {
	d32, d64 := wideTranslator(t, 3)
	for _, tg := range textTargets(t, d64, 0.5, 2) {
		for _, loop := range []bool{false, true} {
			var outs []Outcome[[]int]
			for _, procs := range []int{1, 2} {
				func() {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
					fo := DefaultFlip()
					fo.Evals, fo.MaxSteps, fo.Loop = 60, 40, loop
					o, err := Flip(context.Background(), d32, d64, tg, fo)
					if err != nil {
						t.Fatal(err)
					}
					outs = append(outs, o)
				}()
			}
			if !reflect.DeepEqual(outs[0], outs[1]) {
				t.Fatalf("loop %v: one core %+v, two %+v", loop, outs[0], outs[1])
			}
		}
	}
}

// TestLoopTargets: a sentence's loop target is its output repeated and cut
// at the horizon (none for an empty output), and merged swaps keep the
// first list's order, add the second's new ones and stop at k.
func TestLoopTargets(t *testing.T) {
	got := loopTargets([]flipCand{{out: []int{5, 6, 7}}, {out: nil}, {out: []int{9}}}, 7)
	want := [][]int{{5, 6, 7, 5, 6, 7, 5}, nil, {9, 9, 9, 9, 9, 9, 9}}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("target %d: %v, want %v", i, got[i], want[i])
		}
	}
	m := mergeSwaps([][2]int{{0, 5}, {2, 7}}, [][2]int{{2, 7}, {1, 4}, {3, 3}}, 3)
	if !slices.Equal(m, [][2]int{{0, 5}, {2, 7}, {1, 4}}) {
		t.Fatalf("merged %v", m)
	}
}
