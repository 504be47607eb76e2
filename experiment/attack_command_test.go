package experiment

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// parseAttackFlags registers lenspec attack's flags and parses args.
func parseAttackFlags(t *testing.T, args ...string) (*AttackFlags, Env) {
	t.Helper()
	f := &AttackFlags{}
	fs := pflag.NewFlagSet("attack", pflag.ContinueOnError)
	f.RegisterFlags(fs, true)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f, Env{Changed: fs.Changed, Getenv: func(string) string { return "" }}
}

// errNoData stands for image data a test never loads.
var errNoData = errors.New("no data in this test")

// TestImageAttack: the flags become the AttackConfig lenspec attack runs
// (the PGD settings, K̂ only when given), every settings error a
// SettingsError in the command's order, all before the data are asked
// for.
func TestImageAttack(t *testing.T) {
	dir := tinyModelDir(t, 1)
	out := filepath.Join(t.TempDir(), "a.jsonl")
	base := []string{"--model", dir, "--out", out, "--eps", "0.1", "--images", "2"}
	for _, tc := range []struct {
		args []string
		want string // the settings error, "" for none
	}{
		{[]string{"--method", "pgd", "--budget", "7", "--lr", "0.01", "--restarts", "3", "--max-len", "4"}, ""},
		{[]string{"--method", "random", "--budget", "9"}, ""},
		{[]string{"--method", "gumbel"}, `--method "gumbel": want random or pgd`},
		{[]string{"--method", "random", "--lr", "0.1"}, "--lr is read by "},
		{[]string{"--method", "random", "--tau", "2"}, "--tau"},
		{[]string{"--method", "random", "--max-len", "-2"}, "--max-len -2: want K̂ ≥ 0"},
		{[]string{"--method", "pgd", "--budget", "-1"}, "budget"},
		{[]string{"--method", "random", "--eps", "NaN"}, "eps"},
		{[]string{"--method", "random", "--max-steps", "0"}, "--max-steps 0: want 1.."},
	} {
		f, env := parseAttackFlags(t, append(append([]string(nil), base...), tc.args...)...)
		env.Sources = func() (Sources, error) { return Sources{}, errNoData }
		_, err := f.ImageAttack(context.Background(), env)
		if tc.want != "" {
			if !isSettings(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: %v, want a SettingsError with %q", tc.args, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, errNoData) {
			t.Errorf("%v: %v, want the settings to pass and the data to be asked for", tc.args, err)
			continue
		}
		cfg, err := f.Config(env, Whole, loadModel(t, dir))
		if err != nil {
			t.Fatal(err)
		}
		k := -1
		if env.Changed("max-len") {
			k = f.MaxLen
		}
		s := cfg.Settings
		pgd := f.Method != MethodPGD || (s.LR == f.Settings.LR && s.Restarts == f.Settings.Restarts) // random reads neither
		if cfg.Method != f.Method || s.Budget != f.Budget || !pgd || s.MaxLen != k || s.Seed != 1 || cfg.Out != out || cfg.Batch != 50 || len(cfg.Eps) != 1 {
			t.Errorf("%v: config %+v", tc.args, cfg)
		}
	}
}

// TestTextAttacks: a text model's attacks, one per method, take each
// method's defaults for what is not given and a budget flag's value for
// their method, share the model and sentences, and refuse settings as
// SettingsErrors before the model is loaded.
func TestTextAttacks(t *testing.T) {
	m := tinyTextModel(t)
	out := filepath.Join(t.TempDir(), "t.jsonl")
	base := []string{"--model", m.Dir, "--out", out, "--eps", "0.5", "--text", "Das Haus.", "--text", "Ein kleines Haus."}
	f, env := parseAttackFlags(t, base...)
	fs := pflag.NewFlagSet("budgets", pflag.ContinueOnError)
	budgets := RegisterBudgetFlags(fs)
	if err := fs.Parse([]string{"--flip-budget", "12"}); err != nil {
		t.Fatal(err)
	}
	env.Changed = func(flag string) bool { return fs.Changed(flag) }
	cfgs, err := f.TextAttacks(env, []string{MethodRandom, MethodFlip}, budgets)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		method string
		budget int
	}{{MethodRandom, 10000}, {MethodFlip, 12}} {
		c := cfgs[i]
		if c.Method != want.method || c.Settings.Budget != want.budget || c.Settings.MaxSteps != TextMaxSteps ||
			c.Model == nil || c.Model.Dir != m.Dir || len(c.Samples) != 2 || c.Data == nil || c.Batch != MaxTextBatch {
			t.Errorf("%s: %+v, want budget %d on both sentences", want.method, c, want.budget)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--method", "pgd"}, `--method "pgd": a text model takes random, gumbel, embedding or flip`},
		{[]string{"--method", "gumbel", "--loss", "bogus"}, "--loss: "},
		{[]string{"--method", "random", "--lr", "0.1"}, "--lr is read by "},
		{[]string{"--method", "random", "--images", "2"}, "--images is for image models"},
		{[]string{"--method", "random", "--max-len", "-1"}, "--max-len -1"},
		{[]string{"--method", "random", "--text-file", "x.txt"}, "--text"},
	} {
		f, env := parseAttackFlags(t, append(append([]string(nil), base...), tc.args...)...)
		if _, err := f.TextAttacks(env, []string{f.Method}, nil); !isSettings(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a SettingsError with %q", tc.args, err, tc.want)
		}
	}
}

// TestAttackByKind: lenspec attack runs a text model's attack on a
// translator and an image model's otherwise, and needs a model.
func TestAttackByKind(t *testing.T) {
	text := tinyTextModel(t).Dir
	img := tinyModelDir(t, 6)
	out := filepath.Join(t.TempDir(), "a.jsonl")
	for _, tc := range []struct {
		args []string
		want string // the error's words
	}{
		{[]string{"--eps", "0.5", "--out", out}, "--model is required"},
		{[]string{"--model", text, "--eps", "0.5", "--out", out, "--text", "Das Haus.", "--method", "pgd"}, "a text model takes"},
		{[]string{"--model", img, "--eps", "0.1", "--out", out, "--images", "1", "--method", "flip"}, `--method "flip": want random or pgd`},
		{[]string{"--model", img, "--eps", "0.1", "--out", out, "--images", "1", "--method", "random"}, errNoData.Error()},
	} {
		f, env := parseAttackFlags(t, tc.args...)
		env.Sources = func() (Sources, error) { return Sources{}, errNoData }
		if _, err := f.Attack(context.Background(), env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	f, env := parseAttackFlags(t, "--model", text, "--eps", "0.5", "--out", out, "--text", "Das Haus.", "--method", "flip", "--budget", "5")
	cfg, err := f.Attack(context.Background(), env)
	if err != nil || cfg.Method != "flip" || cfg.Settings.Budget != 5 || len(cfg.Samples) != 1 {
		t.Fatalf("%+v %v", cfg, err)
	}
}
