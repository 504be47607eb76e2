package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/nn"
)

// ArchTransformerTranslator names the transformer encoder-decoder
// translator in config.json.
const ArchTransformerTranslator = "transformer-translator"

// TransformerTranslatorConfig is the transformer translator's section of
// config.json. Its keys are torch.nn.Transformer's arguments (d_model,
// nhead, num_encoder_layers, num_decoder_layers, dim_feedforward,
// dropout, activation, norm_first, layer_norm_eps), so that a PyTorch
// model's constructor call and its config.json say the same thing; the
// tokenizer's keys are the LSTM translator's. A layout these keys cannot
// describe (no biases, batch_first weights, learned positions) is an
// unknown key, refused by name.
type TransformerTranslatorConfig struct {
	// Vocab is the tokenizer's vocabulary size, shared by source and
	// target; PadID, BOSID and UnkID its special ids (the header's eos_id
	// is its end).
	Vocab int `json:"vocab_size"`
	PadID int `json:"pad_id"`
	BOSID int `json:"bos_id"`
	UnkID int `json:"unk_id"`
	// DModel is the width of the embeddings and of every layer, NHead the
	// number of attention heads (a divisor of DModel), FF the
	// feed-forward block's width.
	DModel        int `json:"d_model"`
	NHead         int `json:"nhead"`
	EncoderLayers int `json:"num_encoder_layers"`
	DecoderLayers int `json:"num_decoder_layers"`
	FF            int `json:"dim_feedforward"`
	// Dropout is the probability the model was built with (nn.Transformer's
	// dropout); it changes only training, where the trainer's setting
	// applies.
	Dropout float64 `json:"dropout"`
	// Activation is the feed-forward block's: "relu" or "gelu".
	Activation string `json:"activation"`
	// NormFirst selects pre-norm layers; false is PyTorch's post-norm.
	NormFirst bool `json:"norm_first"`
	// LayerNormEps is every layer normalisation's eps.
	LayerNormEps float64 `json:"layer_norm_eps"`
	// MaxSourceLen bounds the source sequences Start accepts, in tokens
	// (the sinusoidal positions themselves have no limit).
	MaxSourceLen int `json:"max_source_len"`
}

// VocabSize is the shared vocabulary's size (TokenizedArch).
func (a *TransformerTranslatorConfig) VocabSize() int { return a.Vocab }

// SpecialIDs are the ids the tokenizer must give padding, the start of a
// sequence and unknown tokens.
func (a *TransformerTranslatorConfig) SpecialIDs() (pad, bos, unk int) {
	return a.PadID, a.BOSID, a.UnkID
}

// layers is the section as the nn package's layer configuration.
func (a *TransformerTranslatorConfig) layers() nn.TransformerConfig {
	return nn.TransformerConfig{Dim: a.DModel, Heads: a.NHead, FF: a.FF, NormFirst: a.NormFirst,
		Activation: a.Activation, Eps: a.LayerNormEps}
}

// DefaultTransformerTranslatorConfig is the transformer translator lenspec
// train nmt --arch transformer trains for Multi30k, for a vocabulary of
// vocab tokens with the tokenizer's special ids: d_model 256, 4 heads, 3
// encoder and 3 decoder layers, feed-forward 1024, pre-norm (which trains
// without a learning-rate warm-up), ReLU.
func DefaultTransformerTranslatorConfig(vocab, pad, bos, eos, unk int) Config {
	return Config{
		Architecture: ArchTransformerTranslator,
		EOS:          eos,
		MaxSteps:     200,
		DType:        "float32",
		Arch: &TransformerTranslatorConfig{
			Vocab: vocab, PadID: pad, BOSID: bos, UnkID: unk,
			DModel: 256, NHead: 4, EncoderLayers: 3, DecoderLayers: 3, FF: 1024,
			Dropout: 0.1, Activation: "relu", NormFirst: true, LayerNormEps: 1e-5, MaxSourceLen: 200,
		},
	}
}

// Validate checks the section describes a transformer translator lenspec
// can build, one error per bad key, each naming it.
func (a *TransformerTranslatorConfig) Validate(c *Config) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, d := range []struct {
		name string
		v    int
	}{{"vocab_size", a.Vocab}, {"d_model", a.DModel}, {"dim_feedforward", a.FF}, {"max_source_len", a.MaxSourceLen}} {
		if d.v <= 0 || d.v > maxDim {
			bad("%s %d must be in 1..%d", d.name, d.v, maxDim)
		}
	}
	if a.NHead < 1 || (a.DModel > 0 && a.DModel%a.NHead != 0) {
		bad("nhead %d must be a positive divisor of d_model %d", a.NHead, a.DModel)
	}
	for _, d := range []struct {
		name string
		v    int
	}{{"num_encoder_layers", a.EncoderLayers}, {"num_decoder_layers", a.DecoderLayers}} {
		if d.v < 1 || d.v > 64 {
			bad("%s %d must be in 1..64", d.name, d.v)
		}
	}
	if !(a.Dropout >= 0 && a.Dropout < 1) {
		bad("dropout %v must be in [0, 1)", a.Dropout)
	}
	if a.Activation != "relu" && a.Activation != "gelu" {
		bad("activation %q is not supported (want \"relu\" or \"gelu\")", a.Activation)
	}
	if !(a.LayerNormEps > 0) || math.IsInf(a.LayerNormEps, 0) {
		bad("layer_norm_eps %v must be a positive number", a.LayerNormEps)
	}
	checkSpecialIDs(bad, a.Vocab, a.PadID, a.BOSID, a.UnkID, c.EOS)
	return errors.Join(errs...)
}

// ParamCount counts the transformer translator's parameters.
func (a *TransformerTranslatorConfig) ParamCount(*Config) float64 {
	v, d, f := float64(a.Vocab), float64(a.DModel), float64(a.FF)
	attn := 4*d*d + 4*d
	ff := 2*d*f + f + d
	enc := attn + ff + 2*2*d
	dec := 2*attn + ff + 3*2*d
	return 2*v*d + float64(a.EncoderLayers)*enc + float64(a.DecoderLayers)*dec + 2*2*d + v*(d+1)
}

// Spec is the transformer translator's input description.
func (a *TransformerTranslatorConfig) Spec(c *Config) InputSpec {
	return InputSpec{Kind: Tokens, Vocab: a.Vocab, Special: []int{a.PadID, a.BOSID, c.EOS, a.UnkID}, MaxLen: a.MaxSourceLen}
}

func init() {
	Register(Architecture{
		Name: ArchTransformerTranslator,
		ParseConfig: func(b []byte) (ArchConfig, error) {
			var a TransformerTranslatorConfig
			if err := DecodeSection(b, &a); err != nil {
				return nil, err
			}
			return &a, nil
		},
		New32: func(c *Config, rng *rand.Rand) (Decoder[float32], error) {
			return NewTransformerTranslator[float32](c, rng)
		},
		New64: func(c *Config, rng *rand.Rand) (Decoder[float64], error) {
			return NewTransformerTranslator[float64](c, rng)
		},
	})
}

// TransformerTranslator is the encoder-decoder of "Attention is all you
// need" (Vaswani et al. 2017) around torch.nn.Transformer:
//
//	encoder: x_t = √d·E_src[w_t] + PE(t); memory = Transformer.encoder(x),
//	         source padding masked out of every attention over it
//	step i:  y_i = √d·E_tgt[y_{i−1}] + PE(i); h_i = Transformer.decoder(y_≤i, memory),
//	         causal; logits_i = W_o h_i + b_o
//
// with y₀ = <s> and greedy y_i = argmax logits_i until </s>. PE is the
// fixed sinusoidal code (nn.Sinusoidal), dropout applies to the
// embeddings and inside the layers as in PyTorch. A step reads the
// decoder's key/value cache (nn.DecoderCache), so step i costs O(i).
//
// Tensor names are those of a PyTorch module holding src_embedding,
// tgt_embedding (nn.Embedding), transformer (nn.Transformer) and out
// (nn.Linear): src_embedding.weight, tgt_embedding.weight,
// transformer.encoder.layers.N.…, transformer.encoder.norm.…,
// transformer.decoder.layers.N.…, transformer.decoder.norm.…, out.weight,
// out.bias (docs/models.md).
type TransformerTranslator[T ad.Float] struct {
	Cfg  *Config
	Arch *TransformerTranslatorConfig
	// SrcEmb and TgtEmb are the embedding tables, [Vocab, DModel].
	SrcEmb, TgtEmb *nn.Embedding[T]
	// Encoder and Decoder are nn.Transformer's stacks, each with its
	// final layer normalisation.
	Encoder *nn.TransformerEncoder[T]
	Decoder *nn.TransformerDecoder[T]
	// Out projects the decoder's output to the vocabulary's logits.
	Out *nn.Linear[T]
	pos nn.Sinusoidal[T]
}

// NewTransformerTranslator builds a transformer translator for cfg. The
// layers are initialised as PyTorch's, the embeddings N(0, 1/d_model) (so
// that the √d_model-scaled embeddings have unit variance) from rng; nil
// leaves them for weights loaded next.
func NewTransformerTranslator[T ad.Float](cfg *Config, rng *rand.Rand) (*TransformerTranslator[T], error) {
	a, ok := cfg.Arch.(*TransformerTranslatorConfig)
	if !ok || cfg.Architecture != ArchTransformerTranslator {
		return nil, fmt.Errorf("model: config is for %q, not %q", cfg.Architecture, ArchTransformerTranslator)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lc := a.layers()
	m := &TransformerTranslator[T]{Cfg: cfg, Arch: a, pos: nn.Sinusoidal[T]{Dim: a.DModel},
		SrcEmb:  nn.NewEmbedding[T]("src_embedding", a.Vocab, a.DModel, rng),
		TgtEmb:  nn.NewEmbedding[T]("tgt_embedding", a.Vocab, a.DModel, rng),
		Encoder: nn.NewTransformerEncoder[T]("transformer.encoder", lc, a.EncoderLayers, true, rng),
		Decoder: nn.NewTransformerDecoder[T]("transformer.decoder", lc, a.DecoderLayers, true, rng),
		Out:     nn.NewLinear[T]("out", a.DModel, a.Vocab, rng)}
	s := T(1 / math.Sqrt(float64(a.DModel)))
	for _, e := range []*nn.Embedding[T]{m.SrcEmb, m.TgtEmb} {
		for i := range e.W.W.Data {
			e.W.W.Data[i] *= s
		}
	}
	return m, nil
}

// Params lists every parameter: the embeddings, the encoder, the decoder
// (PyTorch's state_dict order within each) and the output layer.
func (m *TransformerTranslator[T]) Params() []*ad.Param[T] {
	ps := append(m.SrcEmb.Params(), m.TgtEmb.Params()...)
	ps = append(ps, m.Encoder.Params()...)
	ps = append(ps, m.Decoder.Params()...)
	return append(ps, m.Out.Params()...)
}

// Config is the model's configuration.
func (m *TransformerTranslator[T]) Config() *Config { return m.Cfg }

// SourceEmbedding is the source embedding table (SourceEmbedder), before
// the √d_model scaling.
func (m *TransformerTranslator[T]) SourceEmbedding() *ad.Param[T] { return m.SrcEmb.W }

// Input describes the token sequences the translator reads.
func (m *TransformerTranslator[T]) Input() InputSpec { return m.Arch.Spec(m.Cfg) }

// Vocab is the number of output tokens.
func (m *TransformerTranslator[T]) Vocab() int { return m.Arch.Vocab }

// EOS is the end-of-sequence token id.
func (m *TransformerTranslator[T]) EOS() int { return m.Cfg.EOS }

// MaxSteps is the default decoding step cap.
func (m *TransformerTranslator[T]) MaxSteps() int { return m.Cfg.MaxSteps }

// transformerState is the decoder's state between steps: the layers'
// key/value caches, the number of steps taken (the next position), the
// batch size, and dropout settings for training.
type transformerState[T ad.Float] struct {
	cache *nn.DecoderCache[T]
	t, b  int
	drop  nn.Dropout
}

// Rows gathers the given rows of every layer's cache.
func (st *transformerState[T]) Rows(tp *ad.Tape[T], idx []int) State[T] {
	return &transformerState[T]{cache: st.cache.Rows(tp, idx), t: st.t, b: len(idx), drop: st.drop}
}

// embed scales embeddings x [T·B, Dim] (time-major) by √d_model, adds the
// positions from start on and applies dropout: [T, B, Dim].
func (m *TransformerTranslator[T]) embed(tp *ad.Tape[T], x *ad.Node[T], t, b, start int, drop nn.Dropout) *ad.Node[T] {
	x = tp.Scale(tp.Reshape(x, t, b, m.Arch.DModel), T(math.Sqrt(float64(m.Arch.DModel))))
	x = m.pos.Add(tp, x, start)
	if drop.P > 0 {
		x = tp.Dropout(x, drop.P, drop.Rng)
	}
	return x
}

// Start encodes the source sequences in.Tokens (or, for relaxed attacks,
// their soft one-hots in.Soft or embeddings in.Embedded, with in.Tokens
// giving each row's length) and projects the memory's keys and values for
// every decoder layer.
func (m *TransformerTranslator[T]) Start(tp *ad.Tape[T], in Input[T]) (State[T], error) {
	a := m.Arch
	x, src, err := embedSource(tp, in, ArchTransformerTranslator, m.SrcEmb, a.MaxSourceLen, a.PadID)
	if err != nil {
		return nil, err
	}
	drop := nn.Dropout{P: in.Dropout, Rng: in.Rng}
	pad := make([]bool, len(src.keep))
	anyPad := false
	for i, k := range src.keep {
		pad[i] = !k
		anyPad = anyPad || !k
	}
	if !anyPad {
		pad = nil
	}
	mem := m.Encoder.Forward(tp, m.embed(tp, x, src.s, src.b, 0, drop), pad, drop)
	return &transformerState[T]{cache: m.Decoder.Start(tp, mem, pad, m.Cfg.MaxSteps+1), b: src.b, drop: drop}, nil
}

// Step runs one decoder step; prev nil means the first step (<s>).
func (m *TransformerTranslator[T]) Step(tp *ad.Tape[T], s State[T], prev []int) (*ad.Node[T], State[T]) {
	st := s.(*transformerState[T])
	if prev == nil {
		prev = make([]int, st.b)
		for i := range prev {
			prev[i] = m.Arch.BOSID
		}
	}
	x := m.embed(tp, m.TgtEmb.Forward(tp, prev), 1, st.b, st.t, st.drop)
	h, cache := m.Decoder.Step(tp, x, st.cache, st.drop)
	logits := m.Out.Forward(tp, tp.Reshape(h, st.b, m.Arch.DModel))
	return logits, &transformerState[T]{cache: cache, t: st.t + 1, b: st.b, drop: st.drop}
}

// TeacherLogits runs the decoder over all len(prev) steps of a
// teacher-forced target at once (TeacherForcer): one causal pass of the
// layers through the key/value cache, the same logits as the steps.
func (m *TransformerTranslator[T]) TeacherLogits(tp *ad.Tape[T], s State[T], prev [][]int) []*ad.Node[T] {
	st := s.(*transformerState[T])
	n, b := len(prev), st.b
	ids := make([]int, 0, n*b)
	for _, p := range prev {
		if p == nil {
			for range b {
				ids = append(ids, m.Arch.BOSID)
			}
			continue
		}
		ids = append(ids, p...)
	}
	x := m.embed(tp, m.TgtEmb.Forward(tp, ids), n, b, st.t, st.drop)
	h, _ := m.Decoder.Step(tp, x, st.cache, st.drop)
	logits := m.Out.Forward(tp, tp.Reshape(h, n*b, m.Arch.DModel))
	out := make([]*ad.Node[T], n)
	for t := range out {
		out[t] = tp.Slice(logits, 0, t*b, (t+1)*b)
	}
	return out
}
