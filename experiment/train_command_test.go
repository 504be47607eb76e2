package experiment

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestTrainingSettings: lenspec train captioner's and showtell's settings
// are checked as SettingsErrors before the data are asked for, and the
// flags start at the recipes' values.
func TestTrainingSettings(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m")
	type trainer interface {
		RegisterFlags(*pflag.FlagSet)
	}
	run := func(tr trainer, args []string) error {
		fs := pflag.NewFlagSet("train", pflag.ContinueOnError)
		tr.RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		env := Env{Changed: fs.Changed, Sources: func() (Sources, error) { return Sources{}, errNoData }}
		switch tr := tr.(type) {
		case *CaptionerTraining:
			_, err := tr.Train(context.Background(), env, nil)
			return err
		case *ShowTellTraining:
			_, err := tr.Train(context.Background(), env, nil)
			return err
		}
		panic("unknown trainer")
	}
	for _, tc := range []struct {
		showtell bool
		args     []string
		want     string // a SettingsError's words; "" for errNoData
	}{
		{false, nil, "--out is required"},
		{false, []string{"--out", out}, ""},
		{false, []string{"--out", out, "--epochs", "0"}, "epochs"},
		{false, []string{"--out", out, "--cell", "bogus"}, "bogus"},
		{false, []string{"--out", out, "--certify-images", "3"}, "--certify-images needs a radius"},
		{false, []string{"--out", out, "--certify-images", "3", "--certify-eps", "NaN"}, "--certify-eps NaN"},
		{false, []string{"--out", out, "--certify-timeout", "2s"}, "--certify-timeout"},
		{true, nil, "--out is required"},
		{true, []string{"--out", out}, ""},
		{true, []string{"--out", out, "--lengths", "bogus"}, `--lengths "bogus": want skewed or flat`},
		{true, []string{"--out", out, "--hidden", "0"}, "hidden"},
	} {
		var tr trainer = NewCaptionerTraining()
		if tc.showtell {
			tr = NewShowTellTraining()
		}
		err := run(tr, tc.args)
		if tc.want == "" {
			if !errors.Is(err, errNoData) {
				t.Errorf("showtell %v %v: %v, want the data asked for", tc.showtell, tc.args, err)
			}
		} else if !isSettings(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("showtell %v %v: %v, want a SettingsError with %q", tc.showtell, tc.args, err, tc.want)
		}
	}
	c := NewCaptionerTraining()
	if c.DataSeed != DefaultDataSeed || !c.Shift || c.Probe != DefaultProbeSettings() || c.Run.Epochs == 0 {
		t.Errorf("captioner defaults %+v", c)
	}
	if s := NewShowTellTraining(); s.Lengths != "skewed" || s.DataSeed != DefaultDataSeed || s.Options.PretrainEpochs == 0 {
		t.Errorf("showtell defaults %+v", s)
	}
}
