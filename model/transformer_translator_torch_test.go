package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/bpe"
)

// transformerTorchScript is docs/models.md's PyTorch class (the ```python
// block starting "# transformer-translator", so the docs hold exactly what
// runs) followed by the test's harness, testdata/transformer_translator_torch.py.
func transformerTorchScript(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/models.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```python\n# transformer-translator\n")
	if !ok {
		t.Fatal("docs/models.md has no ```python block starting with # transformer-translator")
	}
	class, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("docs/models.md: the transformer-translator block does not end")
	}
	harness, err := os.ReadFile("testdata/transformer_translator_torch.py")
	if err != nil {
		t.Fatal(err)
	}
	return class + string(harness)
}

// runPython runs script with Debian's PyTorch (python3-torch, which make
// test installs), stdin as its input, and returns its standard output.
func runPython(t *testing.T, script string, stdin []byte, args ...string) []byte {
	t.Helper()
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import torch, numpy").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import torch and numpy (%v: %s): install Debian's python3-torch (make test does)", python, err, bytes.TrimSpace(out))
	}
	cmd := exec.Command(python, append([]string{"-c", script}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python %s: %v: %s", args[0], err, stderr.String())
	}
	return out
}

// torchEOSBias and goEOSBias favour the end of sequence in the random
// models, so that some of their outputs stop (and the batch drops rows)
// and some reach the step cap.
const torchEOSBias, goEOSBias = 3, 4

// TestTransformerTranslatorPyTorch exchanges transformer translators with
// PyTorch both ways, through docs/models.md's class: a random
// nn.Transformer-based model (post-norm, GELU, 2 encoder layers and 1
// decoder layer, eps 10⁻⁶) saved by PyTorch, and a random lenspec model of
// another shape (pre-norm, ReLU, 1 and 2 layers) saved by lenspec, each
// decoded greedily in float64 by both on a batch of random sources of
// different lengths: the same tokens, and every step's logits to 10⁻⁹.
func TestTransformerTranslatorPyTorch(t *testing.T) {
	script := transformerTorchScript(t)
	tok := tokenizedTranslator(t).Cfg.Tokenizer
	v := tok.Size()
	rng := rand.New(rand.NewPCG(3, 3))
	sources := make([][]int, 7)
	for i := range sources {
		sources[i] = make([]int, 1+rng.IntN(12))
		for j := range sources[i] {
			sources[i][j] = 4 + rng.IntN(v-4)
		}
	}
	srcJSON, _ := json.Marshal(sources)

	// PyTorch → lenspec.
	fromTorch := t.TempDir()
	if err := tok.Save(fromTorch); err != nil {
		t.Fatal(err)
	}
	section := TransformerTranslatorConfig{Vocab: v, PadID: bpe.PadID, BOSID: bpe.BOSID, UnkID: bpe.UnkID,
		DModel: 12, NHead: 3, EncoderLayers: 2, DecoderLayers: 1, FF: 20, Dropout: 0.1, Activation: "gelu",
		LayerNormEps: 1e-6, MaxSourceLen: 16}
	sj, _ := json.Marshal(section)
	runPython(t, script, nil, "export", fromTorch, "1", string(sj), fmt.Sprint(bpe.EOSID), "10", fmt.Sprint(torchEOSBias))

	// lenspec → PyTorch.
	fromGo := t.TempDir()
	cfg := DefaultTransformerTranslatorConfig(v, bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID)
	a := cfg.Arch.(*TransformerTranslatorConfig)
	a.DModel, a.NHead, a.EncoderLayers, a.DecoderLayers, a.FF, a.MaxSourceLen = 16, 4, 1, 2, 24, 16
	cfg.MaxSteps, cfg.Tokenizer = 10, tok
	d, err := New[float32](&cfg, rand.New(rand.NewPCG(4, 4)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Params() { // layer norms away from (1, 0) too
		for i := range p.W.Data {
			p.W.Data[i] += float32(0.2 * rng.NormFloat64())
		}
	}
	d.(*TransformerTranslator[float32]).Out.B.W.Data[bpe.EOSID] += goEOSBias
	if err := Save(fromGo, d); err != nil {
		t.Fatal(err)
	}

	for _, dir := range []string{fromTorch, fromGo} {
		name := map[string]string{fromTorch: "saved by PyTorch", fromGo: "saved by lenspec"}[dir]
		var want []struct {
			Tokens []int
			Logits [][]float64
		}
		if err := json.Unmarshal(runPython(t, script, srcJSON, "decode", dir), &want); err != nil {
			t.Fatal(err)
		}
		m, err := Load[float64](dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		res, logits := greedyLogits(t, m, sources, 0)
		stopped, worst := 0, 0.0
		for r := range sources {
			if !slices.Equal(res[r].Tokens, want[r].Tokens) || len(logits[r]) != len(want[r].Logits) {
				t.Fatalf("%s, source %d: lenspec decodes %v, PyTorch %v", name, r, res[r].Tokens, want[r].Tokens)
			}
			for s := range logits[r] {
				for j, w := range want[r].Logits[s] {
					worst = math.Max(worst, math.Abs(logits[r][s][j]-w)/(1+math.Abs(w)))
				}
			}
			if res[r].Stopped {
				stopped++
			}
		}
		if stopped == 0 || stopped == len(sources) {
			t.Errorf("%s: %d of %d outputs stopped; the test wants both kinds", name, stopped, len(sources))
		}
		if worst > 1e-9 {
			t.Errorf("%s: logits differ from PyTorch's by up to %.3g (relative)", name, worst)
		}
		t.Logf("%s: %d sources, the same greedy tokens (%d stopped), logits within %.3g", name, len(sources), stopped, worst)
	}
}
