package model

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/nn"
	"github.com/lenspec/lenspec/safetensors"
)

// tinyTransformerConfig is a transformer translator small enough for
// finite differences: vocabulary 11, d_model 8, 2 heads, 2+2 layers.
func tinyTransformerConfig(normFirst bool, act string) *Config {
	c := DefaultTransformerTranslatorConfig(11, 0, 1, 2, 3)
	a := c.Arch.(*TransformerTranslatorConfig)
	a.DModel, a.NHead, a.EncoderLayers, a.DecoderLayers, a.FF = 8, 2, 2, 2, 12
	a.NormFirst, a.Activation, a.MaxSourceLen = normFirst, act, 12
	c.MaxSteps = 8
	return &c
}

func tinyTransformer(t testing.TB, normFirst bool, act string, seed uint64) *TransformerTranslator[float64] {
	t.Helper()
	m, err := NewTransformerTranslator[float64](tinyTransformerConfig(normFirst, act), rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	// Larger weights than PyTorch's initialisation, and layer norms away
	// from (1, 0), so that every path matters in the tests.
	rng := rand.New(rand.NewPCG(seed, 2))
	for _, p := range m.Params() {
		for i := range p.W.Data {
			p.W.Data[i] = 0.5 * rng.NormFloat64()
		}
	}
	return m
}

// TestTransformerTranslatorConfigErrors: each bad key gives one error
// naming it; keys nn.Transformer has but lenspec does not support (bias,
// batch_first), or misspelt ones, are refused by name.
func TestTransformerTranslatorConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(*TransformerTranslatorConfig)
		want string
	}{
		{func(a *TransformerTranslatorConfig) { a.DModel = 0 }, "d_model 0 must be in 1..65536"},
		{func(a *TransformerTranslatorConfig) { a.NHead = 3 }, "nhead 3 must be a positive divisor of d_model 8"},
		{func(a *TransformerTranslatorConfig) { a.NHead = 0 }, "nhead 0 must be a positive divisor of d_model 8"},
		{func(a *TransformerTranslatorConfig) { a.EncoderLayers = 0 }, "num_encoder_layers 0 must be in 1..64"},
		{func(a *TransformerTranslatorConfig) { a.DecoderLayers = 65 }, "num_decoder_layers 65 must be in 1..64"},
		{func(a *TransformerTranslatorConfig) { a.FF = -1 }, "dim_feedforward -1 must be in 1..65536"},
		{func(a *TransformerTranslatorConfig) { a.Dropout = 1 }, "dropout 1 must be in [0, 1)"},
		{func(a *TransformerTranslatorConfig) { a.Activation = "tanh" }, `activation "tanh" is not supported (want "relu" or "gelu")`},
		{func(a *TransformerTranslatorConfig) { a.LayerNormEps = 0 }, "layer_norm_eps 0 must be a positive number"},
		{func(a *TransformerTranslatorConfig) { a.MaxSourceLen = 0 }, "max_source_len 0 must be in 1..65536"},
		{func(a *TransformerTranslatorConfig) { a.BOSID = 0 }, "pad_id and bos_id are both 0"},
		{func(a *TransformerTranslatorConfig) { a.UnkID = 11 }, "unk_id 11 outside the vocabulary of 11"},
	} {
		c := tinyTransformerConfig(false, "relu")
		tc.edit(c.Arch.(*TransformerTranslatorConfig))
		if err := c.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	c := tinyTransformerConfig(true, "gelu")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	good, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseConfig(good); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"bias":false`, `"batch_first":true`, `"dmodel":8`} {
		doc := strings.Replace(string(good), "{", "{"+key+",", 1)
		name, _, _ := strings.Cut(key, ":")
		if _, err := ParseConfig([]byte(doc)); err == nil || !strings.Contains(err.Error(), "unknown field "+name) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line naming the key", key, err)
		}
	}
}

// TestTransformerTranslatorStepsMatchWhole: greedy decoding with the
// key/value cache (sources of different lengths padded together, finished
// rows dropped from the batch, the state moved between tapes) gives every
// row the logits of decoding its greedy output again alone and whole
// (teacher forcing through the nn.Transformer stacks without a cache), for
// post- and pre-norm, ReLU and GELU; token, one-hot and embedding inputs
// agree.
func TestTransformerTranslatorStepsMatchWhole(t *testing.T) {
	for _, tc := range []struct {
		normFirst bool
		act       string
	}{{false, "relu"}, {true, "gelu"}} {
		m := tinyTransformer(t, tc.normFirst, tc.act, 7)
		res, logits := greedyLogits(t, m, tinySources, 8)
		for r, src := range tinySources {
			want := wholeTransformer(m, src, res[r].Tokens, len(logits[r]))
			for step := range want {
				for j := range want[step] {
					if d := math.Abs(want[step][j] - logits[r][step][j]); d > 1e-10*(1+math.Abs(want[step][j])) {
						t.Fatalf("norm_first %v, row %d, step %d, logit %d: cached %v, whole %v", tc.normFirst, r, step, j, logits[r][step][j], want[step][j])
					}
				}
			}
		}
		checkRelaxedInputs(t, m, m.SrcEmb.W, tinySources, res, 8, 1e-10)
	}
}

// wholeTransformer decodes one source's output tokens (the first steps of
// them) again without a cache: the whole target, <s> and the tokens, at
// once through the decoder stack's Forward, and returns every position's
// logits.
func wholeTransformer(m *TransformerTranslator[float64], src, out []int, steps int) [][]float64 {
	tp := ad.NewTape[float64](false)
	a, d := m.Arch, m.Arch.DModel
	scale := math.Sqrt(float64(d))
	embed := func(e *nn.Embedding[float64], ids []int) *ad.Node[float64] {
		x := tp.Reshape(tp.Scale(e.Forward(tp, ids), scale), len(ids), 1, d)
		return nn.Sinusoidal[float64]{Dim: d}.Add(tp, x, 0)
	}
	mem := m.Encoder.Forward(tp, embed(m.SrcEmb, src), nil, nn.Dropout{})
	tgt := append([]int{a.BOSID}, out...)[:steps]
	h := m.Decoder.Forward(tp, embed(m.TgtEmb, tgt), mem, nil, nil, nn.Dropout{})
	o := m.Out.Forward(tp, tp.Reshape(h, steps, d))
	v := a.Vocab
	rows := make([][]float64, steps)
	for i := range rows {
		rows[i] = o.Value.Data[i*v : (i+1)*v]
	}
	return rows
}

// TestTransformerTranslatorLossGradient: the teacher-forced loss's gradient
// with respect to every weight and to the source embeddings (the relaxed
// attacks' variable) matches central finite differences, through the
// cache, with padded sources.
func TestTransformerTranslatorLossGradient(t *testing.T) {
	m := tinyTransformer(t, false, "gelu", 5)
	labels := [][]int{{4, 5}, {}, {6, 7, 8}, {9}}
	total, d := 0, m.Arch.DModel
	for _, s := range tinySources {
		total += len(s)
	}
	rng := rand.New(rand.NewPCG(6, 6))
	emb := make([]float64, total*d)
	for i := range emb {
		emb[i] = 0.5 * rng.NormFloat64()
	}
	checkTeacherGradient(t, m, m.SrcEmb.W, tinySources, labels, emb)
}

// TestTransformerTranslatorLayout: a saved transformer translator loads
// back with PyTorch's tensor names; weights of another layout (a layer
// without biases, an extra layer) are refused with one line naming the
// tensor that differs.
func TestTransformerTranslatorLayout(t *testing.T) {
	m := tinyTransformer(t, true, "relu", 3)
	m32, err := Cast[float32](Decoder[float64](m))
	if err != nil {
		t.Fatal(err)
	}
	m32.Config().Tokenizer = tokenizedTranslator(t).Cfg.Tokenizer
	a := m32.Config().Arch.(*TransformerTranslatorConfig)
	a.Vocab = m32.Config().Tokenizer.Size()
	// A fresh model of the tokenizer's vocabulary, saved and loaded.
	d, err := New[float32](m32.Config(), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Save(dir, d); err != nil {
		t.Fatal(err)
	}
	back, err := Load[float32](dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, p := range back.Params() {
		names = append(names, p.Name)
		if !slices.Equal(p.W.Data, d.Params()[i].W.Data) {
			t.Fatalf("%s differs after loading", p.Name)
		}
	}
	for _, want := range []string{"src_embedding.weight", "tgt_embedding.weight",
		"transformer.encoder.layers.0.self_attn.in_proj_weight", "transformer.encoder.layers.1.linear2.bias",
		"transformer.encoder.norm.weight", "transformer.decoder.layers.1.multihead_attn.out_proj.weight",
		"transformer.decoder.layers.0.norm3.bias", "transformer.decoder.norm.bias", "out.weight", "out.bias"} {
		if !slices.Contains(names, want) {
			t.Errorf("no tensor %s in %v", want, names)
		}
	}
	for _, tc := range []struct {
		name string
		edit func(f *safetensors.File)
		want string
	}{
		{"no bias", func(f *safetensors.File) {
			f.Tensors = slices.DeleteFunc(f.Tensors, func(t safetensors.Tensor) bool { return strings.HasSuffix(t.Name, "in_proj_bias") })
		}, `missing tensor "transformer.encoder.layers.0.self_attn.in_proj_bias"`},
		{"extra layer", func(f *safetensors.File) {
			extra := f.Tensors[len(f.Tensors)-1]
			extra.Name = "transformer.encoder.layers.2.linear1.bias"
			f.Tensors = append(f.Tensors, extra)
		}, `unexpected tensor "transformer.encoder.layers.2.linear1.bias"`},
	} {
		bad := t.TempDir()
		for _, name := range []string{ConfigFile, "vocab.json", "merges.txt"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(bad, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f, err := safetensors.ReadFile(filepath.Join(dir, WeightsFile))
		if err != nil {
			t.Fatal(err)
		}
		tc.edit(f)
		if err := safetensors.WriteFile(filepath.Join(bad, WeightsFile), f); err != nil {
			t.Fatal(err)
		}
		if _, err := Load[float32](bad); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line with %s", tc.name, err, tc.want)
		}
	}
}

// stepsOnly hides a decoder's TeacherForcer, so teacher forcing runs it a
// step at a time.
type stepsOnly struct{ Decoder[float64] }

// TestTransformerTranslatorWholeTarget: teacher forcing over the whole
// target in one pass (TeacherForcer) gives the loss and every gradient of
// teacher forcing a step at a time through the cache.
func TestTransformerTranslatorWholeTarget(t *testing.T) {
	m := tinyTransformer(t, true, "relu", 9)
	labels := [][]int{{4, 5}, {}, {6, 7, 8}, {9}}
	grads := func(d Decoder[float64]) (float64, [][]float64) {
		for _, p := range m.Params() {
			p.ZeroGrad()
		}
		tp := ad.NewTrainingTape[float64]()
		l, err := TeacherForcedLoss[float64](tp, d, Input[float64]{Tokens: tinySources}, labels)
		if err != nil {
			t.Fatal(err)
		}
		if err := tp.Backward(l); err != nil {
			t.Fatal(err)
		}
		var g [][]float64
		for _, p := range m.Params() {
			g = append(g, slices.Clone(p.G.Data))
		}
		return l.Value.Data[0], g
	}
	if _, ok := Decoder[float64](stepsOnly{m}).(TeacherForcer[float64]); ok {
		t.Fatal("stepsOnly does not hide TeacherLogits")
	}
	lw, gw := grads(m)
	ls, gs := grads(stepsOnly{m})
	if math.Abs(lw-ls) > 1e-12*math.Abs(ls) {
		t.Fatalf("loss %v over the whole target, %v a step at a time", lw, ls)
	}
	for i, p := range m.Params() {
		for j := range gs[i] {
			if math.Abs(gw[i][j]-gs[i][j]) > 1e-10*(1+math.Abs(gs[i][j])) {
				t.Fatalf("%s[%d]: gradient %v over the whole target, %v a step at a time", p.Name, j, gw[i][j], gs[i][j])
			}
		}
	}
}
