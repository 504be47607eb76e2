package experiment

import (
	"fmt"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nmt"
)

// imageOnlyFlags are lenspec attack's flags a text model has no use for:
// the image PGD's restarts and early stop, and the Multi-MNIST seed.
var imageOnlyFlags = []string{"restarts", "early-stop", "data-seed"}

// textOnlyFlags are lenspec attack's flags an image model has no use
// for: the sentence selection, the text attacks' own settings
// (RegisterTextFlags) and the corpus's (nmt.CorpusFlagNames).
func textOnlyFlags() []string {
	return append([]string{"sentences", "text", "text-file", "tau", "beam", "swaps", "loop", "horizon"}, nmt.CorpusFlagNames()...)
}

// CheckKindFlags refuses, as a SettingsError, the first of lenspec
// attack's flags given (changed reports which) that a model of input kind
// has no use for, so that a run cannot look as if it used a setting it
// ignored: the text attacks' flags for an image model (modelDir names it
// in the message), the image attacks' for a text model (model.Tokens).
func CheckKindFlags(kind model.InputKind, modelDir string, changed func(flag string) bool) error {
	if kind == model.Tokens {
		if name, ok := firstGiven(changed, imageOnlyFlags); ok {
			return SettingsError{fmt.Errorf("--%s is for image models; a text attack does not take it", name)}
		}
		return nil
	}
	if name, ok := firstGiven(changed, textOnlyFlags()); ok {
		return SettingsError{fmt.Errorf("--%s is for text models; %s takes images", name, modelDir)}
	}
	return nil
}

// ValidateFlags refuses, as a SettingsError, a flag picking the corpus's
// sentences (--sentences, --index, --split, the corpus's flags; changed
// reports which were given) beside the user's own sentences, Texts or
// File: Select would ignore it. Texts and File both are Select's to
// refuse.
func (sel TextSelection) ValidateFlags(changed func(flag string) bool) error {
	if (len(sel.Texts) > 0) == (sel.File != "") {
		return nil
	}
	if name, ok := firstGiven(changed, append([]string{"sentences", "index", "split"}, nmt.CorpusFlagNames()...)); ok {
		return SettingsError{fmt.Errorf("--%s picks the corpus's sentences; --text and --text-file give your own", name)}
	}
	return nil
}

// firstGiven is the first of names given (changed reports which were).
func firstGiven(changed func(flag string) bool, names []string) (string, bool) {
	for _, name := range names {
		if changed(name) {
			return name, true
		}
	}
	return "", false
}
