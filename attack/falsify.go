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
	// Targeted, when the plain attack finds no witness, also pushes the
	// decoder onto each other first token (a targeted continuation: make
	// that token win at step 0, then push eos down), all in one batch. The
	// plain objective only pushes eos down along the current path and
	// gets no gradient towards a path that starts differently.
	Targeted bool
}

// Falsify runs PGD on set with K̂ = k and returns its best input (replayed
// in float64 inside the set, successful or not), or nil when disabled.
func (f Falsifier) Falsify(ctx context.Context, set spec.Region, k, maxSteps int, stream uint64) ([]float64, error) {
	if f.PGD.Steps == 0 {
		return nil, nil
	}
	opt := f.PGD
	opt.MaxSteps = maxSteps
	tg, err := NewTarget(ctx, f.D64, set, k, maxSteps, f.Seed, stream)
	if err != nil {
		return nil, err
	}
	outs, err := PGD(ctx, f.D32, f.D64, []Target{tg}, opt)
	if err != nil {
		return nil, err
	}
	best := outs[0]
	if best.Success || !f.Targeted {
		return best.Input, nil
	}
	var targets []Target
	first := -1
	if len(tg.Original.Tokens) > 0 {
		first = tg.Original.Tokens[0]
	}
	for z := 0; z < f.D32.Vocab(); z++ {
		if z != f.D32.EOS() && z != first {
			t := tg
			t.Prefix = []int{z}
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 || ctx.Err() != nil {
		return best.Input, nil
	}
	more, err := PGD(ctx, f.D32, f.D64, targets, opt)
	if err != nil {
		return nil, err
	}
	for _, o := range more {
		if better(o.Replayed, best.Replayed, maxSteps) {
			best = o
		}
	}
	return best.Input, nil
}
