package experiment

import (
	"context"
	"errors"
	"fmt"
)

// Selection names the inputs an image run (attack, verify, bound, gates)
// reads: Images samples of the data set's Split drawn at random with Seed,
// or the samples Indices names (PickSamples), or else the user's own
// Files (PNG or safetensors, Inputs), every one a sample. DataSeed
// generates the data set (Sources.ImageData).
type Selection struct {
	Images   int
	Indices  []int
	Files    []string
	Split    string
	DataSeed uint64
	Seed     uint64
}

// Validate checks that sel names its inputs one way only, as a
// SettingsError naming lenspec's flags: a number of random images (not
// negative), indices, or files.
func (sel Selection) Validate() error {
	if sel.Images < 0 {
		return SettingsError{fmt.Errorf("--images %d: want a positive number", sel.Images)}
	}
	given := 0
	for _, g := range []bool{sel.Images > 0, len(sel.Indices) > 0, len(sel.Files) > 0} {
		if g {
			given++
		}
	}
	if given != 1 {
		return SettingsError{errors.New("give exactly one of --images N, --index I, or --image/--input files")}
	}
	return nil
}

// Select loads the data sel names for m and the samples to run. A pick
// the data set cannot give (an index past it, more samples than it holds)
// is a SettingsError. maxSteps caps the decoding whose output labels the
// user's files (Inputs).
func (s Sources) Select(ctx context.Context, m *Model, sel Selection, maxSteps int) (Data, []int, error) {
	if len(sel.Files) > 0 {
		data, err := Inputs(ctx, m.D64, sel.Files, maxSteps)
		if err != nil {
			return Data{}, nil, err
		}
		samples := make([]int, len(sel.Files))
		for i := range samples {
			samples[i] = i
		}
		return data, samples, nil
	}
	data, err := s.ImageData(ctx, m.D32.Input(), sel.DataSeed, sel.Split)
	if err != nil {
		return Data{}, nil, err
	}
	samples, err := PickSamples(sel.Images, sel.Indices, data.Source.Len(), sel.Seed)
	if err != nil {
		return Data{}, nil, SettingsError{err}
	}
	return data, samples, nil
}
