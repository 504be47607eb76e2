package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/captions"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
)

// TestShowTellCommands checks the Show-and-Tell commands' usage errors,
// gates on a random model and a refusal of a model without gates; the long
// runs (training, the experiment) are CLI runs, not tests.
func TestShowTellCommands(t *testing.T) {
	cfg := model.DefaultShowTellConfig(captions.Vocab)
	m, err := model.New[float32](&cfg, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := model.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "x.safetensors")
	x := make([]float64, captions.CanvasPixels)
	for i := range x {
		x[i] = float64(i%7)/3 - 1
	}
	if err := safetensors.WriteFile(in, &safetensors.File{Tensors: []safetensors.Tensor{safetensors.F64("input", []int{1, captions.Height, captions.Width}, x)}}); err != nil {
		t.Fatal(err)
	}
	// Another model's attack records.
	mm := smallModel(t)
	attacks := filepath.Join(t.TempDir(), "a.jsonl")
	if code, _, stderr := runCLI(t, "attack", "--model", mm, "--method", "random", "--budget", "2", "--index", "0", "--eps", "0.1", "--out", attacks, "-q"); code != 0 {
		t.Fatalf("attack: exit %d: %s", code, stderr)
	}
	digest := func(dir string) string {
		d, err := model.Digest(dir)
		if err != nil {
			t.Fatal(err)
		}
		return d[:12]
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"gates", "--model", dir, "--input", in, "--max-steps", "5"}, 0, "clean paths: 1"},
		{[]string{"gates", "--model", dir, "--input", in, "--attacks", attacks}, 2, fmt.Sprintf("lenspec: --attacks %s: its records are of model %s (model_sha256 %s), not of --model %s (%s)\n", attacks, mm, digest(mm), dir, digest(dir))},
		{[]string{"gates", "--model", smallModel(t), "--index", "0"}, 1, "no LSTM gates"},
		{[]string{"gates", "--model", dir, "--input", in, "--threshold", "0"}, 2, "--threshold"},
		{[]string{"gates", "--model", dir}, 2, "give inputs"},
		{[]string{"data", "captions", "--out", t.TempDir(), "--lengths", "long"}, 2, `--lengths "long"`},
		{[]string{"data", "captions", "--out", t.TempDir(), "--count", "100000000"}, 2, "lenspec: --count 100000000: want at most 10000, the test split's canvases\n"},
		{[]string{"data", "captions", "--histogram", "--scale", "2"}, 2, "lenspec: --scale is read only with --out: --histogram without it writes no previews\n"},
		{[]string{"data", "captions", "--count", "3"}, 2, "lenspec: --out is required\n"},
		{[]string{"train", "showtell", "--out", t.TempDir(), "--lengths", "long"}, 2, `--lengths "long"`},
		{[]string{"train", "showtell", "--out", t.TempDir(), "--epochs", "0"}, 2, "epochs"},
		{[]string{"experiment", "caption-attack", "--out", t.TempDir()}, 2, "--model and --out"},
		{[]string{"experiment", "caption-attack", "--model", dir, "--model", dir, "--out", t.TempDir()}, 2, "two models named"},
		{[]string{"experiment", "caption-attack", "--model", dir, "--out", t.TempDir(), "--losses", "nope"}, 2, "unknown loss"},
		// lenspec attack's checks, before any work.
		{[]string{"experiment", "caption-attack", "--model", dir, "--out", t.TempDir(), "--samples", "0"}, 2, "lenspec: --samples 0: want 1..1000000000\n"},
		{[]string{"experiment", "caption-attack", "--model", dir, "--out", t.TempDir(), "--restarts", "0"}, 2, "lenspec: --restarts 0: want at least 1 (the first run starts from the input itself)\n"},
		{[]string{"experiment", "caption-attack", "--model", dir, "--out", t.TempDir(), "--max-steps", "0"}, 2, "lenspec: --max-steps 0: want 1..10000\n"},
		{[]string{"experiment", "caption-attack", "--model", dir, "--out", t.TempDir(), "--eps", "0"}, 2, "lenspec: --eps 0: want positive, finite radii\n"},
		{[]string{"experiment", "mmnist-attack", "--model", smallModel(t), "--out", t.TempDir(), "--samples", "0"}, 2, "lenspec: --samples 0: want 1..1000000000\n"},
		{[]string{"experiment", "mmnist-attack", "--model", smallModel(t), "--out", t.TempDir(), "--restarts", "0"}, 2, "lenspec: --restarts 0: want at least 1 (the first run starts from the input itself)\n"},
		{[]string{"experiment", "mmnist-attack", "--model", smallModel(t), "--out", t.TempDir(), "--eps", "0"}, 2, "lenspec: --eps 0: want positive, finite radii\n"},
		{[]string{"attack", "--model", smallModel(t), "--out", filepath.Join(t.TempDir(), "a.jsonl"), "--index", "0", "--eps", "0.1", "--method", "random", "--budget", "0"}, 2, "lenspec: --budget 0: want 1..1000000000\n"},
		{[]string{"attack", "--model", smallModel(t), "--out", filepath.Join(t.TempDir(), "a.jsonl"), "--index", "0", "--eps", "0.1", "--restarts", "0"}, 2, "lenspec: --restarts 0: want at least 1 (the first run starts from the input itself)\n"},
		{[]string{"attack", "--model", smallModel(t), "--out", filepath.Join(t.TempDir(), "a.jsonl"), "--index", "0", "--eps", "0"}, 2, "lenspec: --eps 0: want positive, finite radii\n"},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
			t.Errorf("lenspec %s: exit %d, stdout %q, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.code, tc.want)
		}
		if tc.code != 0 && strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("lenspec %s: error on several lines: %q", strings.Join(tc.args, " "), stderr)
		}
	}
}
