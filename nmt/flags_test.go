package nmt

import (
	"fmt"
	"testing"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/train"
	"github.com/spf13/pflag"
)

// TestOptionsFlags: the flags start at DefaultOptions and set the fields
// they name; ValidateFlags refuses, naming the flag, what train nmt
// refuses, in its order; train.RebuildCommand gives back the flags set.
func TestOptionsFlags(t *testing.T) {
	parse := func(t *testing.T, args ...string) (Options, *pflag.FlagSet) {
		t.Helper()
		o := DefaultOptions()
		fs := pflag.NewFlagSet("nmt", pflag.ContinueOnError)
		o.RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return o, fs
	}
	o, fs := parse(t, "--out", "m", "--vocab", "300", "--hidden", "16", "--epochs", "2", "--sentences-only", "--lr", "0.01", "--checkpoint-every", "1m")
	arch := o.Config.Arch.(*model.TranslatorConfig)
	if o.Out != "m" || o.Vocab != 300 || arch.EncoderHidden != 16 || o.Train.Epochs != 2 || !o.SentencesOnly || o.Train.LR != 0.01 || o.Train.CheckpointEvery.Minutes() != 1 {
		t.Fatalf("flags not set: %+v", o)
	}
	if err := o.ValidateFlags(fs.Changed); err != nil {
		t.Fatal(err)
	}
	if arch.Vocab != 300 {
		t.Fatalf("the architecture is validated with vocabulary %d, want --vocab's 300", arch.Vocab)
	}
	want := "lenspec train nmt --out DIR --epochs 2 --hidden 16 --lr 0.01 --sentences-only --vocab 300"
	if got := train.RebuildCommand("lenspec train nmt", fs); got != want {
		t.Fatalf("command %q, want %q", got, want)
	}
	_, fs = parse(t)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Value.String() != f.DefValue {
			t.Errorf("--%s starts at %s, its help says %s", f.Name, f.Value, f.DefValue)
		}
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--out is required"},
		{[]string{"--init", "old", "--hidden", "8"}, "--hidden conflicts with --init (the sizes and the tokenizer come from old)"},
		{[]string{"--init", "old", "--vocab", "300"}, "--vocab conflicts with --init (the sizes and the tokenizer come from old)"},
		{[]string{"--vocab", "260"}, fmt.Sprintf("--vocab 260 must be in %d..65536 (the special and byte tokens, and the corpus's characters)", MinVocab)},
		{[]string{"--vocab", "65537"}, fmt.Sprintf("--vocab 65537 must be in %d..65536 (the special and byte tokens, and the corpus's characters)", MinVocab)},
		{[]string{"--max-target", "0"}, fmt.Sprintf("--max-target 0 must be in 1..%d", model.MaxStepCap)},
		{[]string{"--checkpoint-every", "-1s"}, "--checkpoint-every -1s must not be negative"},
		{[]string{"--sentence-repeat", "101"}, "--sentence-repeat 101 must be in 1..100"},
		{[]string{"--sentence-repeat", "2", "--sentences-only"}, "--sentence-repeat oversamples the sentences among the phrases; with --sentences-only there are none (use --epochs)"},
		{[]string{"--vocab", "1", "--lr", "0"}, fmt.Sprintf("--vocab 1 must be in %d..65536 (the special and byte tokens, and the corpus's characters)", MinVocab)},
		{[]string{"--lr", "0", "--hidden", "0"}, "learning rate 0 must be positive and finite"},
	} {
		o, fs := parse(t, tc.args...)
		if tc.args != nil {
			o.Out = "m"
		}
		if err := o.ValidateFlags(fs.Changed); err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %q", tc.args, err, tc.want)
		}
	}
	o, fs = parse(t, "--out", "m", "--hidden", "0")
	if err := o.ValidateFlags(fs.Changed); err == nil || err.Error() != (func() string { c := o.Config; return c.Validate().Error() })() {
		t.Errorf("--hidden 0: got %v, want the architecture's error", err)
	}
}
