package train

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/lenspec/lenspec/model"
)

// TestTransformerTranslatorLearnsAndResumes: the transformer translator
// learns the synthetic task through Fit (bucketed batches, two shards,
// dropout, teacher forcing over whole targets) well enough to translate
// held-out sentences, and a run interrupted in its second epoch resumes
// to the uninterrupted run's weights exactly.
func TestTransformerTranslatorLearnsAndResumes(t *testing.T) {
	cfg := model.DefaultTransformerTranslatorConfig(24, 0, 1, 2, 3)
	a := cfg.Arch.(*model.TransformerTranslatorConfig)
	a.DModel, a.NHead, a.EncoderLayers, a.DecoderLayers, a.FF = 32, 4, 1, 2, 64
	cfg.MaxSteps = 12
	fresh := func() model.Decoder[float32] {
		m, err := model.New[float32](&cfg, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	src, tgt := syntheticPairs(1000, 2)
	pairs := NewTokenPairs(src, tgt)
	opt := Options{Seed: 1, Epochs: 20, BatchSize: 32, LR: 3e-3, FinalLR: 1e-4, ClipNorm: 1, Dropout: 0.1, Shards: 2}
	ctx := context.Background()
	m := fresh()
	last, err := Fit(ctx, m, pairs, opt)
	if err != nil {
		t.Fatal(err)
	}
	testSrc, testTgt := syntheticPairs(200, 99)
	res, err := model.Decode(ctx, m, model.Batch[float32]{Tokens: testSrc}, 12)
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

	o := opt
	o.CheckpointDir, o.CheckpointEvery = t.TempDir(), time.Nanosecond
	cctx, cancel := context.WithCancel(ctx)
	o.Progress = func(p Progress) {
		if p.Step == len(src)/opt.BatchSize+3 {
			cancel()
		}
	}
	if _, err := Fit(cctx, fresh(), pairs, o); err == nil {
		t.Fatal("cancelled run returned no error")
	}
	o.Progress = nil
	m2 := fresh()
	resumed, err := Fit(ctx, m2, pairs, o)
	if err != nil {
		t.Fatal(err)
	}
	if resumed != last {
		t.Fatalf("last epoch's mean loss: resumed %v, uninterrupted %v", resumed, last)
	}
	for i, p := range m2.Params() {
		if !slices.Equal(p.W.Data, m.Params()[i].W.Data) {
			t.Fatalf("%s: resumed weights differ from the uninterrupted run's", p.Name)
		}
	}
}
