package attack

import (
	"context"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// Falsifier is PGD on the proxy objective as a verifier's falsifier (it
// satisfies verify.Falsifier without either package importing the other):
// a short batched attack whose best input the verifier replays.
type Falsifier struct {
	D32 model.Decoder[float32]
	D64 model.Decoder[float64]
	// PGD configures the attack; Steps 0 disables it. Its MaxSteps is set
	// per call.
	PGD PGDOptions
	// Seed and the call's stream seed the random restarts.
	Seed uint64
}

// Falsify runs PGD on set with K̂ = k and returns its best input (replayed
// in float64 inside the set, successful or not), or nil when disabled.
func (f Falsifier) Falsify(ctx context.Context, set spec.Region, k, maxSteps int, stream uint64) ([]float64, error) {
	if f.PGD.Steps == 0 {
		return nil, nil
	}
	opt := f.PGD
	opt.MaxSteps = maxSteps
	outs, err := PGD(ctx, f.D32, f.D64, []Target{{Set: set, K: k, Seed: f.Seed, Stream: stream}}, opt)
	if err != nil {
		return nil, err
	}
	return outs[0].Input, nil
}
