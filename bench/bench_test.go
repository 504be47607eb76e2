package bench

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/train"
)

// TestRunAccounting: every measurement's FLOPs follow from the model's
// operation count and what was run, and its GEMM time is those FLOPs at
// the reference speed — for both cells, through the decoder contract
// only.
func TestRunAccounting(t *testing.T) {
	for _, cell := range []string{model.CellReLU, model.CellLSTM} {
		cfg := model.DefaultCaptionerConfig()
		cfg.Arch.(*model.CaptionerConfig).Cell = cell
		d, err := model.New[float32](&cfg, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		opt := Options{Reps: 1, DecodeN: 64, TrainBatch: 8, GradSteps: 3, GEMMSize: 64, Seed: 1, DecodeSteps: 4, PGDBatch: 4}
		rep, err := Run(context.Background(), d, opt)
		if err != nil {
			t.Fatal(err)
		}
		c := d.(model.Coster).Cost()
		want := map[string]float64{
			"train step":     8 * (3*(c.Start+4*c.Step) - c.FirstLayer),
			"input gradient": 2 * (c.Start + 3*c.Step),
		}
		if want := 1 + 2*len(coreCounts()); len(rep.Measurements) != want {
			t.Fatalf("%d measurements, want %d", len(rep.Measurements), want)
		}
		for _, ms := range rep.Measurements {
			for prefix, f := range want {
				if strings.HasPrefix(ms.Name, prefix) && ms.FLOPs != f {
					t.Fatalf("%s: %s FLOPs %v, want %v", cell, ms.Name, ms.FLOPs, f)
				}
			}
			if strings.HasPrefix(ms.Name, "greedy decode") {
				// Each row's own steps are counted: a whole number in all.
				steps := (ms.FLOPs - 64*c.Start) / c.Step
				if steps < 64 || steps > 4*64 || math.Abs(steps-math.Round(steps)) > 1e-6*steps {
					t.Fatalf("%s: decode FLOPs imply %v steps for 64 inputs, want 64..256", cell, steps)
				}
			}
			if !(ms.Seconds > 0) || !(ms.Ratio > 0) || math.IsInf(ms.Ratio, 0) {
				t.Fatalf("%s: %+v", cell, ms)
			}
			if math.Abs(ms.GEMMSeconds*rep.GEMMGFLOPS*1e9-ms.FLOPs) > 1e-6*ms.FLOPs {
				t.Fatalf("%s: GEMM time %v for %v FLOPs at %v GFLOP/s", cell, ms.GEMMSeconds, ms.FLOPs, rep.GEMMGFLOPS)
			}
		}
		if rep.RandomEvalsPerSec <= 0 || rep.PGDStepsPerSecPerImage <= 0 {
			t.Fatalf("report %+v", rep)
		}
		// The FMA peak is measured wherever ad has kernels to measure it
		// with, and every record carries it.
		if recs := rep.Records("m"); (rep.PeakGFLOPS > 0) != (ad.PeakFLOPS(1) > 0) || recs[0].PeakGFLOPS != rep.PeakGFLOPS {
			t.Fatalf("FMA peak %v GFLOP/s, first record's %v", rep.PeakGFLOPS, recs[0].PeakGFLOPS)
		}
		if _, err := json.Marshal(rep); err != nil {
			t.Fatalf("report does not encode: %v", err)
		}
	}
}

// TestRunTranslatorAccounting: the translator benchmark counts its
// training FLOPs from the batches' lengths (three forward passes) and its
// translation FLOPs from the outputs' steps, and reports throughputs for
// every thread count it measured.
func TestRunTranslatorAccounting(t *testing.T) {
	tok, err := bpe.Train([]string{" das haus ist klein", " the house is small", " ein kleines haus"}, bpe.TrainOptions{VocabSize: 300, MinFrequency: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.DefaultTranslatorConfig(tok.Size(), bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID)
	a := cfg.Arch.(*model.TranslatorConfig)
	a.Embedding, a.EncoderHidden, a.DecoderHidden, a.Attention, a.Combine = 8, 6, 10, 8, 8
	cfg.Tokenizer, cfg.MaxSteps = tok, 9
	d, err := model.New[float32](&cfg, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	var src, tgt [][]int
	for range 64 {
		s, g := make([]int, 1+rng.IntN(6)), make([]int, rng.IntN(5))
		for i := range s {
			s[i] = 4 + rng.IntN(tok.Size()-4)
		}
		for i := range g {
			g[i] = 4 + rng.IntN(tok.Size()-4)
		}
		src, tgt = append(src, s), append(tgt, g)
	}
	pairs := train.NewTokenPairs(src, tgt)
	opt := TranslatorOptions{Reps: 1, TrainBatch: 8, TrainSteps: 3, GEMMSize: 64, Seed: 1}
	rep, err := RunTranslator(context.Background(), d, TranslatorData{Sources: []string{"das haus", "ein kleines haus ist klein"}, Train: pairs}, opt)
	if err != nil {
		t.Fatal(err)
	}
	var want float64
	for _, b := range pairs.Batches(8, seeded(1))[:3] {
		for _, i := range b {
			want += 3 * a.FLOPs(len(src[i]), len(tgt[i])+1)
		}
	}
	if len(rep.Measurements) != 2*len(coreCounts()) {
		t.Fatalf("%d measurements", len(rep.Measurements))
	}
	for _, m := range rep.Measurements {
		if strings.HasPrefix(m.Name, "train") && m.FLOPs != want {
			t.Fatalf("%s: %v FLOPs, want %v", m.Name, m.FLOPs, want)
		}
		if strings.HasPrefix(m.Name, "translate") {
			lo, hi := a.FLOPs(3, 1)+a.FLOPs(6, 1), a.FLOPs(40, 9)*2
			if m.FLOPs < lo || m.FLOPs > hi {
				t.Fatalf("%s: %v FLOPs outside [%v, %v]", m.Name, m.FLOPs, lo, hi)
			}
		}
		if !(m.Seconds > 0) || !(m.Ratio > 0) {
			t.Fatalf("%+v", m)
		}
	}
	for _, n := range coreCounts() {
		if !(rep.TargetTokensPerSec[n] > 0) || !(rep.SentencesPerSec[n] > 0) {
			t.Fatalf("throughputs %v, %v", rep.TargetTokensPerSec, rep.SentencesPerSec)
		}
	}
	if _, err := RunTranslator(context.Background(), d, TranslatorData{Sources: []string{"x"}, Train: pairs}, TranslatorOptions{Reps: 1, TrainBatch: 64, TrainSteps: 3, GEMMSize: 64}); err == nil {
		t.Fatal("too few training pairs: no error")
	}
}
