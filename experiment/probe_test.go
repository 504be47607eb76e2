package experiment

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
	"github.com/lenspec/lenspec/train"
	"github.com/lenspec/lenspec/verify"
)

// TestCertifyProbe: at a radius too small to change any decision the probe
// proves exactly the images whose clean output is no longer than their
// label (decoded independently here); at wider radii it counts the
// robust verdicts the verification experiment records with the same
// verifier (not its unknowns), and no image it proves decodes longer than
// its label at any of 300 random points of its ball.
func TestCertifyProbe(t *testing.T) {
	m := loadModel(t, tinyModelDir(t, 6))
	data := testData(20)
	samples := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	ctx := context.Background()
	count := func(eps float64) CertifyCount {
		t.Helper()
		p := CertifyProbe{Data: data, Samples: samples, Eps: eps, Options: ProbeOptions(20 * time.Second)}
		c, err := p.Count(ctx, m.D32)
		if err != nil {
			t.Fatal(err)
		}
		if c.Images != len(samples) || c.Failed != 0 || c.Eps != eps || c.Limit != 20 {
			t.Fatalf("count %+v", c)
		}
		return c
	}
	short := 0
	for _, i := range samples {
		x, label := data.sample(i)
		r, err := model.Decode(ctx, m.D64, model.Batch[float64]{X: x}, m.D64.MaxSteps())
		if err != nil {
			t.Fatal(err)
		}
		if len(r[0].Tokens) <= len(label) && !r[0].Tie() {
			short++
		}
	}
	if short == 0 || short == len(samples) {
		t.Fatalf("%d of %d images decode within their label: the test would check nothing", short, len(samples))
	}
	if c := count(1e-7); c.Robust != short {
		t.Errorf("δ = 1e-7: the probe proves %d, %d decode within their label", c.Robust, short)
	}
	// Where branch and bound leaves some images open (δ = 0.05), the probe
	// counts what the verification experiment records as robust with the
	// same verifier, and at δ = 0.03 it proves some but not all of them.
	for _, eps := range []float64{0.03, 0.05} {
		c := verifyConfig(m, filepath.Join(t.TempDir(), "v.jsonl"), samples)
		c.Data, c.Eps = data, []float64{eps}
		c.Settings.Solver, c.Settings.SearchRestarts, c.Settings.Timeout = SolverNone, 0, 20
		robust, unknown := 0, 0
		if err := RunVerify(ctx, c, func(r VerifyRecord) error {
			switch verify.Verdict(r.Verdict) {
			case verify.Robust:
				robust++
			case verify.Unknown:
				unknown++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		got := count(eps)
		t.Logf("δ = %g: the probe proves %d; the experiment records %d robust, %d unknown", eps, got.Robust, robust, unknown)
		if got.Robust != robust {
			t.Errorf("δ = %g: the probe proves %d, the experiment's verifier %d", eps, got.Robust, robust)
		}
	}
	// Soundness of what it proves, one image at a time.
	in := m.D64.Input()
	proven := 0
	for _, i := range samples {
		p := CertifyProbe{Data: data, Samples: []int{i}, Eps: 0.03, Options: ProbeOptions(20 * time.Second)}
		c, err := p.Count(ctx, m.D32)
		if err != nil {
			t.Fatal(err)
		}
		if c.Robust == 0 {
			continue
		}
		proven++
		x, label := data.sample(i)
		ball, err := spec.NewBall(x, 0.03, in.Min, in.Max)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(i), 3))
		pt := make([]float64, len(x))
		for range 300 {
			ball.Sample(rng, pt)
			r, err := model.Decode(ctx, m.D64, model.Batch[float64]{X: pt}, m.D64.MaxSteps())
			if err != nil {
				t.Fatal(err)
			}
			if len(r[0].Tokens) > len(label) && !r[0].Tie() {
				t.Fatalf("image %d proven at δ = 0.03, but a point of its ball decodes %d > %d tokens", i, len(r[0].Tokens), len(label))
			}
		}
	}
	if proven == 0 || proven == short {
		t.Errorf("%d of %d proven at δ = 0.03: the radius checks nothing", proven, short)
	}
}

// TestCertifyProbeRefuses: bad probes are refused before any work, and a
// cancelled context stops the count.
func TestCertifyProbeRefuses(t *testing.T) {
	m := loadModel(t, tinyModelDir(t, 6))
	ok := CertifyProbe{Data: testData(20), Samples: []int{0, 1}, Eps: 0.1, Options: ProbeOptions(time.Second)}
	for _, c := range []struct {
		name, want string
		edit       func(*CertifyProbe)
	}{
		{"no images", "no data or no images", func(p *CertifyProbe) { p.Samples = nil }},
		{"outside", "image 20 outside the data set of 20", func(p *CertifyProbe) { p.Samples = []int{20} }},
		{"zero radius", "radius 0 must be finite and positive", func(p *CertifyProbe) { p.Eps = 0 }},
		{"NaN radius", "radius NaN", func(p *CertifyProbe) { p.Eps = math.NaN() }},
		{"no limit", "time limit 0s must be positive", func(p *CertifyProbe) { p.Options.TimeLimit = 0 }},
		{"radius past the range", "wider than the input range", func(p *CertifyProbe) { p.Eps = 3 }},
	} {
		p := ok
		c.edit(&p)
		if _, err := p.Count(context.Background(), m.D32); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ok.Count(ctx, m.D32); err != context.Canceled {
		t.Errorf("cancelled: %v", err)
	}
}

// TestProbeSettingsValidateFlags: the probe's flags are refused before any
// work, as settings errors, and its radius defaults to the certified
// loss's.
func TestProbeSettingsValidateFlags(t *testing.T) {
	in := model.InputSpec{Min: -1, Max: 1}
	ibp := func() (o train.Options) { o.IBP, o.IBPEps = 0.001, 0.1; return }
	for _, c := range []struct {
		name    string
		s       ProbeSettings
		changed []string
		opt     train.Options
		eps     float64
		want    string
	}{
		{"off", ProbeSettings{Timeout: time.Second}, nil, train.Options{}, 0, ""},
		{"radius from --ibp-eps", ProbeSettings{Images: 4, Timeout: time.Second}, []string{"certify-images"}, ibp(), 0.1, ""},
		{"own radius", ProbeSettings{Images: 4, Eps: 0.2, Timeout: time.Second}, []string{"certify-images", "certify-eps"}, ibp(), 0.2, ""},
		{"eps without images", ProbeSettings{Eps: 0.1, Timeout: time.Second}, []string{"certify-eps"}, train.Options{}, 0, "--certify-eps is read only with --certify-images, which is off"},
		{"timeout without images", ProbeSettings{Timeout: time.Second}, []string{"certify-timeout"}, train.Options{}, 0, "--certify-timeout is read only with --certify-images"},
		{"negative", ProbeSettings{Images: -1, Timeout: time.Second}, []string{"certify-images"}, ibp(), 0, "--certify-images -1 is negative"},
		{"no radius", ProbeSettings{Images: 4, Timeout: time.Second}, []string{"certify-images"}, train.Options{}, 0, "--certify-images needs a radius"},
		{"too wide", ProbeSettings{Images: 4, Eps: 3, Timeout: time.Second}, []string{"certify-images", "certify-eps"}, train.Options{}, 0, "--certify-eps 3: want a positive radius no wider than the input range [-1, 1]"},
		{"NaN", ProbeSettings{Images: 4, Eps: math.NaN(), Timeout: time.Second}, []string{"certify-images", "certify-eps"}, train.Options{}, 0, "--certify-eps NaN"},
		{"zero radius", ProbeSettings{Images: 4, Timeout: time.Second}, []string{"certify-images", "certify-eps"}, train.Options{}, 0, "--certify-eps 0: want a positive radius"},
		{"no time", ProbeSettings{Images: 4, Eps: 0.1}, []string{"certify-images", "certify-eps"}, train.Options{}, 0, "--certify-timeout 0s must be positive"},
	} {
		changed := func(f string) bool { return slices.Contains(c.changed, f) }
		eps, err := c.s.ValidateFlags(changed, c.opt, in)
		switch {
		case c.want == "" && (err != nil || eps != c.eps):
			t.Errorf("%s: radius %v, error %v; want %v", c.name, eps, err, c.eps)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, new(SettingsError))):
			t.Errorf("%s: error %v, want a settings error with %q", c.name, err, c.want)
		}
	}
}
