package model

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/nn"
)

// ArchTranslator names the attention sequence-to-sequence translator in
// config.json.
const ArchTranslator = "bilstm-attention-translator"

// TranslatorConfig is the translator's section of config.json. Source and
// target share one BPE vocabulary (the tokenizer's vocab.json) but have
// their own embedding tables.
type TranslatorConfig struct {
	// VocabSize is the tokenizer's vocabulary size; PadID and BOSID its
	// padding and begin-of-sequence ids (the header's eos_id is its end).
	Vocab int `json:"vocab_size"`
	PadID int `json:"pad_id"`
	BOSID int `json:"bos_id"`
	UnkID int `json:"unk_id"`
	// Embedding is the size of both embedding tables.
	Embedding int `json:"embedding_size"`
	// EncoderHidden is the size of each direction of the bidirectional
	// LSTM encoder; EncoderLayers stacks them (each layer reads the
	// previous one's two directions concatenated).
	EncoderHidden int `json:"encoder_hidden"`
	EncoderLayers int `json:"encoder_layers"`
	// DecoderHidden is the LSTM decoder's size, Attention the size of
	// Bahdanau's alignment layer, Combine the size of the layer that
	// mixes the decoder state and the context before the output
	// projection.
	DecoderHidden int `json:"decoder_hidden"`
	Attention     int `json:"attention_size"`
	Combine       int `json:"combine_size"`
	// MaxSourceLen bounds the source sequences Start accepts, in tokens.
	MaxSourceLen int `json:"max_source_len"`
}

// VocabSize is the shared vocabulary's size (TokenizedArch).
func (a *TranslatorConfig) VocabSize() int { return a.Vocab }

// SpecialIDs are the ids the tokenizer must give padding, the start of a
// sequence and unknown tokens.
func (a *TranslatorConfig) SpecialIDs() (pad, bos, unk int) { return a.PadID, a.BOSID, a.UnkID }

// DefaultTranslatorConfig is the shape of models/nmt-de-en for a
// vocabulary of vocab tokens with the tokenizer's special ids.
func DefaultTranslatorConfig(vocab, pad, bos, eos, unk int) Config {
	return Config{
		Architecture: ArchTranslator,
		EOS:          eos,
		MaxSteps:     200,
		DType:        "float32",
		Arch: &TranslatorConfig{
			Vocab: vocab, PadID: pad, BOSID: bos, UnkID: unk,
			Embedding: 256, EncoderHidden: 256, EncoderLayers: 1,
			DecoderHidden: 256, Attention: 256, Combine: 256, MaxSourceLen: 200,
		},
	}
}

// Validate checks the section describes a translator lenspec can build.
func (a *TranslatorConfig) Validate(c *Config) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, d := range []struct {
		name string
		v    int
	}{{"vocab_size", a.Vocab}, {"embedding_size", a.Embedding}, {"encoder_hidden", a.EncoderHidden},
		{"decoder_hidden", a.DecoderHidden}, {"attention_size", a.Attention}, {"combine_size", a.Combine},
		{"max_source_len", a.MaxSourceLen}} {
		if d.v <= 0 || d.v > maxDim {
			bad("%s %d must be in 1..%d", d.name, d.v, maxDim)
		}
	}
	if a.EncoderLayers < 1 || a.EncoderLayers > 16 {
		bad("encoder_layers %d must be in 1..16", a.EncoderLayers)
	}
	checkSpecialIDs(bad, a.Vocab, a.PadID, a.BOSID, a.UnkID, c.EOS)
	return errors.Join(errs...)
}

// checkSpecialIDs reports through bad a special id outside a vocabulary of
// vocab tokens, or two special tokens sharing an id.
func checkSpecialIDs(bad func(format string, args ...any), vocab, pad, bos, unk, eos int) {
	ids := map[string]int{"pad_id": pad, "bos_id": bos, "unk_id": unk, "eos_id": eos}
	seen := map[int]string{}
	for _, name := range []string{"pad_id", "bos_id", "unk_id", "eos_id"} {
		id := ids[name]
		if id < 0 || id >= vocab {
			bad("%s %d outside the vocabulary of %d", name, id, vocab)
		} else if other, dup := seen[id]; dup {
			bad("%s and %s are both %d", other, name, id)
		}
		seen[id] = name
	}
}

// ParamCount counts the translator's parameters.
func (a *TranslatorConfig) ParamCount(*Config) float64 {
	v, e, h, d := float64(a.Vocab), float64(a.Embedding), float64(a.EncoderHidden), float64(a.DecoderHidden)
	at, o := float64(a.Attention), float64(a.Combine)
	n := 2 * v * e // embeddings
	in := e
	for l := 0; l < a.EncoderLayers; l++ {
		n += 2 * 4 * h * (in + h + 2)
		in = 2 * h
	}
	n += d*(2*h+1) + at*(2*h+1) + at*d + at // bridge, keys, query, v
	n += 4 * d * (e + 2*h + d + 2)          // decoder cell
	return n + o*(d+2*h+1) + v*(o+1)
}

// FLOPs counts the floating-point operations of translating one source
// of srcLen tokens with steps decoder steps (2 per multiply-add of every
// GEMM; the elementwise work of gates and attention is left out), for
// benchmark ratios: the encoder's input and recurrent GEMMs in both
// directions of every layer, the keys and the bridge, and per step the
// query, the scores and context over the source, the decoder cell, the
// combining layer and the output projection. A training step is about
// three times its forward pass.
func (a *TranslatorConfig) FLOPs(srcLen, steps int) float64 {
	n, h, d := float64(srcLen), float64(a.EncoderHidden), float64(a.DecoderHidden)
	e, at, o, v := float64(a.Embedding), float64(a.Attention), float64(a.Combine), float64(a.Vocab)
	f, in := 0.0, e
	for l := 0; l < a.EncoderLayers; l++ {
		f += 2 * n * 2 * 4 * h * (in + h)
		in = 2 * h
	}
	f += 2*n*2*h*at + 2*2*h*d
	step := 2*d*at + 2*n*at + 2*n*2*h + 2*4*d*(e+2*h+d) + 2*o*(d+2*h) + 2*v*o
	return f + float64(steps)*step
}

// Spec is the translator's input description.
func (a *TranslatorConfig) Spec(c *Config) InputSpec {
	return InputSpec{Kind: Tokens, Vocab: a.Vocab, Special: []int{a.PadID, a.BOSID, c.EOS, a.UnkID}, MaxLen: a.MaxSourceLen}
}

func init() {
	Register(Architecture{
		Name: ArchTranslator,
		ParseConfig: func(b []byte) (ArchConfig, error) {
			var a TranslatorConfig
			if err := DecodeSection(b, &a); err != nil {
				return nil, err
			}
			return &a, nil
		},
		New32: func(c *Config, rng *rand.Rand) (Decoder[float32], error) { return NewTranslator[float32](c, rng) },
		New64: func(c *Config, rng *rand.Rand) (Decoder[float64], error) { return NewTranslator[float64](c, rng) },
	})
}

// Translator is the paper's third model (§4, §5.1: Bahdanau et al.'s
// attention sequence-to-sequence model) at a size this machine trains:
//
//	encoder: x_t = E_src[w_t]; a bidirectional LSTM, EncoderLayers deep,
//	         gives m_t = [→h_t; ←h_t] for every source position t
//	bridge:  s₀ = tanh(W_b [→h_n; ←h_1] + b_b),  c₀ = 0
//	step:    e_t = vᵀ tanh(W_k m_t + b_k + W_q s_{i−1}),  α = softmax(e) over
//	         the source positions,  ctx = Σ_t α_t m_t
//	         (s_i, c_i) = LSTM([E_tgt[y_{i−1}]; ctx], (s_{i−1}, c_{i−1}))
//	         o_i = W_o tanh(W_c [s_i; ctx] + b_c) + b_o
//
// with y₀ = <s> and greedy y_i = argmax o_i until </s>. Source positions
// past a sequence's end are masked out of the attention, and the encoder
// keeps a finished sequence's state, so padding never changes a result.
type Translator[T ad.Float] struct {
	Cfg  *Config
	Arch *TranslatorConfig
	// SrcEmb and TgtEmb are the embedding tables; Fwd and Bwd the
	// encoder's layers in each direction.
	SrcEmb, TgtEmb *nn.Embedding[T]
	Fwd, Bwd       []*nn.LSTMCell[T]
	Bridge, Key    *nn.Linear[T]
	Query, V       *nn.Linear[T]
	Cell           *nn.LSTMCell[T]
	Combine, Out   *nn.Linear[T]
}

// NewTranslator builds a translator for cfg. Weights are drawn uniformly
// from ±0.1 (the classic sequence-to-sequence initialisation) from rng;
// nil leaves them zero for weights loaded next.
func NewTranslator[T ad.Float](cfg *Config, rng *rand.Rand) (*Translator[T], error) {
	a, ok := cfg.Arch.(*TranslatorConfig)
	if !ok || cfg.Architecture != ArchTranslator {
		return nil, fmt.Errorf("model: config is for %q, not %q", cfg.Architecture, ArchTranslator)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Translator[T]{Cfg: cfg, Arch: a}
	v, e, h, d := a.Vocab, a.Embedding, a.EncoderHidden, a.DecoderHidden
	m.SrcEmb = nn.NewEmbedding[T]("encoder.embedding", v, e, nil)
	in := e
	for l := 0; l < a.EncoderLayers; l++ {
		m.Fwd = append(m.Fwd, nn.NewLSTMLayerCell[T]("encoder.rnn", l, false, in, h, nil))
		m.Bwd = append(m.Bwd, nn.NewLSTMLayerCell[T]("encoder.rnn", l, true, in, h, nil))
		in = 2 * h
	}
	m.Bridge = nn.NewLinear[T]("decoder.bridge", 2*h, d, nil)
	m.TgtEmb = nn.NewEmbedding[T]("decoder.embedding", v, e, nil)
	m.Key = nn.NewLinear[T]("decoder.attention.key", 2*h, a.Attention, nil)
	m.Query = nn.NewLinearNoBias[T]("decoder.attention.query", d, a.Attention, nil)
	m.V = nn.NewLinearNoBias[T]("decoder.attention.v", a.Attention, 1, nil)
	m.Cell = nn.NewLSTMCell[T]("decoder.cell", e+2*h, d, nil)
	m.Combine = nn.NewLinear[T]("decoder.combine", d+2*h, a.Combine, nil)
	m.Out = nn.NewLinear[T]("decoder.out", a.Combine, v, nil)
	if rng != nil {
		for _, p := range m.Params() {
			for i := range p.W.Data {
				p.W.Data[i] = T(0.2*rng.Float64() - 0.1)
			}
		}
	}
	return m, nil
}

// Params lists every parameter in file order.
func (m *Translator[T]) Params() []*ad.Param[T] {
	ps := m.SrcEmb.Params()
	for l := range m.Fwd {
		ps = append(ps, m.Fwd[l].Params()...)
		ps = append(ps, m.Bwd[l].Params()...)
	}
	for _, p := range [][]*ad.Param[T]{m.Bridge.Params(), m.TgtEmb.Params(), m.Key.Params(), m.Query.Params(),
		m.V.Params(), m.Cell.Params(), m.Combine.Params(), m.Out.Params()} {
		ps = append(ps, p...)
	}
	return ps
}

// Config is the model's configuration.
func (m *Translator[T]) Config() *Config { return m.Cfg }

// SourceEmbedding is the source embedding table (SourceEmbedder).
func (m *Translator[T]) SourceEmbedding() *ad.Param[T] { return m.SrcEmb.W }

// Input describes the token sequences the translator reads.
func (m *Translator[T]) Input() InputSpec { return m.Arch.Spec(m.Cfg) }

// Vocab is the number of output tokens.
func (m *Translator[T]) Vocab() int { return m.Arch.Vocab }

// EOS is the end-of-sequence token id.
func (m *Translator[T]) EOS() int { return m.Cfg.EOS }

// MaxSteps is the default decoding step cap.
func (m *Translator[T]) MaxSteps() int { return m.Cfg.MaxSteps }

// translatorState is the decoder's state between steps: the LSTM's (h,
// c), and per sequence the encoder's memory and keys (time-major rows
// t·B + b, see ad.Attend) with the mask of real source positions
// (keep[b·S + t]); dropout settings for training.
type translatorState[T ad.Float] struct {
	h, c      *ad.Node[T]
	mem, keys *ad.Node[T]
	keep      []bool
	b, s      int
	drop      float64
	rng       *rand.Rand
}

// Rows gathers the given rows of every part of the state.
func (st *translatorState[T]) Rows(tp *ad.Tape[T], idx []int) State[T] {
	out := &translatorState[T]{b: len(idx), s: st.s, drop: st.drop, rng: st.rng}
	out.h, out.c = tp.Gather(st.h, idx), tp.Gather(st.c, idx)
	pos := make([]int, 0, st.s*len(idx))
	for t := 0; t < st.s; t++ {
		for _, r := range idx {
			pos = append(pos, t*st.b+r)
		}
	}
	out.mem, out.keys = tp.Gather(st.mem, pos), tp.Gather(st.keys, pos)
	out.keep = make([]bool, 0, st.s*len(idx))
	for _, r := range idx {
		out.keep = append(out.keep, st.keep[r*st.s:(r+1)*st.s]...)
	}
	return out
}

// Start encodes the source sequences in.Tokens (or, for relaxed attacks,
// their soft one-hots in.Soft or embeddings in.Embedded, with in.Tokens
// giving each row's length).
func (m *Translator[T]) Start(tp *ad.Tape[T], in Input[T]) (State[T], error) {
	a := m.Arch
	x, src, err := embedSource(tp, in, ArchTranslator, m.SrcEmb, a.MaxSourceLen, a.PadID)
	if err != nil {
		return nil, err
	}
	b, s, valid, keep := src.b, src.s, src.valid, src.keep
	x = tp.Dropout(x, in.Dropout, in.Rng)
	var lastF, lastB *ad.Node[T]
	for l := range m.Fwd {
		var outF, outB []*ad.Node[T]
		outF, lastF = m.encodeLayer(tp, m.Fwd[l], x, valid, b, s, false)
		outB, lastB = m.encodeLayer(tp, m.Bwd[l], x, valid, b, s, true)
		x = tp.Concat(1, tp.Concat(0, outF...), tp.Concat(0, outB...))
		if l+1 < len(m.Fwd) {
			x = tp.Dropout(x, in.Dropout, in.Rng)
		}
	}
	st := &translatorState[T]{mem: x, b: b, s: s, keep: keep, drop: in.Dropout, rng: in.Rng}
	st.keys = m.Key.Forward(tp, x)
	st.h = tp.Tanh(m.Bridge.Forward(tp, tp.Concat(1, lastF, lastB)))
	st.c = tp.Const(tp.Zeros(b, a.DecoderHidden))
	return st, nil
}

// sourceBatch is the layout of a batch of source sequences, time-major
// (position p = t·B + r for token t of row r): b rows of up to s tokens;
// valid[p] and keep[r·s + t] flag the real (not padding) positions.
type sourceBatch struct {
	b, s        int
	valid, keep []bool
}

// embedSource checks the source sequences of in (arch names the
// architecture in errors) and embeds them time-major, [s·b, Dim]: the
// tokens through emb, or in.Embedded's rows, or in.Soft times emb's table
// (for relaxed attacks, with in.Tokens giving each row's length). A
// padding position reads padID's row or the row's first one; its result
// is never used, so neither is its gradient.
func embedSource[T ad.Float](tp *ad.Tape[T], in Input[T], arch string, emb *nn.Embedding[T], maxLen, padID int) (*ad.Node[T], sourceBatch, error) {
	vocab, dim := emb.Vocab, emb.Dim
	if in.X != nil {
		return nil, sourceBatch{}, fmt.Errorf("%s reads token sequences, not continuous inputs", arch)
	}
	if len(in.Tokens) == 0 {
		return nil, sourceBatch{}, fmt.Errorf("%s: no source sequences", arch)
	}
	if in.Dropout > 0 && in.Rng == nil {
		return nil, sourceBatch{}, errors.New("dropout needs a random source")
	}
	b, s, total := len(in.Tokens), 0, 0
	offset := make([]int, b) // first row of sequence r in Soft or Embedded
	for r, seq := range in.Tokens {
		if len(seq) == 0 || len(seq) > maxLen {
			return nil, sourceBatch{}, fmt.Errorf("%s: source sequence %d has %d tokens, want 1..%d", arch, r, len(seq), maxLen)
		}
		for _, id := range seq {
			if id < 0 || id >= vocab {
				return nil, sourceBatch{}, fmt.Errorf("%s: source sequence %d holds token %d outside the vocabulary of %d", arch, r, id, vocab)
			}
		}
		offset[r] = total
		total += len(seq)
		s = max(s, len(seq))
	}
	src := sourceBatch{b: b, s: s, valid: make([]bool, s*b), keep: make([]bool, b*s)}
	ids, rows := make([]int, s*b), make([]int, s*b)
	for t := 0; t < s; t++ {
		for r, seq := range in.Tokens {
			p := t*b + r
			if t < len(seq) {
				src.valid[p], src.keep[r*s+t] = true, true
				ids[p], rows[p] = seq[t], offset[r]+t
			} else {
				ids[p], rows[p] = padID, offset[r]
			}
		}
	}
	switch {
	case in.Embedded != nil:
		if sh := in.Embedded.Value.Shape; len(sh) != 2 || sh[0] != total || sh[1] != dim {
			return nil, sourceBatch{}, fmt.Errorf("%s: embedded input of shape %v, want [%d, %d]", arch, sh, total, dim)
		}
		return tp.Gather(in.Embedded, rows), src, nil
	case in.Soft != nil:
		if sh := in.Soft.Value.Shape; len(sh) != 2 || sh[0] != total || sh[1] != vocab {
			return nil, sourceBatch{}, fmt.Errorf("%s: soft input of shape %v, want [%d, %d]", arch, sh, total, vocab)
		}
		return tp.Gather(tp.MatMul(in.Soft, tp.Param(emb.W)), rows), src, nil
	}
	return emb.Forward(tp, ids), src, nil
}

// encodeLayer runs one direction of one encoder layer over the time-major
// input x [S·B, In]: every step's input projection in one GEMM, then the
// recurrence. A row past its sequence's end keeps its state (Where), so
// the forward direction ends on each row's last token and the backward
// direction starts on it. It returns the outputs per step, in time order,
// and the state after the last step taken.
//
// On a tape that records nothing (decoding), each step runs on a scratch
// tape and only its state is copied back: a step's gates and products are
// four times its state, and kept for every step of a 256-row chunk they
// were most of a decode's memory (docs/BENCHMARKS.md). The values are the
// same either way.
func (m *Translator[T]) encodeLayer(tp *ad.Tape[T], cell *nn.LSTMCell[T], x *ad.Node[T], valid []bool, b, s int, reverse bool) ([]*ad.Node[T], *ad.Node[T]) {
	xw := tp.Linear(x, tp.Param(cell.Wih), tp.Param(cell.Bih))
	h := tp.Const(tp.Zeros(b, cell.Hidden))
	c := tp.Const(tp.Zeros(b, cell.Hidden))
	out := make([]*ad.Node[T], s)
	for k := 0; k < s; k++ {
		t := k
		if reverse {
			t = s - 1 - k
		}
		st := tp
		if !tp.Recording() {
			st = tp.Scratch()
		}
		hn, cn := cell.Step(st, st.Slice(xw, 0, t*b, (t+1)*b), h, c)
		if v := valid[t*b : (t+1)*b]; !allTrue(v) {
			hn, cn = st.Where(v, hn, h), st.Where(v, cn, c)
		}
		if st != tp {
			hn, cn = keep(tp, hn), keep(tp, cn)
		}
		h, c = hn, cn
		out[t] = h
	}
	return out, h
}

// keep copies a scratch tape's value onto tp, which records nothing.
func keep[T ad.Float](tp *ad.Tape[T], n *ad.Node[T]) *ad.Node[T] {
	v := tp.Zeros(n.Value.Shape...)
	copy(v.Data, n.Value.Data)
	return tp.Const(v)
}

func allTrue(v []bool) bool {
	for _, x := range v {
		if !x {
			return false
		}
	}
	return true
}

// Step runs one decoder step; prev nil means the first step (<s>).
func (m *Translator[T]) Step(tp *ad.Tape[T], s State[T], prev []int) (*ad.Node[T], State[T]) {
	st := s.(*translatorState[T])
	if prev == nil {
		prev = make([]int, st.b)
		for i := range prev {
			prev[i] = m.Arch.BOSID
		}
	}
	e := tp.Dropout(m.TgtEmb.Forward(tp, prev), st.drop, st.rng)
	scores := tp.AdditiveScores(st.keys, m.Query.Forward(tp, st.h), tp.Param(m.V.W))
	ctx := tp.Attend(tp.MaskedSoftmax(scores, st.keep), st.mem)
	next := *st
	next.h, next.c = m.Cell.Forward(tp, tp.Concat(1, e, ctx), st.h, st.c)
	o := tp.Tanh(m.Combine.Forward(tp, tp.Concat(1, next.h, ctx)))
	return m.Out.Forward(tp, tp.Dropout(o, st.drop, st.rng)), &next
}
