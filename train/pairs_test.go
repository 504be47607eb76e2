package train

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lenspec/lenspec/model"
)

// syntheticPairs is a toy translation task over token ids: a source word w
// (ids 4..13) translates to target word w+10, and the target reverses the
// source's order, so the model must use its attention and its recurrence.
func syntheticPairs(n int, seed uint64) (src, tgt [][]int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for range n {
		l := 1 + rng.IntN(5)
		s, t := make([]int, l), make([]int, l)
		for i := range s {
			s[i] = 4 + rng.IntN(10)
			t[l-1-i] = s[i] + 10
		}
		src, tgt = append(src, s), append(tgt, t)
	}
	return src, tgt
}

// TestTokenPairsBatches: an epoch's batches hold every example at most
// once, are whole, depend only on the seed, and pad far less than a plain
// shuffle.
func TestTokenPairsBatches(t *testing.T) {
	src, tgt := syntheticPairs(1000, 1)
	p := NewTokenPairs(src, tgt)
	b1 := p.Batches(16, rand.New(rand.NewPCG(3, 3)))
	b2 := p.Batches(16, rand.New(rand.NewPCG(3, 3)))
	if len(b1) != 1000/16 {
		t.Fatalf("%d batches", len(b1))
	}
	seen := map[int]bool{}
	padding := func(b []int) int {
		m, sum := 0, 0
		for _, i := range b {
			m, sum = max(m, len(src[i])), sum+len(src[i])
		}
		return m*len(b) - sum
	}
	bucketed, shuffled := 0, 0
	perm := rand.New(rand.NewPCG(4, 4)).Perm(1000)
	for k, b := range b1 {
		if len(b) != 16 || !slices.Equal(b, b2[k]) {
			t.Fatalf("batch %d: %v vs %v", k, b, b2[k])
		}
		for _, i := range b {
			if seen[i] {
				t.Fatalf("example %d twice", i)
			}
			seen[i] = true
		}
		bucketed += padding(b)
		shuffled += padding(perm[k*16 : (k+1)*16])
	}
	if bucketed*4 > shuffled {
		t.Fatalf("bucketed batches pad %d positions, a shuffle %d", bucketed, shuffled)
	}
}

// TestTranslatorLearns: the translator learns the synthetic task through
// Fit (bucketed batches, two shards) well enough to translate held-out
// sentences.
func TestTranslatorLearns(t *testing.T) {
	cfg := model.DefaultTranslatorConfig(24, 0, 1, 2, 3)
	a := cfg.Arch.(*model.TranslatorConfig)
	a.Embedding, a.EncoderHidden, a.DecoderHidden, a.Attention, a.Combine = 16, 16, 32, 16, 32
	cfg.MaxSteps = 12
	m, err := model.NewTranslator[float32](&cfg, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	src, tgt := syntheticPairs(2000, 2)
	opt := Options{Seed: 1, Epochs: 15, BatchSize: 32, LR: 1e-2, FinalLR: 1e-3, ClipNorm: 5, Shards: 2}
	if _, err := Fit(context.Background(), m, NewTokenPairs(src, tgt), opt); err != nil {
		t.Fatal(err)
	}
	testSrc, testTgt := syntheticPairs(200, 99)
	res, err := model.Decode(context.Background(), model.Decoder[float32](m), model.Batch[float32]{Tokens: testSrc}, 12)
	if err != nil {
		t.Fatal(err)
	}
	right := 0
	for i, r := range res {
		if r.Stopped && slices.Equal(r.Tokens, testTgt[i]) {
			right++
		}
	}
	if right < 150 {
		t.Fatalf("%d of 200 held-out sentences translated exactly", right)
	}
	t.Logf("%d of 200 held-out sentences translated exactly", right)
}
