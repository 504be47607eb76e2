package experiment

import (
	"context"

	"github.com/lenspec/lenspec/model"
)

// GateSet is the gate saturation of one set of decoding paths (clean or
// attacked inputs).
type GateSet struct {
	Name    string            `json:"name"`
	Summary model.GateSummary `json:"summary"`
}

// Gates measures m's gate saturation (model.GateSaturation, |z| >
// threshold) and eos margins along the greedy paths of the clean and the
// attacked inputs (batches of m's inputs, concatenated), leaving out a set
// with no inputs.
func Gates(ctx context.Context, m *Model, clean, attacked []float64, maxSteps int, threshold float64) ([]GateSet, error) {
	var sets []GateSet
	for _, s := range []struct {
		name string
		x    []float64
	}{{"clean", clean}, {"attacked", attacked}} {
		if len(s.x) == 0 {
			continue
		}
		paths, err := model.GateSaturation(ctx, m.D64, model.Batch[float64]{X: s.x}, maxSteps, threshold)
		if err != nil {
			return nil, err
		}
		sets = append(sets, GateSet{s.name, model.SummariseGates(paths)})
	}
	return sets, nil
}

// ReadInputs reads inputs of m saved as safetensors files (as witnesses
// are), concatenated.
func ReadInputs(m *Model, paths []string) ([]float64, error) {
	var x []float64
	for _, p := range paths {
		v, err := ReadWitness(p, m.D64.Input())
		if err != nil {
			return nil, err
		}
		x = append(x, v...)
	}
	return x, nil
}

// LengthenedInputs reads the witnesses of the outputs that attacks
// lengthened, recorded for m (by its digest) in the attack results files,
// concatenated.
func LengthenedInputs(m *Model, files []string) ([]float64, error) {
	var paths []string
	for _, p := range files {
		recs, err := ReadAttackRecords(p)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.ModelSHA256 == m.Digest && r.Success && r.Witness != "" {
				paths = append(paths, r.Witness)
			}
		}
	}
	return ReadInputs(m, paths)
}
