package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// TestNMTTrainingSettings: lenspec train nmt's settings out of range are
// SettingsErrors, a --vocab too small for the corpus's characters too,
// though it is known only once the corpus is read.
func TestNMTTrainingSettings(t *testing.T) {
	var b strings.Builder
	for _, s := range [][2]string{{"Das Haus", "The house"}, {"Der Hund", "The dog"}, {"Die Katze", "The cat"}, {"Das Auto", "The car"}} {
		for _, a := range [][2]string{{"groß", "big"}, {"klein", "small"}, {"alt", "old"}, {"neu", "new"}, {"schön", "nice"}} {
			for _, v := range [][2]string{{"", ""}, {"sehr ", "very "}, {"nicht ", "not "}} {
				fmt.Fprintf(&b, "%s ist %s%s.\t%s is %s%s.\n", s[0], v[0], a[0], s[1], v[1], a[1])
			}
		}
	}
	tsv := filepath.Join(t.TempDir(), "toy.tsv")
	if err := os.WriteFile(tsv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", t.TempDir(), "--vocab", "10"}, "--vocab 10 must be in 261.."},
		{[]string{"--out", t.TempDir(), "--corpus", tsv, "--vocab", "270"}, "--vocab 270 is below the"},
	} {
		tr := NewNMTTraining()
		fs := pflag.NewFlagSet("nmt", pflag.ContinueOnError)
		tr.RegisterFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		env := Env{Changed: fs.Changed, Logf: func(string, ...any) {}}
		_, err := tr.Train(context.Background(), env, "lenspec train nmt", func(string, int, int, string) {})
		if !isSettings(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a SettingsError with %q", tc.args, err, tc.want)
		}
	}
}
