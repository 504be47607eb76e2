package experiment

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lenspec/lenspec/mnist"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
)

// TestSelect: the user's files are the data, every one a sample, as
// Inputs reads them; otherwise the split asked for, with the samples
// PickSamples draws; a pick the split cannot give is a SettingsError.
func TestSelect(t *testing.T) {
	src, m := mnistCaptioner(t)
	ctx := context.Background()
	sel := Selection{Images: 3, Split: "train", DataSeed: 1, Seed: 5}
	data, samples, err := src.Select(ctx, m, sel, 0)
	if err != nil {
		t.Fatal(err)
	}
	want, err := src.ImageData(ctx, m.D32.Input(), 1, "train")
	if err != nil {
		t.Fatal(err)
	}
	picked, _ := PickSamples(3, nil, want.Source.Len(), 5)
	if data.Ref != want.Ref || !reflect.DeepEqual(samples, picked) {
		t.Fatalf("got %+v %v, want %+v %v", data.Ref, samples, want.Ref, picked)
	}
	if _, samples, err := src.Select(ctx, m, Selection{Indices: []int{4, 2}, Split: "test", DataSeed: 1}, 0); err != nil || !reflect.DeepEqual(samples, []int{4, 2}) {
		t.Fatalf("indices 4, 2: %v, %v", samples, err)
	}
	for _, bad := range []Selection{
		{Indices: []int{want.Source.Len() + 1}, Split: "train", DataSeed: 1},
		{Images: want.Source.Len() + 1, Split: "train", DataSeed: 1},
		{Split: "test", DataSeed: 1},
	} {
		if _, _, err := src.Select(ctx, m, bad, 0); !errors.As(err, new(SettingsError)) {
			t.Errorf("%+v: %v, want a SettingsError", bad, err)
		}
	}
	x, _, _ := want.Source.Batch([]int{0, 1}, nil)
	in := m.D64.Input()
	n := len(x) / 2
	var files []string
	for i := range 2 {
		p := filepath.Join(t.TempDir(), "x.safetensors")
		if err := safetensors.WriteFile(p, &safetensors.File{Tensors: []safetensors.Tensor{safetensors.F64("input", in.Shape, x[i*n:(i+1)*n])}}); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	data, samples, err = src.Select(ctx, m, Selection{Files: files, Images: 7, Split: "nope"}, 4)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := Inputs(ctx, m.D64, files, 4)
	if err != nil {
		t.Fatal(err)
	}
	if data.Ref != direct.Ref || !reflect.DeepEqual(samples, []int{0, 1}) {
		t.Fatalf("files: %+v %v, want %+v [0 1]", data.Ref, samples, direct.Ref)
	}
}

// mnistCaptioner is the MNIST data's sources and a new captioner of the
// default configuration, saved and loaded.
func mnistCaptioner(t *testing.T) (Sources, *Model) {
	t.Helper()
	dir, err := mnist.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.DefaultCaptionerConfig()
	d, err := model.New[float64](&cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	mdir := t.TempDir()
	if err := model.Save(mdir, d); err != nil {
		t.Fatal(err)
	}
	return Sources{MNISTDir: dir}, loadModel(t, mdir)
}

// TestSelectionValidate: inputs named one way only, and no negative
// number of images.
func TestSelectionValidate(t *testing.T) {
	for _, tc := range []struct {
		sel  Selection
		want string
	}{
		{Selection{Images: 3}, ""},
		{Selection{Indices: []int{0}}, ""},
		{Selection{Files: []string{"x.png"}}, ""},
		{Selection{Images: -1}, "--images -1: want a positive number"},
		{Selection{}, "give exactly one of --images N, --index I, or --image/--input files"},
		{Selection{Images: 1, Indices: []int{0}}, "give exactly one of --images N, --index I, or --image/--input files"},
		{Selection{Indices: []int{0}, Files: []string{"x.png"}}, "give exactly one of --images N, --index I, or --image/--input files"},
	} {
		err := tc.sel.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want || !errors.As(err, new(SettingsError))) {
			t.Errorf("%+v: got %v, want %q", tc.sel, err, tc.want)
		}
	}
}
