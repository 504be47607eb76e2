package experiment

import (
	"errors"
	"slices"
	"testing"

	"github.com/lenspec/lenspec/model"
	"github.com/spf13/pflag"
)

// TestCheckKindFlags: each flag read only for the other kind of model is
// refused, naming it, as a SettingsError; the first given in the list's
// order is named; flags both kinds read pass.
func TestCheckKindFlags(t *testing.T) {
	for _, tc := range []struct {
		kind  model.InputKind
		given []string
		want  string // "": accepted
	}{
		{model.Continuous, nil, ""},
		{model.Continuous, []string{"restarts", "early-stop", "data-seed", "lr", "index"}, ""},
		{model.Continuous, []string{"sentences"}, "--sentences is for text models; m takes images"},
		{model.Continuous, []string{"text-file"}, "--text-file is for text models; m takes images"},
		{model.Continuous, []string{"horizon", "tau"}, "--tau is for text models; m takes images"},
		{model.Continuous, []string{"corpus"}, "--corpus is for text models; m takes images"},
		{model.Continuous, []string{"split-seed"}, "--split-seed is for text models; m takes images"},
		{model.Tokens, nil, ""},
		{model.Tokens, []string{"sentences", "text", "tau", "beam", "swaps", "loop", "horizon", "corpus", "lr"}, ""},
		{model.Tokens, []string{"restarts"}, "--restarts is for image models; a text attack does not take it"},
		{model.Tokens, []string{"data-seed", "early-stop"}, "--early-stop is for image models; a text attack does not take it"},
	} {
		err := CheckKindFlags(tc.kind, "m", func(f string) bool { return slices.Contains(tc.given, f) })
		check(t, tc.given, err, tc.want)
	}
}

// TestTextSelectionFlags: beside the user's own sentences, a flag picking
// the corpus's is refused; with the corpus's, or with both own sources
// (Select's to refuse), none is.
func TestTextSelectionFlags(t *testing.T) {
	for _, tc := range []struct {
		sel   TextSelection
		given []string
		want  string
	}{
		{TextSelection{}, []string{"sentences", "index", "split", "corpus"}, ""},
		{TextSelection{Texts: []string{"a"}}, []string{"text", "seed", "max-steps"}, ""},
		{TextSelection{Texts: []string{"a"}}, []string{"sentences"}, "--sentences picks the corpus's sentences; --text and --text-file give your own"},
		{TextSelection{File: "f"}, []string{"split", "index"}, "--index picks the corpus's sentences; --text and --text-file give your own"},
		{TextSelection{File: "f"}, []string{"split-seed"}, "--split-seed picks the corpus's sentences; --text and --text-file give your own"},
		{TextSelection{Texts: []string{"a"}, File: "f"}, []string{"sentences"}, ""},
	} {
		check(t, tc.given, tc.sel.ValidateFlags(func(f string) bool { return slices.Contains(tc.given, f) }), tc.want)
	}
}

// parseFlags registers flags with register on a new flag set, checks that
// each starts at the default its help shows (but those of skip, whose
// help says it in words), and parses args.
func parseFlags(t *testing.T, register func(*pflag.FlagSet), args []string, skip ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("lenspec", pflag.ContinueOnError)
	register(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Value.String() != f.DefValue && !slices.Contains(skip, f.Name) {
			t.Errorf("--%s starts at %s, its help says %s", f.Name, f.Value, f.DefValue)
		}
	})
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

// check fails t unless err is want ("": nil), a SettingsError.
func check(t *testing.T, given []string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%q: refused: %v", given, err)
	case want != "" && (err == nil || err.Error() != want):
		t.Errorf("%q: got %v, want %q", given, err, want)
	case err != nil && !errors.As(err, new(SettingsError)):
		t.Errorf("%q: %v is not a SettingsError", given, err)
	}
}
