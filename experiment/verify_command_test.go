package experiment

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestVerifyFlags: no flags give DefaultVerifySettings; the flags set the
// VerifyConfig lenspec verify runs (--no-mip as solver none, K̂ only when
// given); settings errors are SettingsErrors, before the data are asked
// for; a spec file refuses the flags it stands in for.
func TestVerifyFlags(t *testing.T) {
	dir := tinyModelDir(t, 2)
	m := loadModel(t, dir)
	out := filepath.Join(t.TempDir(), "v.jsonl")
	for _, tc := range []struct {
		args []string
		want func(*VerifySettings)
		err  string
	}{
		{nil, func(*VerifySettings) {}, ""},
		{[]string{"--no-mip", "--max-len", "3", "--timeout", "5s", "--seed", "4"}, func(s *VerifySettings) {
			s.Solver, s.MaxLen, s.Timeout, s.Seed = SolverNone, 3, 5, 4
		}, ""},
		{[]string{"--max-len", "-1"}, nil, "--max-len -1"},
		{[]string{"--timeout", "-1s"}, nil, "timeout"},
		{[]string{"--eps", "NaN"}, nil, "eps"},
		{[]string{"--bab=false", "--cut-multipliers"}, nil, "--cut-multipliers is read only with --bab, which is off: set --bab, or drop --cut-multipliers"},
		{[]string{"--bab=false", "--clip-input"}, nil, "--clip-input is read only with --bab, which is off: set --bab, or drop --clip-input"},
		{[]string{"--bab=false", "--cuts"}, nil, "--cuts is read only with --bab, which is off: set --bab, or drop --cuts"},
	} {
		f := &VerifyFlags{}
		fs := pflag.NewFlagSet("verify", pflag.ContinueOnError)
		f.RegisterFlags(fs, true)
		if err := fs.Parse(append([]string{"--model", dir, "--out", out, "--eps", "0.1", "--images", "1"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		env := Env{Changed: fs.Changed, Getenv: func(string) string { return "" },
			Sources: func() (Sources, error) { return Sources{}, errNoData }}
		_, err := f.Verification(context.Background(), env)
		if tc.err != "" {
			if !isSettings(err) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: %v, want a SettingsError with %q", tc.args, err, tc.err)
			}
			continue
		}
		if !errors.Is(err, errNoData) {
			t.Errorf("%v: %v, want the data asked for", tc.args, err)
			continue
		}
		cfg, err := f.Config(env, Whole, m)
		if err != nil {
			t.Fatal(err)
		}
		want := VerifyConfig{Model: m, Eps: []float64{0.1}, Settings: DefaultVerifySettings()}
		tc.want(&want.Settings)
		if err := want.Validate(); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cfg.Settings, want.Settings) || cfg.Out != out {
			t.Errorf("%v: settings\n%+v\nwant\n%+v", tc.args, cfg.Settings, want.Settings)
		}
	}
	f := &VerifyFlags{SpecPath: "spec.json"}
	changed := func(flag string) bool { return flag == "eps" }
	if _, err := f.Spec(context.Background(), Env{Changed: changed}); !isSettings(err) || !strings.Contains(err.Error(), "drop --eps") {
		t.Errorf("spec beside --eps: %v", err)
	}
}
