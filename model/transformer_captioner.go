package model

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/nn"
)

// ArchTransformerCaptioner names the CNN-transformer image captioner in
// config.json.
const ArchTransformerCaptioner = "cnn-transformer-captioner"

// Memory position codes of TransformerCaptionerConfig.MemoryPositions.
const (
	// PositionsLearned is a trained code per feature-map position.
	PositionsLearned = "learned"
	// PositionsSinusoidal is the fixed code of "Attention is all you need"
	// over the feature map's positions in row-major order.
	PositionsSinusoidal = "sinusoidal"
)

// maxDecoderLayers bounds num_decoder_layers: deeper stacks are no
// captioner lenspec is meant for, and a hostile config could ask for
// millions.
const maxDecoderLayers = 64

// TransformerCaptionerConfig is the transformer captioner's section of
// config.json. The decoder's keys are torch.nn.Transformer's arguments.
type TransformerCaptionerConfig struct {
	Input InputConfig  `json:"input"`
	Conv  []ConvConfig `json:"conv"`
	// DModel, NHead, NumDecoderLayers, DimFeedforward, Dropout,
	// Activation, NormFirst and LayerNormEps are nn.Transformer's d_model,
	// nhead, num_decoder_layers, dim_feedforward, dropout (the training's;
	// decoding drops nothing), activation, norm_first and layer_norm_eps
	// (0: 1e-5).
	DModel           int     `json:"d_model"`
	NHead            int     `json:"nhead"`
	NumDecoderLayers int     `json:"num_decoder_layers"`
	DimFeedforward   int     `json:"dim_feedforward"`
	Dropout          float64 `json:"dropout"`
	Activation       string  `json:"activation"`
	NormFirst        bool    `json:"norm_first"`
	LayerNormEps     float64 `json:"layer_norm_eps,omitempty"`
	// MemoryPositions is the position code added to the projected feature
	// map: "learned" (tensor memory_pos.weight) or "sinusoidal".
	MemoryPositions string `json:"memory_positions"`
}

// DefaultTransformerCaptionerConfig is the Multi-MNIST transformer
// captioner shipped in models/mmnist-transformer: the CNN-RNN captioner's
// convolutions (their 16×7×28 feature map is the memory, 196 positions),
// one post-norm decoder layer of width 64 with 4 heads.
func DefaultTransformerCaptionerConfig() Config {
	c := DefaultCaptionerConfig()
	rnn := c.Arch.(*CaptionerConfig)
	c.Architecture = ArchTransformerCaptioner
	c.Arch = &TransformerCaptionerConfig{Input: rnn.Input, Conv: rnn.Conv,
		DModel: 64, NHead: 4, NumDecoderLayers: 1, DimFeedforward: 256, Dropout: 0.1, Activation: "relu",
		MemoryPositions: PositionsLearned}
	return c
}

// layer is the decoder layers' configuration.
func (a *TransformerCaptionerConfig) layer() nn.TransformerConfig {
	return nn.TransformerConfig{Dim: a.DModel, Heads: a.NHead, FF: a.DimFeedforward, NormFirst: a.NormFirst,
		Activation: a.Activation, Eps: a.LayerNormEps}
}

// Validate checks the section describes a transformer captioner lenspec
// can build, one line for each thing wrong.
func (a *TransformerCaptionerConfig) Validate(c *Config) error {
	// The image and its convolutions are checked as the CNN-RNN
	// captioner's; its decoder sizes are set to valid ones.
	errs := []error{(&CaptionerConfig{Input: a.Input, Conv: a.Conv, FCHidden: 1, Embedding: 1, Hidden: 1, Cell: CellReLU}).Validate(c)}
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if a.DModel > maxDim || a.DimFeedforward > maxDim {
		bad("d_model %d and dim_feedforward %d must be at most %d", a.DModel, a.DimFeedforward, maxDim)
	} else if err := a.layer().Validate(); err != nil {
		bad("%v", err)
	}
	if a.NumDecoderLayers < 1 || a.NumDecoderLayers > maxDecoderLayers {
		bad("num_decoder_layers %d must be in 1..%d", a.NumDecoderLayers, maxDecoderLayers)
	}
	if !(a.Dropout >= 0 && a.Dropout < 1) {
		bad("dropout %v must be in [0, 1)", a.Dropout)
	}
	if a.MemoryPositions != PositionsLearned && a.MemoryPositions != PositionsSinusoidal {
		bad("memory_positions %q is neither %q nor %q", a.MemoryPositions, PositionsLearned, PositionsSinusoidal)
	}
	return errors.Join(errs...)
}

// ParamCount counts the transformer captioner's parameters.
func (a *TransformerCaptionerConfig) ParamCount(c *Config) float64 {
	n, in := 0.0, float64(a.Input.Channels)
	for _, cv := range a.Conv {
		n += float64(cv.OutChannels) * (in*float64(cv.Kernel)*float64(cv.Kernel) + 1)
		in = float64(cv.OutChannels)
	}
	ch, h, w := a.FeatureShape()
	d, ff, v := float64(a.DModel), float64(a.DimFeedforward), float64(len(c.Vocab))
	n += (float64(ch) + 1) * d // memory_proj
	if a.MemoryPositions == PositionsLearned {
		n += float64(h) * float64(w) * d
	}
	// Per layer: two attentions (in_proj 3d×d + 3d, out_proj d×d + d),
	// the feed-forward block and three norms; then the final norm.
	layer := 2*(4*d*d+4*d) + 2*d*ff + ff + d + 6*d
	n += float64(a.NumDecoderLayers)*layer + 2*d
	return n + (v+1)*d + v*(d+1)
}

// FeatureShape returns the encoder's convolution output [C, H, W]: the
// memory is its H·W positions of C channels.
func (a *TransformerCaptionerConfig) FeatureShape() (ch, h, w int) {
	return featureShape(a.Input, a.Conv)
}

// Spec is the captioner's input description.
func (a *TransformerCaptionerConfig) Spec() InputSpec {
	return (&CaptionerConfig{Input: a.Input}).Spec()
}

func init() {
	Register(Architecture{
		Name: ArchTransformerCaptioner,
		ParseConfig: func(b []byte) (ArchConfig, error) {
			var a TransformerCaptionerConfig
			if err := DecodeSection(b, &a); err != nil {
				return nil, err
			}
			return &a, nil
		},
		New32: func(c *Config, rng *rand.Rand) (Decoder[float32], error) {
			return NewTransformerCaptioner[float32](c, rng)
		},
		New64: func(c *Config, rng *rand.Rand) (Decoder[float64], error) {
			return NewTransformerCaptioner[float64](c, rng)
		},
	})
}

// TransformerCaptioner is a CNN encoder under a transformer decoder:
//
//	F      = ReLU(Conv₂(ReLU(Conv₁(x))))                  [C, H′, W′]
//	m_s    = W_proj·F[:, s] + b_proj + P_s                s = y·W′ + x′, the memory
//	e_t    = E[y_{t−1}] + PE(t)                            y_{−1} = the start row E[V]
//	o_t    = W_out · Decoder(e_0 … e_t; m) + b_out         y_t = argmax o_t
//
// with Decoder PyTorch's nn.TransformerDecoder (causal self-attention over
// the tokens so far, cross-attention over the memory, and its final
// norm), P a learned or sinusoidal code of the memory positions and PE the
// sinusoidal code of the token positions (no length limit, so attacks may
// decode past any cap). Tensors: encoder.conv*, memory_proj, memory_pos
// (learned codes only), embedding ([V+1, d_model], the last row the start
// token), decoder.layers.i.*, decoder.norm and out.
type TransformerCaptioner[T ad.Float] struct {
	Cfg  *Config
	Arch *TransformerCaptionerConfig
	encoder[T]
	Proj    *nn.Linear[T]
	MemPos  *nn.LearnedPositions[T] // nil for sinusoidal codes
	Emb     *nn.Embedding[T]
	Decoder *nn.TransformerDecoder[T]
	Out     *nn.Linear[T]
}

// NewTransformerCaptioner builds a transformer captioner for cfg with
// weights drawn from rng (nil: zero).
func NewTransformerCaptioner[T ad.Float](cfg *Config, rng *rand.Rand) (*TransformerCaptioner[T], error) {
	a, ok := cfg.Arch.(*TransformerCaptionerConfig)
	if !ok || cfg.Architecture != ArchTransformerCaptioner {
		return nil, fmt.Errorf("model: config is for %q, not %q", cfg.Architecture, ArchTransformerCaptioner)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ch, h, w := a.FeatureShape()
	m := &TransformerCaptioner[T]{Cfg: cfg, Arch: a, encoder: newConvEncoder[T](a.Input, a.Conv, rng)}
	m.Proj = nn.NewLinear[T]("memory_proj", ch, a.DModel, rng)
	if a.MemoryPositions == PositionsLearned {
		m.MemPos = nn.NewLearnedPositions[T]("memory_pos", h*w, a.DModel, rng)
		// ViT's scale: N(0, 1) codes would drown the projected features.
		for i := range m.MemPos.Emb.W.W.Data {
			m.MemPos.Emb.W.W.Data[i] *= 0.02
		}
	}
	m.Emb = nn.NewEmbedding[T]("embedding", len(cfg.Vocab)+1, a.DModel, rng)
	m.Decoder = nn.NewTransformerDecoder[T]("decoder", a.layer(), a.NumDecoderLayers, true, rng)
	m.Out = nn.NewLinear[T]("out", a.DModel, len(cfg.Vocab), rng)
	return m, nil
}

// Params lists every parameter in file order.
func (m *TransformerCaptioner[T]) Params() []*ad.Param[T] {
	ps := append(m.convParams(), m.Proj.Params()...)
	if m.MemPos != nil {
		ps = append(ps, m.MemPos.Params()...)
	}
	ps = append(ps, m.Emb.Params()...)
	ps = append(ps, m.Decoder.Params()...)
	return append(ps, m.Out.Params()...)
}

// Config is the model's configuration.
func (m *TransformerCaptioner[T]) Config() *Config { return m.Cfg }

// Input describes the image the captioner reads.
func (m *TransformerCaptioner[T]) Input() InputSpec { return m.Arch.Spec() }

// EOS is the end-of-sequence token id.
func (m *TransformerCaptioner[T]) EOS() int { return m.Cfg.EOS }

// MaxSteps is the default decoding step cap.
func (m *TransformerCaptioner[T]) MaxSteps() int { return m.Cfg.MaxSteps }

// Vocab is the number of output tokens.
func (m *TransformerCaptioner[T]) Vocab() int { return len(m.Cfg.Vocab) }

// transformerCaptionerState is the decoder's key–value cache, the number
// of steps taken, the batch size and the dropout of a training pass.
type transformerCaptionerState[T ad.Float] struct {
	cache *nn.DecoderCache[T]
	steps int
	rows  int
	drop  nn.Dropout
}

// Rows returns the state of the batch rows idx.
func (s *transformerCaptionerState[T]) Rows(tp *ad.Tape[T], idx []int) State[T] {
	return &transformerCaptionerState[T]{cache: s.cache.Rows(tp, idx), steps: s.steps, rows: len(idx), drop: s.drop}
}

// Start encodes images in.X [B, C·H·W] to the memory and projects it to
// every layer's keys and values.
func (m *TransformerCaptioner[T]) Start(tp *ad.Tape[T], in Input[T]) (State[T], error) {
	b, err := m.imageBatch(ArchTransformerCaptioner, in)
	if err != nil {
		return nil, err
	}
	mem := m.memory(tp, in.X, b)
	drop := nn.Dropout{P: in.Dropout, Rng: in.Rng}
	return &transformerCaptionerState[T]{cache: m.Decoder.Start(tp, mem, nil, m.MaxSteps()+1), rows: b, drop: drop}, nil
}

// memory is the feature map of images x as the decoder's memory [S, B,
// d_model]: the convolutions' [B, C, S] output taken position-major,
// projected to d_model, plus the position codes.
func (m *TransformerCaptioner[T]) memory(tp *ad.Tape[T], x *ad.Node[T], b int) *ad.Node[T] {
	ev := nn.NewEval(tp, b)
	f := ev.Node(m.describeConvs(ev, ev.Input(x)))
	ch, h, w := m.Arch.FeatureShape()
	s := h * w
	ids := make([]int, 0, s*b*ch)
	for p := 0; p < s; p++ {
		for r := 0; r < b; r++ {
			for c := 0; c < ch; c++ {
				ids = append(ids, (r*ch+c)*s+p)
			}
		}
	}
	ft := tp.Reshape(tp.Gather(tp.Reshape(f, b*ch*s, 1), ids), s, b, ch)
	mem := m.Proj.Forward(tp, ft)
	if m.MemPos != nil {
		return m.MemPos.Add(tp, mem, 0)
	}
	return nn.Sinusoidal[T]{Dim: m.Arch.DModel}.Add(tp, mem, 0)
}

// Step feeds the start token at the first step (prev nil) and the
// previous tokens afterwards, each with its position's code, through the
// decoder's cached step.
func (m *TransformerCaptioner[T]) Step(tp *ad.Tape[T], st State[T], prev []int) (*ad.Node[T], State[T]) {
	s := st.(*transformerCaptionerState[T])
	ids := prev
	if prev == nil {
		if s.steps > 0 {
			panic("model: transformer captioner step after the first needs the previous tokens")
		}
		ids = make([]int, s.rows)
		for i := range ids {
			ids[i] = m.Vocab() // the start row
		}
	}
	d := m.Arch.DModel
	x := tp.Reshape(m.Emb.Forward(tp, ids), 1, len(ids), d)
	x = nn.Sinusoidal[T]{Dim: d}.Add(tp, x, s.steps)
	y, cache := m.Decoder.Step(tp, x, s.cache, s.drop)
	next := &transformerCaptionerState[T]{cache: cache, steps: s.steps + 1, rows: s.rows, drop: s.drop}
	return m.Out.Forward(tp, tp.Reshape(y, len(ids), d)), next
}

// Cost counts the transformer captioner's operations per image: Start is
// the convolutions, the memory's projection and every layer's keys and
// values of it; Step is a step's affine maps and its attention over the S
// memory positions (the attention over the t steps before it, which grows
// with t, is not counted).
func (m *TransformerCaptioner[T]) Cost() Cost {
	a := m.Arch
	c := convCost(a.Input, a.Conv)
	ch, h, w := a.FeatureShape()
	s, d, l := float64(h*w), float64(a.DModel), float64(a.NumDecoderLayers)
	c.Start += 2 * s * (float64(ch)*d + l*2*d*d)
	layer := 4*d*d + 2*d*d + 2*d*float64(a.DimFeedforward) + 2*s*d // self (q, k, v, out), cross (q, out), FF, over the memory
	c.Step = 2 * (l*layer + d*float64(len(m.Cfg.Vocab)))
	return c
}
