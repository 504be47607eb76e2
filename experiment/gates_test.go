package experiment

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/model"
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
	got, err := LengthenedInputs(m, []string{out})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%d attacked input values, want %d", len(got), len(want))
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
