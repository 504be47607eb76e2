package experiment

import (
	"reflect"
	"testing"

	"github.com/lenspec/lenspec/verify"
	"github.com/spf13/pflag"
)

// TestVerifySettingsFlags: given no flags the settings stay the library's
// defaults, the help shows them, and each flag sets its field (--timeout
// as a duration, kept in seconds).
func TestVerifySettingsFlags(t *testing.T) {
	parse := func(t *testing.T, args ...string) (VerifySettings, *pflag.FlagSet, error) {
		t.Helper()
		s := DefaultVerifySettings()
		fs := pflag.NewFlagSet("verify", pflag.ContinueOnError)
		s.RegisterFlags(fs)
		return s, fs, fs.Parse(args)
	}
	got, fs, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultVerifySettings()
	want.SolverBinary = "cbc" // the binary --solver external runs
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("no flags:\n%+v\nwant the defaults\n%+v", got, want)
	}
	if d, lib := fs.Lookup("timeout").DefValue, verify.DefaultOptions().TimeLimit.String(); d != lib {
		t.Fatalf("--timeout shows default %s, the library's is %s", d, lib)
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Value.String() != f.DefValue && f.Value.Type() != "stringArray" {
			t.Errorf("--%s starts at %s, its help says %s", f.Name, f.Value, f.DefValue)
		}
	})
	for _, tc := range []struct {
		args []string
		set  func(*VerifySettings)
	}{
		{[]string{"--timeout", "1m30s"}, func(s *VerifySettings) { s.Timeout = 90 }},
		{[]string{"--timeout", "250ms"}, func(s *VerifySettings) { s.Timeout = 0.25 }},
		{[]string{"--bounds", "interval", "--bab=false", "--threads", "3"}, func(s *VerifySettings) { s.Bounds, s.BaB, s.Threads = "interval", false, 3 }},
		{[]string{"--attack-steps", "7", "--attack-restarts", "1", "--search-restarts", "0", "--attack-lr", "0.5", "--attack-targeted"},
			func(s *VerifySettings) {
				s.AttackSteps, s.AttackRestarts, s.SearchRestarts, s.AttackLR, s.AttackTargeted = 7, 1, 0, 0.5, true
			}},
		{[]string{"--solver", "external", "--solver-binary", "scip", "--solver-param=-a", "--solver-param=b"},
			func(s *VerifySettings) {
				s.Solver, s.SolverBinary, s.SolverParams = "external", "scip", []string{"-a", "b"}
			}},
		{[]string{"--optimize", "--tokens=false", "--abstract=false", "--relax-gap", "0.1", "--cuts", "--clip-input", "--safety", "0.01"},
			func(s *VerifySettings) {
				s.Optimize, s.Tokens, s.Abstract, s.RelaxGap, s.Cuts, s.Clip, s.Safety = true, false, false, 0.1, true, true, 0.01
			}},
		{[]string{"--cut-multipliers"}, func(s *VerifySettings) { s.CutMultipliers = true }},
	} {
		got, _, err := parse(t, tc.args...)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		want := DefaultVerifySettings()
		want.SolverBinary = "cbc"
		tc.set(&want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n%+v\nwant\n%+v", tc.args, got, want)
		}
	}
	if _, _, err := parse(t, "--timeout", "60"); err == nil {
		t.Fatal("--timeout 60 (no unit) accepted")
	}
}
