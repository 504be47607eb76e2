package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
	"github.com/lenspec/lenspec/train"
	"github.com/lenspec/lenspec/verify"
	"github.com/spf13/pflag"
)

// CertifyProbe is what certified training shows after each epoch: how many
// of a fixed set of images the verifier proves at the radius the training
// is for, K̂ = each label's length, as the verification experiment asks.
// The certified loss's own count (the batch's rows whose interval or
// CROWN-IBP bound certifies the label) says 0 of 64 where the verifier
// proves 95 of 100: its bounds are looser than the verifier's, which runs
// CROWN through the convolutions, optimises its relaxation (α-CROWN) and
// branches. The probe runs that verifier, with a short time limit per
// image and no MIP solver or falsifier, so that it costs seconds an epoch
// and counts only proofs.
type CertifyProbe struct {
	Data    Data
	Samples []int
	Eps     float64
	// Options is the verifier the probe runs (ProbeOptions by default).
	Options verify.Options
	// Progress, if set, hears of every image verified (stage "certify").
	Progress Progress
}

// ProbeOptions is the verifier a CertifyProbe runs by default: the
// verifier's bounds and branch and bound (verify.DefaultOptions) for limit
// an image, without a MIP solver or a falsifier (a probe counts proofs).
func ProbeOptions(limit time.Duration) verify.Options {
	o := verify.DefaultOptions()
	o.TimeLimit = limit
	return o
}

// CertifyCount is a CertifyProbe's measurement.
type CertifyCount struct {
	Eps    float64 `json:"eps"`
	Images int     `json:"images"`
	Robust int     `json:"robust"`
	// Failed counts the images the verifier failed on (counted as not
	// proven).
	Failed  int     `json:"failed,omitempty"`
	Seconds float64 `json:"seconds"`
	// Limit is the verifier's time limit per image, in seconds.
	Limit float64 `json:"limit_seconds"`
}

// String is the count as training's progress line shows it.
func (c CertifyCount) String() string {
	return fmt.Sprintf("verifier %d/%d at δ=%g", c.Robust, c.Images, c.Eps)
}

// Validate checks the probe before any work.
func (p CertifyProbe) Validate() error {
	var errs []error
	if p.Data.Source == nil || len(p.Samples) == 0 {
		errs = append(errs, errors.New("certify probe: no data or no images"))
	} else {
		for _, i := range p.Samples {
			if i < 0 || i >= p.Data.Source.Len() {
				errs = append(errs, fmt.Errorf("certify probe: image %d outside the data set of %d", i, p.Data.Source.Len()))
				break
			}
		}
	}
	if !(p.Eps > 0) || math.IsInf(p.Eps, 0) { // the model's range is checked by each ball
		errs = append(errs, fmt.Errorf("certify probe: radius %v must be finite and positive", p.Eps))
	}
	if p.Options.TimeLimit <= 0 {
		errs = append(errs, fmt.Errorf("certify probe: time limit %v must be positive", p.Options.TimeLimit))
	}
	if err := p.Options.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("certify probe: %w", err))
	}
	return errors.Join(errs...)
}

// Count verifies every image of the probe on d (converted to float64, as
// the verifier replays in float64) and counts the robust verdicts. A
// sample the verifier fails on counts as not proven (and in Failed).
func (p CertifyProbe) Count(ctx context.Context, d model.Decoder[float32]) (CertifyCount, error) {
	out := CertifyCount{Eps: p.Eps, Images: len(p.Samples), Limit: p.Options.TimeLimit.Seconds()}
	if err := p.Validate(); err != nil {
		return out, err
	}
	start := time.Now()
	d64, err := model.Cast[float64](d)
	if err != nil {
		return out, fmt.Errorf("certify probe: %w", err)
	}
	net, err := verify.Lower(d64)
	if err != nil {
		return out, fmt.Errorf("certify probe: %w", err)
	}
	in := d64.Input()
	for k, i := range p.Samples {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		x, label := p.Data.sample(i)
		ball, err := spec.NewBall(x, p.Eps, in.Min, in.Max)
		if err != nil {
			return out, fmt.Errorf("certify probe: image %d: %w", i, err)
		}
		res, err := verify.Verify(ctx, net, d64, verify.Sample{Name: fmt.Sprint(i), Set: ball, K: len(label), Stream: uint64(i)}, p.Options)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		switch {
		case err != nil:
			out.Failed++
		case res.Verdict == verify.Robust:
			out.Robust++
		}
		if p.Progress != nil {
			p.Progress("certify", k+1, len(p.Samples), fmt.Sprintf("proven %d", out.Robust))
		}
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// NewCertifyProbe is the probe on the first n images the verification
// experiment draws from data (PickSamples with seed 1, as lenspec
// experiment mmnist-verify does: its headline's first n images) at radius
// eps, with the default probe verifier for limit an image. It is checked
// (Validate) before it is returned.
func NewCertifyProbe(data Data, n int, eps float64, limit time.Duration) (CertifyProbe, error) {
	if data.Source == nil {
		return CertifyProbe{}, errors.New("certify probe: no data")
	}
	picked, err := PickSamples(n, nil, data.Source.Len(), 1)
	if err != nil {
		return CertifyProbe{}, fmt.Errorf("certify probe: %w", err)
	}
	p := CertifyProbe{Data: data, Samples: picked, Eps: eps, Options: ProbeOptions(limit)}
	return p, p.Validate()
}

// ProbeSettings are the settings of the verifier's count after each epoch
// of a captioner's training (lenspec train captioner --certify-*).
type ProbeSettings struct {
	// Images is how many of the headline's test images are verified (0:
	// no probe).
	Images int
	// Eps is their radius; 0 takes the certified loss's (Options.IBPEps).
	Eps float64
	// Timeout is the verifier's time limit per image.
	Timeout time.Duration
}

// DefaultProbeSettings are lenspec train captioner's: no probe, and 5 s an
// image when one is asked for (on models/mmnist-rnn-crown-e12 at δ = 0.1,
// 86 of the 95 images the 60 s verifier proves, in 110 s for 100 images).
func DefaultProbeSettings() ProbeSettings { return ProbeSettings{Timeout: 5 * time.Second} }

// RegisterFlags adds the settings to fs as lenspec train captioner's
// --certify-* flags, each starting at s's value.
func (s *ProbeSettings) RegisterFlags(fs *pflag.FlagSet) {
	fs.IntVar(&s.Images, "certify-images", s.Images, "after every epoch, verify this many test images (the first of lenspec experiment mmnist-verify's draw) with the verifier's bounds and branch and bound, and show how many it proves (0: off)")
	fs.Float64Var(&s.Eps, "certify-eps", s.Eps, "radius of --certify-images (default: --ibp-eps)")
	fs.DurationVar(&s.Timeout, "certify-timeout", s.Timeout, "the verifier's time limit per image of --certify-images")
}

// ValidateFlags checks settings set by RegisterFlags, for a training run
// with opt on a model reading in, before any work (changed reports the
// flags given), and returns the probe's radius. Its errors are
// SettingsErrors.
func (s ProbeSettings) ValidateFlags(changed func(flag string) bool, opt train.Options, in model.InputSpec) (float64, error) {
	bad := func(format string, args ...any) (float64, error) {
		return 0, SettingsError{fmt.Errorf(format, args...)}
	}
	if s.Images < 0 {
		return bad("--certify-images %d is negative", s.Images)
	}
	if err := train.SwitchedBy(changed, "certify-images", s.Images > 0, "certify-eps", "certify-timeout"); err != nil || s.Images == 0 {
		return 0, settingsErr(err)
	}
	eps := s.Eps
	if !changed("certify-eps") {
		if eps = opt.IBPEps; opt.IBP == 0 {
			return bad("--certify-images needs a radius: set --certify-eps, or --ibp-eps with --ibp")
		}
	}
	if err := spec.CheckRadius(eps, in.Min, in.Max); err != nil || eps == 0 {
		return bad("--certify-eps %v: want a positive radius no wider than the input range [%v, %v]", eps, in.Min, in.Max)
	}
	if s.Timeout <= 0 {
		return bad("--certify-timeout %v must be positive", s.Timeout)
	}
	return eps, nil
}

// Attach sets run's Probe to count the verifier's proofs on the first
// Images images of data at eps (progress hears of each image), and
// returns the status line it keeps: the last count, empty until the first
// epoch ends. With Images 0 it leaves run alone.
func (s ProbeSettings) Attach(run *train.CaptionerRun, data Data, eps float64, progress Progress) (*string, error) {
	status := new(string)
	if s.Images == 0 {
		return status, nil
	}
	p, err := NewCertifyProbe(data, s.Images, eps, s.Timeout)
	if err != nil {
		return nil, SettingsError{err}
	}
	p.Progress = progress
	run.Probe = func(ctx context.Context, _ int, d model.Decoder[float32]) (any, error) {
		n, err := p.Count(ctx, d)
		*status = " " + n.String()
		return n, err
	}
	return status, nil
}
