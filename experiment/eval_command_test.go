package experiment

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestEvalSettings: lenspec eval's settings are checked as
// SettingsErrors, per kind of model, before a captioner's data are asked
// for.
func TestEvalSettings(t *testing.T) {
	img := tinyModelDir(t, 3)
	text := tinyTextModel(t).Dir
	for _, tc := range []struct {
		args []string
		want string // a SettingsError's words; "" for errNoData
	}{
		{nil, "--model is required"},
		{[]string{"--model", img, "--max-steps", "0"}, "--max-steps 0: want 1.."},
		{[]string{"--model", img, "--split", "dev"}, `--split "dev": want train or test`},
		{[]string{"--model", img}, ""},
		{[]string{"--model", text, "--examples", "-1"}, "--examples -1 must be non-negative"},
		{[]string{"--model", text, "--max-steps", "100000000"}, "--max-steps 100000000: want 1.."},
	} {
		var s EvalSettings
		fs := pflag.NewFlagSet("eval", pflag.ContinueOnError)
		s.RegisterFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		env := Env{Changed: fs.Changed, Sources: func() (Sources, error) { return Sources{}, errNoData }}
		_, err := s.Evaluate(context.Background(), env, nil)
		if tc.want == "" {
			if !errors.Is(err, errNoData) {
				t.Errorf("%v: %v, want the data asked for", tc.args, err)
			}
		} else if !isSettings(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a SettingsError with %q", tc.args, err, tc.want)
		}
	}
}
