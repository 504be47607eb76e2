package bench

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/model"
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
		if _, err := json.Marshal(rep); err != nil {
			t.Fatalf("report does not encode: %v", err)
		}
	}
}
