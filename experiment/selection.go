package experiment

import "context"

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
