package model

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/bpe"
)

func tinyTranslatorConfig(layers int) *Config {
	c := DefaultTranslatorConfig(11, 0, 1, 2, 3)
	a := c.Arch.(*TranslatorConfig)
	a.Embedding, a.EncoderHidden, a.EncoderLayers, a.DecoderHidden, a.Attention, a.Combine = 4, 3, layers, 5, 4, 6
	a.MaxSourceLen = 12
	c.MaxSteps = 8
	return &c
}

func tinyTranslator(t testing.TB, layers int, seed uint64) *Translator[float64] {
	t.Helper()
	m, err := NewTranslator[float64](tinyTranslatorConfig(layers), rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	// Larger weights than the ±0.1 initialisation, so that every path
	// (saturating gates, peaked attention) matters in the tests.
	rng := rand.New(rand.NewPCG(seed, 2))
	for _, p := range m.Params() {
		for i := range p.W.Data {
			p.W.Data[i] = rng.NormFloat64()
		}
	}
	return m
}

var tinySources = [][]int{{4, 5, 6}, {7}, {8, 9, 10, 4, 5}, {3, 0, 1}}

// TestTranslatorLossGradient: the teacher-forced loss's gradient with
// respect to every weight and to the source embeddings (the relaxed
// attacks' variable) matches central finite differences, with sources of
// different lengths (padding and masks on every path) and two encoder
// layers.
func TestTranslatorLossGradient(t *testing.T) {
	m := tinyTranslator(t, 2, 5)
	labels := [][]int{{4, 5}, {}, {6, 7, 8}, {9}}
	srcs := tinySources
	total := 0
	for _, s := range srcs {
		total += len(s)
	}
	rng := rand.New(rand.NewPCG(6, 6))
	emb := make([]float64, total*m.Arch.Embedding)
	for i := range emb {
		emb[i] = rng.NormFloat64()
	}
	checkTeacherGradient(t, m, m.SrcEmb.W, srcs, labels, emb)
}

// checkTeacherGradient checks the teacher-forced loss's gradient of the
// token-input model m on srcs and labels, the sources given as the
// embedding rows emb (the relaxed attacks' variable), against central
// finite differences: with respect to emb and every weight but the source
// table srcEmb, which emb replaces.
func checkTeacherGradient(t *testing.T, m Decoder[float64], srcEmb *ad.Param[float64], srcs, labels [][]int, emb []float64) {
	t.Helper()
	dim := srcEmb.W.Cols()
	total := len(emb) / dim
	loss := func() float64 {
		tp := ad.NewTape[float64](false)
		l, err := TeacherForcedLoss[float64](tp, m, Input[float64]{Tokens: srcs, Embedded: tp.Const(ad.FromSlice(emb, total, dim))}, labels)
		if err != nil {
			t.Fatal(err)
		}
		return l.Value.Data[0]
	}
	tp := ad.NewTrainingTape[float64]()
	en := tp.Var(ad.FromSlice(emb, total, dim))
	l, err := TeacherForcedLoss[float64](tp, m, Input[float64]{Tokens: srcs, Embedded: en}, labels)
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Backward(l); err != nil {
		t.Fatal(err)
	}
	checkFD(t, "embedded input", emb, en.Grad.Data, loss)
	for _, p := range m.Params() {
		if p == srcEmb {
			continue // replaced by the embedded input here
		}
		checkFD(t, p.Name, p.W.Data, p.G.Data, loss)
	}
}

// naiveTranslate is a one-sequence reference of the translator written
// with scalar loops, guarding the batched, time-major tape path: it
// returns the logits of every greedy step.
func naiveTranslate(m *Translator[float64], src []int, steps int) [][]float64 {
	a := m.Arch
	row := func(p *ad.Param[float64], i int) []float64 {
		c := p.W.Cols()
		return p.W.Data[i*c : (i+1)*c]
	}
	linear := func(w, b *ad.Param[float64], x []float64) []float64 {
		out := make([]float64, w.W.Rows())
		for i := range out {
			for j, v := range row(w, i) {
				out[i] += v * x[j]
			}
			if b != nil {
				out[i] += b.W.Data[i]
			}
		}
		return out
	}
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	lstm := func(cell interface {
		params() (wih, whh, bih, bhh *ad.Param[float64])
	}, x, h, c []float64) ([]float64, []float64) {
		wih, whh, bih, bhh := cell.params()
		g1, g2 := linear(wih, bih, x), linear(whh, bhh, h)
		n := len(h)
		hn, cn := make([]float64, n), make([]float64, n)
		for j := 0; j < n; j++ {
			i, f := sig(g1[j]+g2[j]), sig(g1[n+j]+g2[n+j])
			g, o := math.Tanh(g1[2*n+j]+g2[2*n+j]), sig(g1[3*n+j]+g2[3*n+j])
			cn[j] = f*c[j] + i*g
			hn[j] = o * math.Tanh(cn[j])
		}
		return hn, cn
	}
	xs := make([][]float64, len(src))
	for t, id := range src {
		xs[t] = row(m.SrcEmb.W, id)
	}
	var lastF, lastB []float64
	for l := range m.Fwd {
		h := a.EncoderHidden
		outF, outB := make([][]float64, len(src)), make([][]float64, len(src))
		hf, cf := make([]float64, h), make([]float64, h)
		for t := range src {
			hf, cf = lstm(cellParams{m.Fwd[l]}, xs[t], hf, cf)
			outF[t] = hf
		}
		hb, cb := make([]float64, h), make([]float64, h)
		for t := len(src) - 1; t >= 0; t-- {
			hb, cb = lstm(cellParams{m.Bwd[l]}, xs[t], hb, cb)
			outB[t] = hb
		}
		for t := range src {
			xs[t] = append(append([]float64(nil), outF[t]...), outB[t]...)
		}
		lastF, lastB = hf, hb
	}
	keys := make([][]float64, len(src))
	for t := range src {
		keys[t] = linear(m.Key.W, m.Key.B, xs[t])
	}
	s := linear(m.Bridge.W, m.Bridge.B, append(append([]float64(nil), lastF...), lastB...))
	for i := range s {
		s[i] = math.Tanh(s[i])
	}
	c := make([]float64, a.DecoderHidden)
	prev := a.BOSID
	var out [][]float64
	for step := 0; step < steps; step++ {
		q := linear(m.Query.W, nil, s)
		e := make([]float64, len(src))
		mx := math.Inf(-1)
		for t := range src {
			for j := range q {
				e[t] += m.V.W.W.Data[j] * math.Tanh(keys[t][j]+q[j])
			}
			mx = math.Max(mx, e[t])
		}
		var z float64
		for t := range e {
			e[t] = math.Exp(e[t] - mx)
			z += e[t]
		}
		ctx := make([]float64, 2*a.EncoderHidden)
		for t := range src {
			for j := range ctx {
				ctx[j] += e[t] / z * xs[t][j]
			}
		}
		s, c = lstm(cellParams{m.Cell}, append(append([]float64(nil), row(m.TgtEmb.W, prev)...), ctx...), s, c)
		o := linear(m.Combine.W, m.Combine.B, append(append([]float64(nil), s...), ctx...))
		for i := range o {
			o[i] = math.Tanh(o[i])
		}
		logits := linear(m.Out.W, m.Out.B, o)
		out = append(out, logits)
		prev = 0
		for i, v := range logits {
			if v > logits[prev] {
				prev = i
			}
		}
		if prev == m.Cfg.EOS {
			break
		}
	}
	return out
}

type cellParams struct {
	c interface {
		Params() []*ad.Param[float64]
	}
}

func (p cellParams) params() (wih, whh, bih, bhh *ad.Param[float64]) {
	ps := p.c.Params()
	return ps[0], ps[1], ps[2], ps[3]
}

// TestTranslatorMatchesNaive: batched greedy decoding (sources of
// different lengths padded together, finished rows dropped from the batch)
// gives every row the logits and tokens of the scalar one-sequence
// reference; token, one-hot (Soft) and embedding inputs agree.
func TestTranslatorMatchesNaive(t *testing.T) {
	for _, layers := range []int{1, 2} {
		m := tinyTranslator(t, layers, uint64(10+layers))
		res, logits := greedyLogits(t, m, tinySources, 8)
		for r, src := range tinySources {
			want := naiveTranslate(m, src, 8)
			if len(want) != len(logits[r]) {
				t.Fatalf("layers %d, row %d: %d steps batched, %d alone", layers, r, len(logits[r]), len(want))
			}
			for step := range want {
				for j := range want[step] {
					if d := math.Abs(want[step][j] - logits[r][step][j]); d > 1e-12*(1+math.Abs(want[step][j])) {
						t.Fatalf("layers %d, row %d, step %d, logit %d: batched %v, alone %v", layers, r, step, j, logits[r][step][j], want[step][j])
					}
				}
			}
			if res[r].Stopped != (len(res[r].Tokens) < 8) {
				t.Fatalf("row %d: %+v", r, res[r])
			}
		}

		checkRelaxedInputs(t, m, m.SrcEmb.W, tinySources, res, 8, 1e-12)
	}
}

// greedyLogits decodes the sources srcs greedily with m, at most
// maxSteps steps (0: the model's cap), and returns the results and every
// row's logits at each step it was decoding.
func greedyLogits(t *testing.T, m Decoder[float64], srcs [][]int, maxSteps int) ([]Result, [][][]float64) {
	t.Helper()
	logits := make([][][]float64, len(srcs))
	res, err := Greedy(ad.NewTape[float64](false), m, Input[float64]{Tokens: srcs}, GreedyOptions[float64]{MaxSteps: maxSteps,
		OnStep: func(_ int, o *ad.Node[float64], rows []int, live []bool) {
			v := o.Value.Cols()
			for k, r := range rows {
				if live[k] {
					logits[r] = append(logits[r], slices.Clone(o.Value.Data[k*v:(k+1)*v]))
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	return res, logits
}

// checkRelaxedInputs requires the sources srcs given as one-hot rows
// (Input.Soft) and as rows of the source table srcEmb (Input.Embedded) to
// decode as the tokens did (want), margins to tol.
func checkRelaxedInputs(t *testing.T, m Decoder[float64], srcEmb *ad.Param[float64], srcs [][]int, want []Result, maxSteps int, tol float64) {
	t.Helper()
	var soft, emb []float64
	d := srcEmb.W.Cols()
	for _, src := range srcs {
		for _, id := range src {
			oh := make([]float64, m.Vocab())
			oh[id] = 1
			soft = append(soft, oh...)
			emb = append(emb, srcEmb.W.Data[id*d:(id+1)*d]...)
		}
	}
	n := len(soft) / m.Vocab()
	tp := ad.NewTape[float64](false)
	for name, in := range map[string]Input[float64]{
		"soft":     {Tokens: srcs, Soft: tp.Const(ad.FromSlice(soft, n, m.Vocab()))},
		"embedded": {Tokens: srcs, Embedded: tp.Const(ad.FromSlice(emb, n, d))},
	} {
		got, err := Greedy(ad.NewTape[float64](false), m, in, GreedyOptions[float64]{MaxSteps: maxSteps})
		if err != nil {
			t.Fatal(err)
		}
		for r := range want {
			if !slices.Equal(got[r].Tokens, want[r].Tokens) || math.Abs(got[r].MinMargin-want[r].MinMargin) > tol {
				t.Fatalf("%s input, row %d: %+v, tokens %+v", name, r, got[r], want[r])
			}
		}
	}
}

// TestTranslatorRejectsBadInput: wrong kinds, lengths and ids are errors,
// never panics, for the LSTM and the transformer translator.
func TestTranslatorRejectsBadInput(t *testing.T) {
	for _, m := range []Decoder[float64]{tinyTranslator(t, 1, 1), tinyTransformer(t, false, "relu", 1)} {
		rejectsBadInput(t, m)
	}
}

func rejectsBadInput(t *testing.T, m Decoder[float64]) {
	tp := ad.NewTape[float64](false)
	for name, in := range map[string]Input[float64]{
		"continuous":   {X: tp.Const(ad.New[float64](1, 3))},
		"empty batch":  {},
		"empty source": {Tokens: [][]int{{4}, {}}},
		"too long":     {Tokens: [][]int{make([]int, 13)}},
		"bad id":       {Tokens: [][]int{{4, 11}}},
		"negative id":  {Tokens: [][]int{{-1}}},
		"soft shape":   {Tokens: [][]int{{4, 5}}, Soft: tp.Const(ad.New[float64](2, 3))},
		"emb shape":    {Tokens: [][]int{{4, 5}}, Embedded: tp.Const(ad.New[float64](3, 4))},
		"dropout rng":  {Tokens: [][]int{{4}}, Dropout: 0.5},
	} {
		if _, err := m.Start(tp, in); err == nil {
			t.Errorf("%s: %s: no error", m.Config().Architecture, name)
		}
	}
}

// tokenizedTranslator is a tiny translator with a BPE tokenizer of its
// own, learnt from three sentences.
func tokenizedTranslator(t *testing.T) *Translator[float32] {
	t.Helper()
	tok, err := bpe.Train([]string{"das haus ist klein", "the house is small", "ein kleines haus"}, bpe.TrainOptions{VocabSize: 300, MinFrequency: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultTranslatorConfig(tok.Size(), bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID)
	a := cfg.Arch.(*TranslatorConfig)
	a.Embedding, a.EncoderHidden, a.DecoderHidden, a.Attention, a.Combine = 4, 3, 5, 4, 6
	cfg.Tokenizer = tok
	m, err := NewTranslator[float32](&cfg, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTranslatorSaveLoad: a translator saved with its tokenizer loads back
// with the same weights, tokenizer and digest inputs; a tokenizer that does
// not match config.json is refused, naming the file.
func TestTranslatorSaveLoad(t *testing.T) {
	m := tokenizedTranslator(t)
	tok := m.Cfg.Tokenizer
	dir := t.TempDir()
	if err := Save[float32](dir, m); err != nil {
		t.Fatal(err)
	}
	back, err := Load[float32](dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.Config().Tokenizer == nil || back.Config().Tokenizer.Size() != tok.Size() || len(back.Config().Vocab) != 0 {
		t.Fatal("tokenizer not restored")
	}
	for i, p := range back.Params() {
		if !slices.Equal(p.W.Data, m.Params()[i].W.Data) {
			t.Fatalf("%s differs after loading", p.Name)
		}
	}
	ids := tok.Encode("das kleine haus")
	r1, _ := Decode(context.Background(), Decoder[float32](m), Batch[float32]{Tokens: [][]int{ids}}, 5)
	r2, _ := Decode(context.Background(), back, Batch[float32]{Tokens: [][]int{ids}}, 5)
	if !slices.Equal(r1[0].Tokens, r2[0].Tokens) {
		t.Fatal("loaded model decodes differently")
	}
	// A config whose vocab_size differs from vocab.json's (edited by
	// hand, the checksums removed).
	os.Remove(filepath.Join(dir, SumsFile))
	if err := rewriteConfig(dir, func(c *Config) { c.Arch.(*TranslatorConfig).Vocab++ }); err != nil {
		t.Fatal(err)
	}
	if _, err := Load[float32](dir); err == nil || !strings.Contains(err.Error(), "vocab.json") {
		t.Fatalf("mismatched vocabulary: error %v", err)
	}
}

// TestLongDecodeRecycles: a decode long enough to move its state to fresh
// memory several times (no gradient, no observer) gives exactly the
// outputs of one that keeps every step on its tape (an observer set).
func TestLongDecodeRecycles(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		m := tinyTranslator(t, 1, seed)
		in := func(tp *ad.Tape[float64]) Input[float64] { return Input[float64]{Tokens: tinySources} }
		run := func(observe bool) []Result {
			tp := ad.NewTape[float64](false)
			opt := GreedyOptions[float64]{MaxSteps: 5 * recycleEvery, NoEOS: true}
			if observe {
				opt.OnStep = func(int, *ad.Node[float64], []int, []bool) {}
			}
			res, err := Greedy[float64](tp, m, in(tp), opt)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		kept, recycled := run(true), run(false)
		for i := range kept {
			if len(recycled[i].Tokens) != 5*recycleEvery || !slices.Equal(kept[i].Tokens, recycled[i].Tokens) || kept[i].MinMargin != recycled[i].MinMargin {
				t.Fatalf("seed %d row %d: recycled %v, kept %v", seed, i, recycled[i].Tokens, kept[i].Tokens)
			}
		}
	}
}

// TestChunkRows: ChunkRows is the size of every chunk but the last of a
// batch of equal-length inputs, continuous or token inputs of any length,
// so a caller splitting at its multiples splits where Decode does.
func TestChunkRows(t *testing.T) {
	m := tinyTranslator(t, 1, 21)
	for _, tc := range []struct {
		spec   InputSpec
		tokens int
	}{{InputSpec{Kind: Continuous}, 0}, {m.Input(), 1}, {m.Input(), 7}, {m.Input(), 9}, {m.Input(), 300}, {m.Input(), 5000}} {
		const n = 1000
		b := Batch[float64]{Tokens: make([][]int, n)}
		if tc.spec.Kind == Continuous {
			b = Batch[float64]{}
		}
		for i := range b.Tokens {
			b.Tokens[i] = make([]int, tc.tokens)
		}
		rows := ChunkRows(tc.spec, tc.tokens)
		for k, c := range b.chunks(tc.spec, n) {
			if c[0] != k*rows || c[1] != min(n, (k+1)*rows) {
				t.Fatalf("%d tokens: chunk %d is %v, ChunkRows %d", tc.tokens, k, c, rows)
			}
		}
	}
}

// TestDecodeChunksBoundTokens: Decode's chunks cover the batch in order,
// none has more than decodeChunk rows or (unless it is one row) more than
// decodeTokens padded source tokens, and a batch decoded across chunks of
// every size gives each row what it gives alone.
func TestDecodeChunksBoundTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	m := tinyTranslator(t, 1, 21)
	var srcs [][]int
	for i := 0; i < 700; i++ {
		n := 1 + rng.IntN(3)
		if i > 400 {
			n = 1 + rng.IntN(12) // long and short mixed
		}
		src := make([]int, n)
		for j := range src {
			src[j] = 3 + rng.IntN(8)
		}
		srcs = append(srcs, src)
	}
	b := Batch[float64]{Tokens: srcs}
	chunks := b.chunks(m.Input(), len(srcs))
	next, bounded := 0, 0
	for _, c := range chunks {
		rows, longest := c[1]-c[0], 0
		for _, s := range srcs[c[0]:c[1]] {
			longest = max(longest, len(s))
		}
		if c[0] != next || rows < 1 || rows > decodeChunk || (rows > 1 && rows*longest > decodeTokens) {
			t.Fatalf("chunk %v (longest source %d) after row %d", c, longest, next)
		}
		if rows < decodeChunk && c[1] < len(srcs) {
			bounded++
		}
		next = c[1]
	}
	if next != len(srcs) || bounded == 0 {
		t.Fatalf("chunks %v: cover %d of %d rows, %d bounded by tokens", chunks, next, len(srcs), bounded)
	}
	res, err := Decode(context.Background(), Decoder[float64](m), b, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, src := range srcs {
		alone, err := Greedy(ad.NewTape[float64](false), Decoder[float64](m), Input[float64]{Tokens: [][]int{src}}, GreedyOptions[float64]{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(alone[0].Tokens, res[i].Tokens) || alone[0].Stopped != res[i].Stopped {
			t.Fatalf("row %d: %+v in the batch, %+v alone", i, res[i], alone[0])
		}
	}
}

// TestEncoderKeepsOnlyState: on a tape that records nothing, the encoder
// keeps each step's state and drops its gates, so it allocates well under
// half what a recording tape keeps, and computes exactly the same values.
func TestEncoderKeepsOnlyState(t *testing.T) {
	cfg := DefaultTranslatorConfig(50, 0, 1, 2, 3)
	a := cfg.Arch.(*TranslatorConfig)
	a.Embedding, a.EncoderHidden, a.DecoderHidden, a.Attention, a.Combine, a.MaxSourceLen = 16, 64, 16, 16, 16, 40
	m, err := NewTranslator[float32](&cfg, rand.New(rand.NewPCG(9, 1)))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 2))
	var srcs [][]int
	for i := 0; i < 64; i++ {
		src := make([]int, 20+rng.IntN(20))
		for j := range src {
			src[j] = 4 + rng.IntN(46)
		}
		srcs = append(srcs, src)
	}
	start := func(record bool) (*translatorState[float32], uint64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s, err := m.Start(ad.NewTape[float32](record), Input[float32]{Tokens: srcs})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		return s.(*translatorState[float32]), after.TotalAlloc - before.TotalAlloc
	}
	kept, recorded := start(true)
	plain, used := start(false)
	for name, pair := range map[string][2]*ad.Node[float32]{"memory": {kept.mem, plain.mem}, "keys": {kept.keys, plain.keys}, "h": {kept.h, plain.h}} {
		if !slices.Equal(pair[0].Value.Data, pair[1].Value.Data) {
			t.Fatalf("%s differs between the recording and the plain encoder", name)
		}
	}
	if used > recorded/2 {
		t.Fatalf("the plain encoder allocated %d bytes, the recording one %d: want under half", used, recorded)
	}
	t.Logf("encoder allocations: %d bytes plain, %d recording", used, recorded)
}
