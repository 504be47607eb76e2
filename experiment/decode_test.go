package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/mnist"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/safetensors"
)

// TestDecoded: a decoding's report says how the output ended, the label
// and a tie, and its margins are JSON-safe.
func TestDecoded(t *testing.T) {
	vocab := []string{"a", "b", "<eos>"}
	for _, tc := range []struct {
		name  string
		r     model.Result
		label []int
		want  []string
		len   bool
	}{
		{"stopped", model.Result{Tokens: []int{0, 1}, Stopped: true, MinMargin: 2, MinRelMargin: 0.5}, []int{0, 1}, []string{"x: a b <eos>", "[label [0 1]]"}, true},
		{"cap", model.Result{Tokens: []int{1}, MinMargin: 2, MinRelMargin: 0.5}, nil, []string{"x: b … (no eos within the step cap)"}, false},
		{"overflow", model.Result{Tokens: []int{1}, NonFinite: true, MinMargin: math.Inf(1), MinRelMargin: math.Inf(1)}, nil, []string{"non-finite logits after 1 tokens"}, false},
		{"tie", model.Result{Tokens: nil, Stopped: true, MinRelMargin: 0}, nil, []string{"x: <eos>", "(tie: "}, true},
	} {
		d := NewDecoded(vocab, "x", tc.label, tc.r)
		for _, w := range tc.want {
			if !strings.Contains(d.Line(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, d.Line(), w)
			}
		}
		if (d.Length != nil) != tc.len || d.Tokens == nil {
			t.Errorf("%s: length %v, tokens %v", tc.name, d.Length, d.Tokens)
		}
		if _, err := json.Marshal(d); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestDecodeInputs: a witness file and a PNG are read as the model's
// input; canvases of the data set by index, named and labelled; an index
// outside the split is a settings error.
func TestDecodeInputs(t *testing.T) {
	dir, err := mnist.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	src := Sources{MNISTDir: dir}
	ctx := context.Background()
	in := model.InputSpec{Kind: model.Continuous, Shape: []int{1, multimnist.Height, multimnist.Width}, Min: -1, Max: 1}
	x, names, labels, err := src.DecodeInputs(ctx, "m", in, "", "", []int{3, 0}, "test", 1)
	if err != nil {
		t.Fatal(err)
	}
	data, err := src.ImageData(ctx, in, 1, "test")
	if err != nil {
		t.Fatal(err)
	}
	want, _, wantLabels := data.Source.Batch([]int{3, 0}, nil)
	if len(x) != len(want) || x[0] != want[0] || names[0] != "test[3]" || names[1] != "test[0]" || len(labels[1]) != len(wantLabels[1]) {
		t.Errorf("canvases: names %v labels %v", names, labels)
	}
	if _, _, _, err := src.DecodeInputs(ctx, "m", in, "", "", []int{data.Source.Len()}, "test", 1); !errors.As(err, new(SettingsError)) {
		t.Errorf("an index past the split: %v", err)
	}
	tmp := t.TempDir()
	st := filepath.Join(tmp, "w.safetensors")
	if err := safetensors.WriteFile(st, &safetensors.File{Tensors: []safetensors.Tensor{safetensors.F64("input", in.Shape, want[:len(want)/2])}}); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(tmp, "w.png")
	if err := multimnist.WritePNG(png, make([]byte, multimnist.Height*multimnist.Width), multimnist.Height, multimnist.Width, 2); err != nil {
		t.Fatal(err)
	}
	for _, f := range [][2]string{{st, ""}, {"", png}} {
		x, names, labels, err := src.DecodeInputs(ctx, "m", in, f[0], f[1], nil, "test", 1)
		if err != nil || len(x) != len(want)/2 || names[0] != f[0]+f[1] || labels[0] != nil {
			t.Errorf("%v: %d values, %v %v, %v", f, len(x), names, labels, err)
		}
	}
	if _, _, _, err := src.DecodeInputs(ctx, "m", model.InputSpec{Kind: model.Tokens}, "", png, nil, "test", 1); err == nil {
		t.Error("a PNG read for a text model")
	}
}

// TestDecodeSettingsFlags: the flags set the fields they name, start at
// their help's defaults, and are refused, as SettingsErrors, in decode's
// order: the model, one kind of input, the step cap, the split.
func TestDecodeSettingsFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "": valid
	}{
		{[]string{"--model", "m", "--index", "3,1", "--split", "train", "--max-steps", "9", "--data-seed", "2"}, ""},
		{[]string{"--model", "m", "--image", "a.png"}, ""},
		{[]string{"--model", "m", "--input", "w.safetensors"}, ""},
		{[]string{"--index", "1"}, "--model is required"},
		{[]string{"--model", "m"}, "give exactly one of --image, --input or --index"},
		{[]string{"--model", "m", "--image", "a.png", "--index", "1"}, "give exactly one of --image, --input or --index"},
		{[]string{"--model", "m", "--input", "w", "--max-steps", "0", "--split", "dev"}, fmt.Sprintf("--max-steps 0: want 1..%d", model.MaxStepCap)},
		{[]string{"--model", "m", "--input", "w", "--split", "dev"}, `--split "dev": want train or test`},
	} {
		var s DecodeSettings
		fs := parseFlags(t, s.RegisterFlags, tc.args, "index")
		check(t, tc.args, s.ValidateFlags(fs.Changed), tc.want)
	}
	var s DecodeSettings
	parseFlags(t, s.RegisterFlags, []string{"--model", "m", "--index", "3,1", "--split", "train", "--max-steps", "9", "--data-seed", "2", "--image", "a", "--input", "b"}, "index")
	if want := (DecodeSettings{Model: "m", Image: "a", Input: "b", Split: "train", Indices: []int{3, 1}, MaxSteps: 9, DataSeed: 2}); !reflect.DeepEqual(s, want) {
		t.Errorf("got %+v, want %+v", s, want)
	}
}
