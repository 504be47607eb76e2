package model

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

// neverStopping makes m's decoder amplify its state and never emit eos:
// the recurrence is 2·I with a positive bias, so the ReLU state doubles
// every step until it overflows (after about 1,000 steps in float64, 130
// in float32); token 0's logit is the sum of the state, eos's −1.
func neverStopping(m *Captioner[float64]) {
	h := m.RNN.Hidden
	for i := range m.RNN.Whh.W.Data {
		m.RNN.Whh.W.Data[i] = 0
	}
	for i := 0; i < h; i++ {
		m.RNN.Whh.W.Data[i*h+i] = 2
		m.RNN.Bhh.W.Data[i] = 0.5
	}
	for i := range m.Out.W.W.Data {
		m.Out.W.W.Data[i] = 0
	}
	for j := 0; j < h; j++ {
		m.Out.W.W.Data[j] = 1 // token 0
	}
	for i := range m.Out.B.W.Data {
		m.Out.B.W.Data[i] = 0
	}
	m.Out.B.W.Data[m.Cfg.EOS] = -1
}

// TestNonFiniteStops: a never-stopping model whose state overflows at a
// long step cap gives a result, not NaN margins and invented tokens: the
// row stops at the first step with non-finite logits, marked, with the
// tokens decided before it, in float64 and float32, alone or batched, and
// an observer never sees such a step as live.
func TestNonFiniteStops(t *testing.T) {
	m := tinyModel(t, CellReLU, 3)
	neverStopping(m)
	const cap = 5000
	rng := rand.New(rand.NewPCG(3, 3))
	x := randInput(rng, 3*size(m))
	ctx := context.Background()
	res, err := Decode[float64](ctx, m, Batch[float64]{X: x}, cap)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		n := len(r.Tokens)
		if r.Stopped || !r.NonFinite || n == 0 || n >= cap {
			t.Fatalf("row %d: stopped %v non-finite %v after %d tokens, want an unstopped, non-finite row cut before the cap of %d", i, r.Stopped, r.NonFinite, n, cap)
		}
		if math.IsNaN(r.MinMargin) || math.IsInf(r.MinMargin, 0) || math.IsNaN(r.MinRelMargin) {
			t.Fatalf("row %d: margins %v, %v over the finite steps", i, r.MinMargin, r.MinRelMargin)
		}
		for _, y := range r.Tokens {
			if y != 0 {
				t.Fatalf("row %d: token %d decided; only token 0 wins on finite logits", i, y)
			}
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("row %d does not encode: %v", i, err)
		}
		// Every step before the overflow is finite: the cap there gives
		// a plain unstopped output of the same tokens; one more step
		// gives the mark, and the margin of the steps before it, alone
		// and in a batch of copies of the row. Alone, the row's products
		// are rounded unlike the batch's (BLAS kernels differ by batch
		// size and CPU), so its margin is compared with its own at the
		// other cap; in a batch of copies they have the batch's shapes
		// until a row stops, long after the smallest margin (the first
		// step's: the state grows), so its margin is the batch's exactly.
		one := x[i*size(m) : (i+1)*size(m)]
		margin := map[string]float64{"in a batch of copies": r.MinMargin}
		for _, c := range []struct {
			steps     int
			nonFinite bool
		}{{n, false}, {n + 1, true}} {
			for _, b := range []struct {
				name string
				x    []float64
				row  int
			}{{"alone", one, 0}, {"in a batch of copies", slices.Repeat(one, len(res)), i}} {
				out, err := Decode[float64](ctx, m, Batch[float64]{X: b.x}, c.steps)
				if err != nil {
					t.Fatal(err)
				}
				a := out[b.row]
				want, seen := margin[b.name]
				if !seen {
					margin[b.name], want = a.MinMargin, a.MinMargin
				}
				if a.NonFinite != c.nonFinite || a.Stopped || len(a.Tokens) != n || a.MinMargin != want {
					t.Fatalf("row %d %s, cap %d: non-finite %v after %d tokens (margin %v), want %v after %d (margin %v)",
						i, b.name, c.steps, a.NonFinite, len(a.Tokens), a.MinMargin, c.nonFinite, n, want)
				}
			}
		}
	}
	// float32 overflows sooner.
	m32, err := Cast[float32](Decoder[float64](m))
	if err != nil {
		t.Fatal(err)
	}
	x32 := make([]float32, len(x))
	for i, v := range x {
		x32[i] = float32(v)
	}
	r32, err := Decode(ctx, m32, Batch[float32]{X: x32}, cap)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range r32 {
		if !r.NonFinite || r.Stopped || len(r.Tokens) >= len(res[i].Tokens) {
			t.Fatalf("float32 row %d: non-finite %v stopped %v after %d tokens, want non-finite before float64's %d", i, r.NonFinite, r.Stopped, len(r.Tokens), len(res[i].Tokens))
		}
	}
	// An observer (the attack objective) sees no live row with
	// non-finite logits.
	tp := ad.NewTape[float64](false)
	in := Input[float64]{X: tp.Const(ad.FromSlice(x, 3, size(m)))}
	v := m.Vocab()
	_, err = Greedy(tp, Decoder[float64](m), in, GreedyOptions[float64]{MaxSteps: cap, OnStep: func(step int, o *ad.Node[float64], rows []int, live []bool) {
		for k := range rows {
			if live[k] && !finite(o.Value.Data[k*v:(k+1)*v]) {
				t.Fatalf("step %d: row %d live with non-finite logits", step, rows[k])
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
}
