package attack

import (
	"context"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// Falsifier is PGD on the proxy objective as a verifier's falsifier: a
// short batched attack whose best input the verifier replays. On image
// regions it satisfies verify.Falsifier (Falsify) without either package
// importing the other; FalsifyIn runs it on a set of any kind.
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

// Falsify runs the falsifier on an image region with K̂ = k and returns
// its best input (replayed in float64 inside the set, successful or not),
// or nil when disabled.
func (f Falsifier) Falsify(ctx context.Context, set spec.Region, k, maxSteps int, stream uint64) ([]float64, error) {
	o, err := FalsifyIn(ctx, f, NewContinuous(set), k, maxSteps, stream)
	return o.Input, err
}

// FalsifyIn runs f on a set of any kind PGD can relax, with K̂ = k, and
// returns its best outcome (successful or not; the zero Outcome when f is
// disabled).
func FalsifyIn[E any](ctx context.Context, f Falsifier, set Relaxable[E], k, maxSteps int, stream uint64) (Outcome[E], error) {
	if f.PGD.Steps == 0 {
		return Outcome[E]{}, nil
	}
	opt := f.PGD
	opt.MaxSteps = maxSteps
	tg, err := NewTarget[E](ctx, f.D64, set, k, maxSteps, f.Seed, stream)
	if err != nil {
		return Outcome[E]{}, err
	}
	outs, err := PGD(ctx, f.D32, f.D64, []Target[E]{tg}, opt)
	if err != nil {
		return Outcome[E]{}, err
	}
	best := outs[0]
	if best.Success || !f.Targeted {
		return best, nil
	}
	var targets []Target[E]
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
		return best, nil
	}
	more, err := PGD(ctx, f.D32, f.D64, targets, opt)
	if err != nil {
		return Outcome[E]{}, err
	}
	for _, o := range more {
		if better(o.Replayed, best.Replayed, capSteps(maxSteps, f.D32)) {
			best = o
		}
	}
	return best, nil
}
