package experiment

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
	"github.com/spf13/pflag"
)

// TestGatesOfLengthenedInputs: the attacked paths are the witnesses of
// this model's lengthened outputs only, read back exactly, and Gates
// summarises each non-empty set as model.GateSaturation measures it.
func TestGatesOfLengthenedInputs(t *testing.T) {
	ctx := context.Background()
	c := model.DefaultCaptionerConfig()
	a := c.Arch.(*model.CaptionerConfig)
	a.Input = model.InputConfig{Channels: 1, Height: 4, Width: 6, Min: -1, Max: 1}
	a.Conv = []model.ConvConfig{{OutChannels: 3, Kernel: 3, Stride: 2, Padding: 1}}
	a.FCHidden, a.Embedding, a.Hidden, a.Cell = 6, 4, 5, model.CellLSTM
	c.Vocab, c.EOS, c.MaxSteps = []string{"a", "b", "c", "<eos>"}, 3, 8
	d, err := model.New[float64](&c, rand.New(rand.NewPCG(6, 11)))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 12))
	for _, p := range d.Params() {
		if len(p.W.Shape) == 1 {
			for i := range p.W.Data {
				p.W.Data[i] = 0.3 * rng.NormFloat64()
			}
		}
	}
	dir := t.TempDir()
	if err := model.Save(dir, d); err != nil {
		t.Fatal(err)
	}
	m := loadModel(t, dir)
	out := filepath.Join(t.TempDir(), "a.jsonl")
	cfg := pgdConfig(m, out, []int{0, 1, 2, 3, 4, 5, 6, 7}, 4)
	cfg.Eps, cfg.Settings.Budget, cfg.Settings.LR = []float64{1}, 100, 0.05
	if err := RunAttack(ctx, cfg, nil); err != nil {
		t.Fatal(err)
	}
	// Another model's records in the same file are not this model's paths.
	other := pgdConfig(loadModel(t, tinyModelDir(t, 3)), out, []int{0, 1, 2}, 3)
	other.Eps = []float64{0.8}
	if err := RunAttack(ctx, other, nil); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadAttackRecords(out)
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	for _, r := range recs {
		if r.ModelSHA256 == m.Digest && r.Success {
			x, err := ReadWitness(r.Witness, m.D64.Input())
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, x...)
		}
	}
	if len(want) == 0 {
		t.Fatal("no lengthened output to test with")
	}
	var logged []string
	logf := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	got, err := LengthenedInputs(m, []string{out}, logf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%d attacked input values, want %d", len(got), len(want))
	}
	// The other model's records are left out with a word, not silently.
	if w := fmt.Sprintf("--attacks %s: 3 of 11 records are of another model (%s, model_sha256 %s), not of --model %s: left out",
		out, other.Model.Dir, other.Model.Digest[:12], m.Dir); !reflect.DeepEqual(logged, []string{w}) {
		t.Errorf("logged %q, want %q", logged, w)
	}
	// A file of another model's records only is refused, naming both.
	alien := filepath.Join(t.TempDir(), "other.jsonl")
	other.Out, other.WitnessDir = alien, ""
	if err := RunAttack(ctx, other, nil); err != nil {
		t.Fatal(err)
	}
	_, err = LengthenedInputs(m, []string{alien}, logf)
	if w := fmt.Sprintf("--attacks %s: its records are of model %s (model_sha256 %s), not of --model %s (%s)",
		alien, other.Model.Dir, other.Model.Digest[:12], m.Dir, m.Digest[:12]); err == nil || err.Error() != w || !errors.As(err, new(SettingsError)) {
		t.Errorf("a file of another model's records: %v, want the SettingsError %q", err, w)
	}
	clean, _, _ := testData(20).Source.Batch([]int{0, 1, 2}, nil)
	sets, err := Gates(ctx, m, clean, nil, 0, model.DefaultSaturation)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := model.GateSaturation(ctx, m.D64, model.Batch[float64]{X: clean}, 0, model.DefaultSaturation)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 1 || sets[0].Name != "clean" || !reflect.DeepEqual(sets[0].Summary, model.SummariseGates(paths)) || sets[0].Summary.Paths != 3 {
		t.Errorf("sets %+v", sets)
	}
}

// TestGateSetText: the text names the set and the threshold, has a row per
// step and the eos step's margins when a path stopped, none otherwise.
func TestGateSetText(t *testing.T) {
	s := GateSet{"clean", model.GateSummary{Paths: 2, Stopped: 1, Gate: [4]float64{0.5, 0.25, 0, 1}, ByStep: [][4]float64{{1, 0, 0, 0}, {0, 1, 0, 0}},
		StepPaths: []int{2, 1}, EOSMarginMean: 1.5, EOSProbMean: 0.75}}
	text := s.Text(3)
	for _, want := range []string{"clean paths: 2 (stopped 1); gates with |z| > 3:", "all steps       2  i  50.0%  f  25.0%  g   0.0%  o 100.0%",
		"step 1          1", "eos margin over the runner-up at the eos step: mean 1.50", "mean p(eos) 0.7500"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	s.Summary.Stopped = 0
	if strings.Contains(s.Text(3), "eos margin") {
		t.Errorf("margins of no stopped path:\n%s", s.Text(3))
	}
}

// TestGateInputs: the flags set the inputs; the user's files are the clean
// paths without the data set being asked for, else the picked test images
// as Select picks them; naming no input at all is a SettingsError.
func TestGateInputs(t *testing.T) {
	var g GateInputs
	fs := pflag.NewFlagSet("gates", pflag.ContinueOnError)
	g.RegisterFlags(fs)
	if err := fs.Parse([]string{"--images", "2", "--index", "3,1", "--input", "a", "--attacks", "r.jsonl", "--seed", "4", "--data-seed", "5"}); err != nil {
		t.Fatal(err)
	}
	if want := (GateInputs{2, []int{3, 1}, []string{"a"}, []string{"r.jsonl"}, 4, 5}); !reflect.DeepEqual(g, want) {
		t.Fatalf("flags: %+v, want %+v", g, want)
	}
	src, m := mnistCaptioner(t)
	ctx := context.Background()
	data, err := src.ImageData(ctx, m.D32.Input(), 1, "test")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := data.Source.Batch([]int{3, 1}, nil)
	file := filepath.Join(t.TempDir(), "x.safetensors")
	if err := safetensors.WriteFile(file, &safetensors.File{Tensors: []safetensors.Tensor{safetensors.F64("input", m.D64.Input().Shape, first[:len(first)/2])}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		g         GateInputs
		wantClean []float64
		asked     bool   // the data set is read
		want      string // the error
	}{
		{GateInputs{Indices: []int{3, 1}, DataSeed: 1}, first, true, ""},
		{GateInputs{Inputs: []string{file}, Images: 5}, first[:len(first)/2], false, ""},
		{GateInputs{}, nil, false, "give inputs: --images, --index or --input, and/or --attacks"},
		{GateInputs{Attacks: []string{filepath.Join(t.TempDir(), "absent.jsonl")}}, nil, false, "absent.jsonl"},
	} {
		asked := false
		clean, attacked, err := tc.g.Read(ctx, m, func() (Sources, error) { asked = true; return src, nil }, nil)
		switch {
		case asked != tc.asked:
			t.Errorf("%+v: data set read %v, want %v", tc.g, asked, tc.asked)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: got %v, want %q", tc.g, err, tc.want)
		case tc.want == "" && (err != nil || !reflect.DeepEqual(clean, tc.wantClean) || len(attacked) != 0):
			t.Errorf("%+v: clean %d values, attacked %d, %v", tc.g, len(clean), len(attacked), err)
		case strings.HasPrefix(tc.want, "give") && !errors.As(err, new(SettingsError)):
			t.Errorf("%+v: %v is not a SettingsError", tc.g, err)
		}
	}
}
