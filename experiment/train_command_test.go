package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/train"
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
			_, err := tr.Train(context.Background(), env, "", nil)
			return err
		case *ShowTellTraining:
			_, err := tr.Train(context.Background(), env, "", nil)
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

// shellWords is command split into words as bash splits it.
func shellWords(t *testing.T, command string) []string {
	t.Helper()
	out, err := exec.Command("bash", "-c", `printf '%s\0' `+command).Output()
	if err != nil {
		t.Fatalf("bash cannot read %q: %v", command, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// TestTrainingCommandRoundTrip: the command a training records
// (train.RebuildCommand of the flags it was given), read again by the
// same command, gives back every setting but where the output goes, for
// the three trainings; a run at --lr 1e-3 and one at the default record
// different commands.
func TestTrainingCommandRoundTrip(t *testing.T) {
	type training interface{ RegisterFlags(*pflag.FlagSet) }
	trainings := map[string]func() training{
		"captioner": func() training { return NewCaptionerTraining() },
		"showtell":  func() training { return NewShowTellTraining() },
		"nmt":       func() training { return NewNMTTraining() },
	}
	// unplaced clears the settings a record leaves out: the output
	// directory and the checkpoint interval.
	unplaced := func(tr training) training {
		switch tr := tr.(type) {
		case *CaptionerTraining:
			tr.Run.Out = ""
		case *ShowTellTraining:
			tr.Options.Out, tr.Options.CheckpointEvery = "", 0
		case *NMTTraining:
			tr.Options.Out, tr.Options.Train.CheckpointEvery = "", 0
		}
		return tr
	}
	parse := func(t *testing.T, name string, args []string) (training, string) {
		t.Helper()
		tr := trainings[name]()
		fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
		tr.RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return unplaced(tr), train.RebuildCommand("lenspec train "+name, fs)
	}
	dir := filepath.Join(t.TempDir(), "a b's")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"captioner", []string{"--out", dir, "--cell", "gru", "--lr", "1e-3"}},
		{"captioner", []string{"--out", dir, "--cell", "lstm", "--conv1", "4", "--fc", "16", "--batch", "32", "--weight-decay", "0", "--clip-norm", "1",
			"--dropout", "0.2", "--final-lr", "0", "--shift=false", "--data-seed", "7", "--init", dir, "--ibp", "0.5", "--ibp-eps", "0.1",
			"--ibp-attack", "--certify-images", "3", "--certify-timeout", "2s", "--distill-from", dir, "--distill-hard-eos"}},
		{"captioner", []string{"--out", dir, "--arch", "transformer", "--d-model", "32", "--nhead", "2", "--num-decoder-layers", "2",
			"--dim-feedforward", "64", "--activation", "gelu", "--norm-first", "--memory-positions", "sinusoidal", "--conv1", "4", "--dropout", "0.1"}},
		{"showtell", []string{"--out", dir, "--hidden", "8", "--embedding", "8", "--fc", "16", "--weight-decay", "0", "--clip-norm", "1",
			"--data-seed", "3", "--lengths", "flat", "--pretrain-epochs", "0", "--checkpoint-every", "1m", "--lr", "1e-3"}},
		{"nmt", []string{"--out", dir, "--corpus", dir, "--split-seed", "9", "--select-dev=false", "--sentences-only", "--lr", "1e-3",
			"--layers", "2", "--label-smoothing", "0.1", "--checkpoint-every", "1m"}},
	} {
		given, command := parse(t, tc.name, tc.args)
		words := shellWords(t, command)
		if strings.Join(words[:3], " ") != "lenspec train "+tc.name || words[3] != "--out" || words[4] != "DIR" {
			t.Fatalf("%s %v: command %q does not start lenspec train %s --out DIR", tc.name, tc.args, command, tc.name)
		}
		again, _ := parse(t, tc.name, words[3:])
		if !reflect.DeepEqual(again, given) {
			t.Errorf("%s %v: the recorded command %q reads back as\n%+v, was given\n%+v", tc.name, tc.args, command, again, given)
		}
		if _, plain := parse(t, tc.name, []string{"--out", dir}); plain == command {
			t.Errorf("%s %v: records the default run's command %q", tc.name, tc.args, command)
		}
	}
}
