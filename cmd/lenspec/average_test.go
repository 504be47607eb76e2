package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/train"
)

// TestTrainAverage: lenspec train average writes a model whose every
// weight is the weighted mean of the inputs' (rounded to float32 once),
// whose config.json names each input by digest and normalised weight and
// the command, and which the verifier's loader reads.
func TestTrainAverage(t *testing.T) {
	dirs := make([]string, 2)
	var params [][]float64
	for i := range dirs {
		cfg := model.DefaultCaptionerConfig()
		m, err := model.New[float32](&cfg, rand.New(rand.NewPCG(uint64(i+1), 7)))
		if err != nil {
			t.Fatal(err)
		}
		dirs[i] = filepath.Join(t.TempDir(), fmt.Sprintf("model %d's", i)) // a command line must quote it
		if err := model.Save(dirs[i], m); err != nil {
			t.Fatal(err)
		}
		var flat []float64
		for _, p := range m.Params() {
			for _, v := range p.W.Data {
				flat = append(flat, float64(v))
			}
		}
		params = append(params, flat)
	}
	out := filepath.Join(t.TempDir(), "avg")
	code, stdout, stderr := runCLI(t, "--json", "train", "average", "--out", out, "--weights", "1,3", dirs[0], dirs[1])
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum struct {
		Digest string `json:"model_sha256"`
		Models []struct {
			Dir    string  `json:"model"`
			Digest string  `json:"model_sha256"`
			Weight float64 `json:"weight"`
		} `json:"models"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v: %q", err, stdout)
	}
	if got, err := model.Digest(out); err != nil || got != sum.Digest {
		t.Fatalf("summary digest %s, the model's %s (%v)", sum.Digest, got, err)
	}
	for i, w := range []float64{0.25, 0.75} {
		digest, _ := model.Digest(dirs[i])
		if m := sum.Models[i]; m.Dir != dirs[i] || m.Digest != digest || m.Weight != w {
			t.Fatalf("input %d recorded as %+v, want %s %s %g", i+1, m, dirs[i], digest, w)
		}
	}
	avg, err := model.Load[float64](out)
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for _, p := range avg.Params() {
		for _, v := range p.W.Data {
			want := float64(float32(0.25*params[0][k] + 0.75*params[1][k]))
			if v != want && math.Abs(v-want) > 1e-7*math.Abs(want) {
				t.Fatalf("%s: %v, want %v", p.Name, v, want)
			}
			k++
		}
	}
	tr := avg.Config().Training
	cmd, _ := tr["command"].(string)
	if want := "lenspec train average --out DIR --weights 1,3 " + train.ShellWord(dirs[0]) + " " + train.ShellWord(dirs[1]); cmd != want || len(tr["average"].([]any)) != 2 {
		t.Fatalf("training record %v", tr)
	}
}
