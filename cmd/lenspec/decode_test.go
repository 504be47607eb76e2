package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
)

// TestDecodeNonFinite: a never-stopping model at a step cap past its
// overflow decodes to its output up to the overflow, marked as such in
// the JSON and the text line, with exit 0; before the fix the JSON
// failed on NaN margins (exit 1) and the text went on with invented
// tokens to the cap.
func TestDecodeNonFinite(t *testing.T) {
	dir := smallModel(t)
	d, err := model.Load[float32](dir)
	if err != nil {
		t.Fatal(err)
	}
	// The recurrence doubles the ReLU state every step; token 0's logit
	// is the state's sum, eos's −1.
	m := d.(*model.Captioner[float32])
	h := m.RNN.Hidden
	clear(m.RNN.Whh.W.Data)
	for i := 0; i < h; i++ {
		m.RNN.Whh.W.Data[i*h+i], m.RNN.Bhh.W.Data[i] = 2, 0.5
	}
	clear(m.Out.W.W.Data)
	for j := 0; j < h; j++ {
		m.Out.W.W.Data[j] = 1
	}
	clear(m.Out.B.W.Data)
	m.Out.B.W.Data[m.Cfg.EOS] = -1
	if err := model.Save(dir, d); err != nil {
		t.Fatal(err)
	}
	in := d.Input()
	input := filepath.Join(t.TempDir(), "x.safetensors")
	if err := safetensors.WriteFile(input, &safetensors.File{Tensors: []safetensors.Tensor{
		safetensors.F32("input", in.Shape, make([]float32, in.Size()))}}); err != nil {
		t.Fatal(err)
	}
	const cap = 5000
	code, stdout, stderr := runCLI(t, "decode", "--model", dir, "--input", input, "--max-steps", "5000", "--json")
	if code != 0 {
		t.Fatalf("decode --json: exit %d: %s", code, stderr)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	n := len(rec["tokens"].([]any))
	if rec["non_finite"] != true || rec["stopped"] != false || rec["length"] != nil || n == 0 || n >= cap {
		t.Fatalf("non_finite %v stopped %v length %v after %d tokens, want a marked output cut before the cap", rec["non_finite"], rec["stopped"], rec["length"], n)
	}
	code, stdout, stderr = runCLI(t, "decode", "--model", dir, "--input", input, "--max-steps", "5000")
	if code != 0 || !strings.Contains(stdout, "non-finite logits after") || strings.Count(stdout, " 0") != n {
		t.Fatalf("decode: exit %d, %d tokens shown, want %d: %.200s…%s", code, strings.Count(stdout, " 0"), n, stdout, stderr)
	}
}

// TestDecodeHelpNamesTheDataSet: decode's help says that --index and
// --data-seed read the data set the model reads, the captions data set
// for a Show-and-Tell model, not Multi-MNIST always.
func TestDecodeHelpNamesTheDataSet(t *testing.T) {
	code, stdout, _ := runCLI(t, "decode", "--help")
	if code != 0 {
		t.Fatalf("decode --help: exit %d", code)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "--index" || f[0] == "--data-seed") && !strings.Contains(line, "captions data set") {
			t.Errorf("decode --help: %q does not name the captions data set", strings.TrimSpace(line))
		}
	}
	if !strings.Contains(stdout, "the captions data set (skewed caption lengths) for a\nShow-and-Tell model") {
		t.Errorf("decode --help does not say which data set --index reads:\n%s", stdout)
	}
}
