package train

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

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
		"--ibp-ramp", "0.2", "--ibp-bound", "crown-ibp", "--ibp-attack", "--ibp-sabr", "0.25", "--stability", "1", "--stability-eps", "0.05", "--stability-ramp", "0.3")
	want = DefaultOptions()
	want.LR, want.FinalLR, want.ClipNorm, want.Shards = 0.5, 0.1, 2, 3
	want.IBP, want.IBPEps, want.IBPRamp, want.IBPBound, want.IBPAttack, want.SABR = 0.5, 0.1, 0.2, model.BoundCROWNIBP, true, 0.25
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
		{[]string{"--ibp-sabr", "0.3"}, "--ibp-sabr is read only with --ibp, which is off: set --ibp, or drop --ibp-sabr"},
		{[]string{"--ibp", "0.5", "--ibp-eps", "0.1", "--ibp-sabr", "0.3"}, ""},
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

// TestCaptionerFlags: train captioner's and train showtell's flags start
// at their recipes, set the fields they name, and are refused as the
// commands refuse them.
func TestCaptionerFlags(t *testing.T) {
	run := CaptionerRun{Options: DefaultOptions()}
	fs := pflag.NewFlagSet("captioner", pflag.ContinueOnError)
	run.RegisterFlags(fs)
	if err := run.ValidateFlags(fs.Changed); err == nil || err.Error() != "--out is required" {
		t.Fatalf("no --out: %v", err)
	}
	if err := fs.Parse([]string{"--out", "m", "--init", "old", "--seed", "3", "--epochs", "2", "--batch", "8", "--weight-decay", "0", "--dropout", "0.5", "--lr", "0.1"}); err != nil {
		t.Fatal(err)
	}
	want := DefaultOptions()
	want.Seed, want.Epochs, want.BatchSize, want.WeightDecay, want.Dropout, want.LR, want.IBPBound = 3, 2, 8, 0, 0.5, 0.1, model.BoundInterval
	if run.Out != "m" || run.Init != "old" || !reflect.DeepEqual(run.Options, want) {
		t.Fatalf("got %+v, want %+v", run, want)
	}
	if err := run.ValidateFlags(fs.Changed); err != nil {
		t.Fatal(err)
	}
	if u := fs.Lookup("seed").Usage; u != "seed for initialisation, shuffling, augmentation and dropout" {
		t.Errorf("--seed: %q", u)
	}
	for _, tc := range []struct {
		args []string
		want string // "": valid
	}{
		{[]string{"--distill-from", "teacher"}, ""},
		{[]string{"--distill-from", "teacher", "--distill", "1", "--distill-temp", "4"}, ""},
		{[]string{"--distill", "0.3"}, "--distill is read only with --distill-from, which is off: set --distill-from, or drop --distill"},
		{[]string{"--distill-temp", "3"}, "--distill-temp is read only with --distill-from, which is off: set --distill-from, or drop --distill-temp"},
		{[]string{"--distill-hard-eos"}, "--distill-hard-eos is read only with --distill-from, which is off: set --distill-from, or drop --distill-hard-eos"},
		{[]string{"--distill-from", "teacher", "--distill-hard-eos"}, ""},
		{[]string{"--distill-from", "teacher", "--distill", "2"}, "distillation weight 2 must be in [0, 1]"},
		{[]string{"--distill-from", "teacher", "--distill-temp", "-1"}, "distillation temperature -1 must be positive and finite"},
	} {
		run := CaptionerRun{Options: DefaultOptions()}
		fs := pflag.NewFlagSet("captioner", pflag.ContinueOnError)
		run.RegisterFlags(fs)
		if err := fs.Parse(append([]string{"--out", "m"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		err := run.ValidateFlags(fs.Changed)
		if got := ""; err != nil || tc.want != "" {
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
			}
		}
	}

	o := DefaultShowTellOptions()
	fs = pflag.NewFlagSet("showtell", pflag.ContinueOnError)
	o.RegisterFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Value.String() != f.DefValue {
			t.Errorf("--%s starts at %s, its help says %s", f.Name, f.Value, f.DefValue)
		}
	})
	if o.PretrainEpochs != 3 || o.Epochs != 10 || o.LR != 1e-3 || o.CheckpointEvery != 2*time.Minute || fs.Lookup("stability") != nil {
		t.Fatalf("showtell defaults %+v", o)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--out is required"},
		{[]string{"--out", "m"}, ""},
		{[]string{"--out", "m", "--pretrain-epochs", "0", "--epochs", "1"}, ""},
		{[]string{"--out", "m", "--dropout", "1"}, "dropout 1 must be in [0, 1)"},
		{[]string{"--out", "m", "--checkpoint-every", "-1m"}, "--checkpoint-every -1m0s must not be negative"},
	} {
		o := DefaultShowTellOptions()
		fs := pflag.NewFlagSet("showtell", pflag.ContinueOnError)
		o.RegisterFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := o.ValidateFlags()
		if got := ""; err != nil || tc.want != "" {
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
			}
		}
	}
}

// TestCaptionerModelFlags: the architecture flags set the captioner's
// config; a new model is refused if that config is, a fine-tuned one if
// any architecture flag is given; Model builds the seeded new model, or
// loads Init without its training record.
func TestCaptionerModelFlags(t *testing.T) {
	init := t.TempDir()
	saved := model.DefaultCaptionerConfig()
	saved.Training = map[string]any{"seed": 9}
	d, err := model.New[float32](&saved, rand.New(rand.NewPCG(9, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if err := model.Save(init, d); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		init string
		args []string
		want string // "": valid
	}{
		{"", nil, ""},
		{"", []string{"--conv1", "4", "--conv2", "6", "--fc", "16", "--cell", "lstm"}, ""},
		{"", []string{"--cell", "tanh"}, `cell "tanh" is not supported`},
		{init, nil, ""},
		{init, []string{"--conv1", "4"}, "--conv1 conflicts with --init (the architecture comes from " + init + ")"},
		{init, []string{"--fc", "16", "--cell", "lstm"}, "--fc conflicts with --init (the architecture comes from " + init + ")"},
		{init, []string{"--cell", "gru"}, "--cell conflicts with --init (the architecture comes from " + init + ")"},
	} {
		cfg := model.DefaultCaptionerConfig()
		fs := pflag.NewFlagSet("captioner", pflag.ContinueOnError)
		RegisterCaptionerArchFlags(fs, cfg.Arch.(*model.CaptionerConfig))
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		run := CaptionerRun{Options: DefaultOptions(), Init: tc.init}
		run.Seed = 5
		err := run.ValidateModel(&cfg, fs.Changed)
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("init %q %q: got %v, want %q", tc.init, tc.args, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("init %q %q: %v", tc.init, tc.args, err)
		}
		got, err := run.Model(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		want, wantCfg := got, got.Config()
		if tc.init == "" {
			if want, err = model.New[float32](&cfg, rand.New(rand.NewPCG(5, 0))); err != nil {
				t.Fatal(err)
			}
			wantCfg = &cfg
		} else {
			want, wantCfg = d, &saved
		}
		if got.Config().Training != nil {
			t.Errorf("init %q %q: training record %v kept", tc.init, tc.args, got.Config().Training)
		}
		if !reflect.DeepEqual(got.Config().Arch, wantCfg.Arch) || !reflect.DeepEqual(got.Params(), want.Params()) {
			t.Errorf("init %q %q: not the model asked for", tc.init, tc.args)
		}
	}
}

// TestShowTellArchFlags: the flags start at the shipped model's sizes,
// set the sizes they name, and a size the model cannot have is refused
// by the config's Validate.
func TestShowTellArchFlags(t *testing.T) {
	for _, tc := range []struct {
		args                  []string
		hidden, embedding, fc int
		wantErr               bool
	}{
		{nil, -1, -1, -1, false},
		{[]string{"--hidden", "16", "--embedding", "8", "--fc", "12"}, 16, 8, 12, false},
		{[]string{"--hidden", "0"}, 0, -1, -1, true},
	} {
		cfg := model.DefaultShowTellConfig([]string{"a", "<eos>"})
		arch := cfg.Arch.(*model.ShowTellConfig)
		def := *arch
		fs := pflag.NewFlagSet("showtell", pflag.ContinueOnError)
		RegisterShowTellArchFlags(fs, arch)
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Value.String() != f.DefValue {
				t.Errorf("--%s starts at %s, its help says %s", f.Name, f.Value, f.DefValue)
			}
		})
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct{ got, want, def int }{{arch.Hidden, tc.hidden, def.Hidden}, {arch.Embedding, tc.embedding, def.Embedding}, {arch.FCHidden, tc.fc, def.FCHidden}} {
			if w.want < 0 {
				w.want = w.def
			}
			if w.got != w.want {
				t.Errorf("%q: %+v", tc.args, arch)
			}
		}
		if err := cfg.Validate(); (err != nil) != tc.wantErr {
			t.Errorf("%q: Validate: %v", tc.args, err)
		}
	}
}
