package experiment

import (
	"errors"
	"fmt"

	"github.com/lenspec/lenspec/nmt"
)

// TextSelection names the sentences a text attack runs on: Sentences of
// the corpus's Split ("dev" or "test") drawn at random with Seed, or
// those Indices names (PickSamples), from the corpus Corpus chooses,
// completed by the model's training record (nmt.CorpusChoice.ForModel;
// SplitSeedGiven keeps Corpus's split seed over the record's); or else
// the user's own sentences: Texts, or File with one a line
// (ReadSentences), every one a sample.
type TextSelection struct {
	Sentences      int
	Indices        []int
	Split          string
	Seed           uint64
	Corpus         nmt.CorpusChoice
	SplitSeedGiven bool
	Texts          []string
	File           string
}

// Select loads the sentences sel names for m, and the samples to run.
// Settings the data cannot satisfy (Texts and File both, a split other
// than dev or test, a pick past the split, a text of Texts the model
// cannot read, a model trained on a corpus it cannot name) are
// SettingsErrors; errors name the settings by lenspec attack's flags.
func (sel TextSelection) Select(m *Model) (TextData, []int, error) {
	if len(sel.Texts) > 0 || sel.File != "" {
		return sel.own(m)
	}
	cf, err := sel.Corpus.ForModel(m.Dir, m.D32.Config(), sel.SplitSeedGiven)
	if err != nil {
		return TextData{}, nil, SettingsError{err}
	}
	sp, err := cf.Load()
	if err != nil {
		return TextData{}, nil, err
	}
	if sel.Split != "test" && sel.Split != "dev" {
		return TextData{}, nil, SettingsError{fmt.Errorf("--split %q: a text model's sentences come from dev or test", sel.Split)}
	}
	data, err := CorpusText(sp, sel.Split, cf.SplitSeed, m.D32)
	if err != nil {
		return TextData{}, nil, err
	}
	samples, err := PickSamples(sel.Sentences, sel.Indices, len(data.Pairs), sel.Seed)
	if err != nil {
		return TextData{}, nil, SettingsError{err}
	}
	return data, samples, nil
}

// own is the user's sentences (Texts or File) as data, every one a
// sample.
func (sel TextSelection) own(m *Model) (TextData, []int, error) {
	if len(sel.Texts) > 0 && sel.File != "" {
		return TextData{}, nil, SettingsError{errors.New("give --text or --text-file, not both")}
	}
	texts, name := sel.Texts, "args"
	if sel.File != "" {
		var err error
		if texts, err = ReadSentences(sel.File); err != nil {
			return TextData{}, nil, fmt.Errorf("--text-file: %w", err)
		}
		name = sel.File
	}
	data, err := Sentences(texts, name, m.D32)
	if err != nil {
		if sel.File != "" {
			return TextData{}, nil, fmt.Errorf("--text-file %s: %w", sel.File, err)
		}
		return TextData{}, nil, SettingsError{fmt.Errorf("--text: %v", err)}
	}
	samples := make([]int, len(texts))
	for i := range samples {
		samples[i] = i
	}
	return data, samples, nil
}
