package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// LengthBound is the worst-case output length over a set: some input of
// the set decodes at least Lower tokens (a float64 replay with no tie on
// the steps that decide it), and none decodes more than Upper (proven).
// Lower == Upper is a certified worst case.
type LengthBound struct {
	Lower int
	// Upper is the proven maximum, or −1 when no K̂ up to the search's
	// end was proven (UpperOpen then says from where the search gave up).
	Upper int
	// Witness is an input decoding Lower tokens (nil: the set's centre).
	Witness       []float64
	WitnessResult model.Result
	// Steps are the verifications run, in order.
	Steps []BoundStep
}

// Certified reports whether the worst case is known exactly.
func (b *LengthBound) Certified() bool { return b.Upper >= 0 && b.Lower == b.Upper }

// BoundStep is one verification of a Bound search.
type BoundStep struct {
	K       int     `json:"k"`
	Verdict Verdict `json:"verdict"`
	Stage   string  `json:"stage,omitempty"`
	Seconds float64 `json:"seconds"`
	Reason  string  `json:"reason,omitempty"`
}

// BoundOptions configures Bound.
type BoundOptions struct {
	Options
	// MaxK is the largest K̂ tried (≤ 0: MaxK, capped by the step cap).
	MaxK int
}

// Bound searches for the worst-case output length over set: starting from
// the centre's length, it verifies K̂ = the longest length found so far. A
// witness raises the lower bound to its length and the search goes on; a
// proof ends it (Upper = K̂, certified); an unknown moves K̂ up by one until
// a proof, a witness or MaxK. Each verification has opt.TimeLimit; ctx
// bounds the whole search. A cancelled search returns what it had with
// ctx's error.
func Bound(ctx context.Context, net *Net, d64 model.Decoder[float64], set spec.Region, stream uint64, opt BoundOptions) (*LengthBound, error) {
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("bound: %w", err)
	}
	maxK := opt.MaxK
	if maxK <= 0 || maxK > MaxK {
		maxK = MaxK
	}
	maxSteps := opt.MaxSteps
	if maxSteps <= 0 {
		maxSteps = d64.MaxSteps()
	}
	// K̂ = maxSteps − 1 is the last one a decoding capped at maxSteps can
	// tell apart; an output at the cap is "at least maxSteps".
	maxK = min(maxK, maxSteps-1)
	out := &LengthBound{Upper: -1}
	centre, err := model.Decode(ctx, d64, model.Batch[float64]{X: set.Center()}, maxSteps)
	if err != nil {
		return nil, err
	}
	out.WitnessResult = centre[0]
	if !centre[0].Tie() {
		out.Lower = len(centre[0].Tokens)
	}
	for k := out.Lower; k <= maxK; {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		t0 := time.Now()
		r, err := Verify(ctx, net, d64, Sample{Name: fmt.Sprintf("bound-k%d", k), Set: set, K: k, Stream: stream}, opt.Options)
		if err != nil {
			if stopped(err) {
				return out, err
			}
			return nil, err
		}
		out.Steps = append(out.Steps, BoundStep{K: k, Verdict: r.Verdict, Stage: r.Stage, Seconds: time.Since(t0).Seconds(), Reason: r.Reason})
		switch r.Verdict {
		case Robust:
			out.Upper = k
			return out, nil
		case Vulnerable:
			// The witness decodes more than k tokens, judged on steps
			// 0..k; its full length counts where its whole path is clear.
			l := k + 1
			if !r.WitnessResult.Tie() {
				l = max(l, len(r.WitnessResult.Tokens))
			}
			out.Lower, out.Witness, out.WitnessResult = l, r.Witness, r.WitnessResult
			k = l
		default:
			k++
		}
	}
	return out, ctx.Err()
}
