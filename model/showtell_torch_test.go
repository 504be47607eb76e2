package model_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/captions"
	"github.com/lenspec/lenspec/mnist"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
)

// exportSnippet returns docs/models.md's PyTorch export snippet: the
// ```python block that starts with "# showtell-export", so the docs hold
// exactly what this test runs.
func exportSnippet(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/models.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```python\n# showtell-export")
	if !ok {
		t.Fatal("docs/models.md has no ```python block starting with # showtell-export")
	}
	code, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("docs/models.md: the export snippet's block does not end")
	}
	return "# showtell-export" + code
}

// TestShowTellPyTorchExport runs docs/models.md's PyTorch snippet (Debian's
// python3-torch, which make test installs) on the shipped
// models/showtell-lstm and 100 test canvases of the captions data set, and
// requires the greedy captions lenspec decodes in float64.
func TestShowTellPyTorchExport(t *testing.T) {
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import torch, numpy").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import torch and numpy (%v: %s): install Debian's python3-torch (make test does)", python, err, bytes.TrimSpace(out))
	}
	dir, err := mnist.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	_, digits, err := mnist.Load(dir)
	if err != nil {
		t.Fatalf("%v (make data fetches MNIST)", err)
	}
	_, fashion, err := mnist.LoadFashion(mnist.FashionDir)
	if err != nil {
		t.Fatal(err)
	}
	_, testSeed := captions.DeriveSeeds(1)
	ds, err := captions.Generate(digits, fashion, 100, testSeed, captions.Skewed())
	if err != nil {
		t.Fatal(err)
	}
	const modelDir = "../models/showtell-lstm"
	d, err := model.Load[float64](modelDir)
	if err != nil {
		t.Fatal(err)
	}
	in := d.Input()
	src, err := captions.NewSource[float64](ds, in.Min, in.Max)
	if err != nil {
		t.Fatal(err)
	}
	idx := make([]int, ds.N)
	for i := range idx {
		idx[i] = i
	}
	x, _, _ := src.Batch(idx, nil)
	want, err := model.Decode(context.Background(), d, model.Batch[float64]{X: x}, 0)
	if err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir()
	script, inputs := filepath.Join(tmp, "showtell_torch.py"), filepath.Join(tmp, "inputs.safetensors")
	if err := os.WriteFile(script, []byte(exportSnippet(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &safetensors.File{Tensors: []safetensors.Tensor{safetensors.F64("input", []int{ds.N, 1, captions.Height, captions.Width}, x)}}
	if err := safetensors.WriteFile(inputs, f); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, script, modelDir, inputs)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v: %s", script, err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	i, correct := 0, 0
	for ; sc.Scan(); i++ {
		var got struct {
			Tokens  []int `json:"tokens"`
			Stopped bool  `json:"stopped"`
		}
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if i >= len(want) {
			break
		}
		w := want[i]
		if !slices.Equal(got.Tokens, w.Tokens) || got.Stopped != w.Stopped {
			t.Errorf("canvas %d: PyTorch %v (stopped %v), lenspec %v (stopped %v, margin %g)", i, got.Tokens, got.Stopped, w.Tokens, w.Stopped, w.MinRelMargin)
		}
		if slices.Equal(w.Tokens, ds.Tokens[i]) {
			correct++
		}
	}
	if i != len(want) {
		t.Fatalf("PyTorch printed %d captions for %d canvases", i, len(want))
	}
	// The shipped model captions 53 % of the test split exactly (46 of these
	// 100); an untrained one, none.
	if correct < len(want)/3 {
		t.Errorf("the model captions only %d of %d canvases exactly: not the trained model", correct, len(want))
	}
}
