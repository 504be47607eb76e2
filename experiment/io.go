package experiment

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/safetensors"
)

// MultiMNIST is a Multi-MNIST split as an experiment's data: canvases
// mapped to the model's input range in. Models that do not read 28×112
// one-channel images cannot use it.
func MultiMNIST(ds *multimnist.Dataset, split string, seed uint64, in model.InputSpec) (Data, error) {
	if err := CheckMultiMNIST(in); err != nil {
		return Data{}, err
	}
	src, err := multimnist.NewSource[float64](ds, in.Min, in.Max, false)
	if err != nil {
		return Data{}, err
	}
	return Data{Ref: DataRef{Name: "multimnist", Split: split, Seed: seed}, Source: src}, nil
}

// CheckMultiMNIST reports whether a model reading in can run on
// Multi-MNIST canvases, before any data is built.
func CheckMultiMNIST(in model.InputSpec) error {
	if in.Kind != model.Continuous || len(in.Shape) != 3 || in.Shape[0] != 1 || in.Shape[1] != multimnist.Height || in.Shape[2] != multimnist.Width {
		return fmt.Errorf("the model reads %v %v inputs; the Multi-MNIST data are 1x%dx%d images", in.Kind, in.Shape, multimnist.Height, multimnist.Width)
	}
	return nil
}

// ReadWitness reads the exact input of a witness file (a safetensors file
// with one tensor "input", as attacks and verification save them) and
// checks it is an input the model reads: its shape (with or without a
// leading batch dimension of 1), and finite values inside the input range.
func ReadWitness(path string, in model.InputSpec) ([]float64, error) {
	if in.Kind != model.Continuous {
		return nil, fmt.Errorf("%s: the model reads %v inputs, not tensors", path, in.Kind)
	}
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return witnessInput(path, f, in)
}

// witnessInput is ReadWitness's check of a witness file already read
// (from disk, or from an archive of witnesses), named path in errors.
func witnessInput(path string, f *safetensors.File, in model.InputSpec) ([]float64, error) {
	t, ok := f.Tensor("input")
	if !ok {
		return nil, fmt.Errorf("%s: no tensor named \"input\"", path)
	}
	shape := t.Shape
	if len(shape) == len(in.Shape)+1 && shape[0] == 1 {
		shape = shape[1:]
	}
	if !slices.Equal(shape, in.Shape) {
		return nil, fmt.Errorf("%s: input has shape %v, the model reads %v", path, t.Shape, in.Shape)
	}
	if err := t.CheckFinite(); err != nil {
		return nil, fmt.Errorf("%s: input %w", path, err)
	}
	x, err := t.Float64s()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, v := range x {
		if v < in.Min || v > in.Max || math.IsNaN(v) {
			return nil, fmt.Errorf("%s: input value %d is %v, outside the model's input range [%v, %v]", path, i, v, in.Min, in.Max)
		}
	}
	return x, nil
}

// ReadRun reads the records of a run whose output is out: out itself and
// every shard's file beside it (out.shard-k-of-n.ext), those that exist,
// keeps those match selects (all without match: see Of), and joins them by
// Join's rules, so a unit found both in a merged out and in its shard's
// file counts once, and records of one unit that disagree are refused.
func ReadRun[R Record](out string, match ...func(R) bool) ([]R, error) {
	ext := filepath.Ext(out)
	shards, err := filepath.Glob(stem(out) + ".shard-*-of-*" + ext)
	if err != nil {
		return nil, err
	}
	paths, _ := filepath.Glob(out)
	var keep func(R) bool
	if len(match) > 0 {
		keep = func(r R) bool { return len(Of([]R{r}, match...)) > 0 }
	}
	j, _, err := joinFiles(append(paths, shards...), nil, keep, JoinOptions{})
	if err != nil {
		return nil, err
	}
	return j.Records, nil
}
