package experiment

import (
	"errors"
	"reflect"
	"testing"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/captions"
	"github.com/spf13/pflag"
)

// TestCaptionExperimentFlags: the flags start at the paper's experiment,
// set the fields they name, and Validate refuses settings out of range as
// a SettingsError naming the flag.
func TestCaptionExperimentFlags(t *testing.T) {
	parse := func(t *testing.T, args ...string) CaptionExperiment {
		t.Helper()
		var e CaptionExperiment
		fs := pflag.NewFlagSet("caption-attack", pflag.ContinueOnError)
		e.RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := parse(t, "--model", "a/m1", "--out", "o")
	want := CaptionExperiment{Models: []string{"a/m1"}, Out: "o", Images: 500, Eps: []float64{0.5}, Samples: 10000, Steps: 1000,
		LR: 0.01, Restarts: 4, Clip: 1, Losses: []attack.Loss{attack.LossMargin, attack.LossEOSLogProb}, MaxSteps: 200,
		Cap: captions.MaxTokens, Batch: 25, Seed: 1}
	if !reflect.DeepEqual(e, want) {
		t.Fatalf("defaults\n%+v\nwant\n%+v", e, want)
	}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	if e := parse(t, "--model", "m", "--out", "o", "--losses", " eos-logprob "); !reflect.DeepEqual(e.Losses, []attack.Loss{attack.LossEOSLogProb}) {
		t.Fatalf("--losses eos-logprob: %v", e.Losses)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", "o"}, "--model and --out are required"},
		{[]string{"--model", "m"}, "--model and --out are required"},
		{[]string{"--model", "m", "--out", "o", "--images", "0"}, "--images must be positive, --first and --cap non-negative"},
		{[]string{"--model", "m", "--out", "o", "--first", "-1"}, "--images must be positive, --first and --cap non-negative"},
		// What lenspec attack refuses, refused before any model is loaded:
		// a search that would not search, a step cap the model's would
		// silently replace.
		{[]string{"--model", "m", "--out", "o", "--samples", "-1"}, "--samples -1: want 1..1000000000"},
		{[]string{"--model", "m", "--out", "o", "--samples", "0"}, "--samples 0: want 1..1000000000"},
		{[]string{"--model", "m", "--out", "o", "--steps", "0"}, "--steps 0: want 1..1000000000"},
		{[]string{"--model", "m", "--out", "o", "--restarts", "0"}, "--restarts 0: want at least 1 (the first run starts from the input itself)"},
		{[]string{"--model", "m", "--out", "o", "--max-steps", "0"}, "--max-steps 0: want 1..10000"},
		{[]string{"--model", "m", "--out", "o", "--eps", "0.5,0"}, "--eps 0: want positive, finite radii"},
		{[]string{"--model", "m", "--out", "o", "--lr", "0"}, "PGD learning rate 0 must be positive and finite"},
		{[]string{"--model", "m", "--out", "o", "--clip", "NaN"}, "PGD clip ε NaN must be positive and finite"},
		{[]string{"--model", "m", "--out", "o", "--cap", "-1"}, "--images must be positive, --first and --cap non-negative"},
		{[]string{"--model", "a/m", "--model", "b/m/", "--out", "o"}, "--model b/m/: two models named m (their records would share OUT/m)"},
		{[]string{"--model", "m", "--out", "o", "--losses", "margin,hinge"}, func() string { _, err := attack.ParseLoss("hinge"); return err.Error() }()},
	} {
		e := parse(t, tc.args...)
		err := e.Validate()
		if err == nil || err.Error() != tc.want || !errors.As(err, new(SettingsError)) {
			t.Errorf("%q: got %v, want the SettingsError %q", tc.args, err, tc.want)
		}
		if _, _, err := e.Run(t.Context()); err == nil || err.Error() != tc.want {
			t.Errorf("%q: Run: got %v, want %q", tc.args, err, tc.want)
		}
	}
}
