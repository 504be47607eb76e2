package train

import (
	"reflect"
	"testing"

	"github.com/lenspec/lenspec/model"
	"github.com/spf13/pflag"
)

// TestOptionsFlags: the flags start at the options' values, set the
// fields they name, and ValidateFlags refuses a setting of a feature that
// is off, after the certified loss's and before the regulariser's checks
// as the captioner command always has.
func TestOptionsFlags(t *testing.T) {
	parse := func(t *testing.T, args ...string) (Options, *pflag.FlagSet) {
		t.Helper()
		o := DefaultOptions()
		fs := pflag.NewFlagSet("train", pflag.ContinueOnError)
		o.RegisterOptimiserFlags(fs)
		o.RegisterRobustnessFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return o, fs
	}
	o, fs := parse(t)
	want := DefaultOptions()
	want.IBPBound = model.BoundInterval
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("no flags:\n%+v\nwant the defaults\n%+v", o, want)
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Value.String() != f.DefValue {
			t.Errorf("--%s starts at %s, its help says %s", f.Name, f.Value, f.DefValue)
		}
	})
	o, _ = parse(t, "--lr", "0.5", "--final-lr", "0.1", "--clip-norm", "2", "--shards", "3", "--ibp", "0.5", "--ibp-eps", "0.1",
		"--ibp-ramp", "0.2", "--ibp-bound", "crown-ibp", "--ibp-attack", "--stability", "1", "--stability-eps", "0.05", "--stability-ramp", "0.3")
	want = DefaultOptions()
	want.LR, want.FinalLR, want.ClipNorm, want.Shards = 0.5, 0.1, 2, 3
	want.IBP, want.IBPEps, want.IBPRamp, want.IBPBound, want.IBPAttack = 0.5, 0.1, 0.2, model.BoundCROWNIBP, true
	want.Stability, want.StabilityEps, want.StabilityRamp = 1, 0.05, 0.3
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("every flag set:\n%+v\nwant\n%+v", o, want)
	}
	for _, tc := range []struct {
		args []string
		want string // "": valid
	}{
		{nil, ""},
		{[]string{"--ibp", "0.5", "--ibp-eps", "0.1", "--ibp-attack"}, ""},
		{[]string{"--stability", "1", "--stability-eps", "0.1", "--stability-ramp", "0.5"}, ""},
		{[]string{"--ibp-eps", "0.1"}, "--ibp-eps is read only with --ibp, which is off: set --ibp, or drop --ibp-eps"},
		{[]string{"--ibp-bound", "crown-ibp"}, "--ibp-bound is read only with --ibp, which is off: set --ibp, or drop --ibp-bound"},
		{[]string{"--ibp-attack=false"}, "--ibp-attack is read only with --ibp, which is off: set --ibp, or drop --ibp-attack"},
		{[]string{"--stability-eps", "0.1"}, "--stability-eps is read only with --stability, which is off: set --stability, or drop --stability-eps"},
		{[]string{"--stability-ramp", "0.1"}, "--stability-ramp is read only with --stability, which is off: set --stability, or drop --stability-ramp"},
		// The certified loss's flags first, then Validate, then the regulariser's.
		{[]string{"--ibp-ramp", "0.1", "--lr", "0"}, "--ibp-ramp is read only with --ibp, which is off: set --ibp, or drop --ibp-ramp"},
		{[]string{"--stability-eps", "0.1", "--lr", "0"}, "learning rate 0 must be positive and finite"},
		{[]string{"--lr", "NaN"}, "learning rate NaN must be positive and finite"},
	} {
		o, fs := parse(t, tc.args...)
		err := o.ValidateFlags(fs.Changed)
		if got := ""; err != nil {
			got = err.Error()
			if got != tc.want {
				t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("%q: accepted, want %q", tc.args, tc.want)
		}
	}
}
