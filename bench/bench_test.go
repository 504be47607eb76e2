package bench

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/model"
)

func TestCount(t *testing.T) {
	c := Count(model.DefaultCaptionerConfig())
	// conv1: 14·56 outputs × 8 channels × 9 MACs; conv2: 7·28 × 16 × 72;
	// fc1 3136·64; fc2 64·32; 2 FLOPs per MAC.
	want := 2.0 * (14*56*8*9 + 7*28*16*72 + 3136*128 + 128*32)
	if c.Encoder != want {
		t.Fatalf("encoder FLOPs %v, want %v", c.Encoder, want)
	}
	if c.FirstConv != 2.0*14*56*8*9 || c.Step != 2.0*(32*32+32*32+32*11) {
		t.Fatalf("counts %+v", c)
	}
}

func TestRunSmall(t *testing.T) {
	m, err := model.NewCaptioner[float32](model.DefaultCaptionerConfig(), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Reps: 1, DecodeN: 64, TrainBatch: 8, GradSteps: 3, GEMMSize: 64, Seed: 1, DecodeSteps: 4, PGDBatch: 4}
	rep, err := Run(context.Background(), m, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Measurements) != 3 || rep.GEMMGFLOPS <= 0 || rep.RandomEvalsPerSec <= 0 || rep.PGDStepsPerSecPerImage <= 0 {
		t.Fatalf("report %+v", rep)
	}
	for _, ms := range rep.Measurements {
		if !(ms.Seconds > 0 && ms.FLOPs > 0 && ms.Ratio > 0) {
			t.Fatalf("measurement %+v", ms)
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatalf("report does not encode: %v", err)
	}
}
