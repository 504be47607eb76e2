package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/nn"
)

// ArchShowTell names the Show-and-Tell captioner in config.json.
const ArchShowTell = "show-and-tell-captioner"

// ShowTellConfig is the Show-and-Tell captioner's section of config.json.
type ShowTellConfig struct {
	Input InputConfig `json:"input"`
	// Conv are the encoder's convolutions, each followed by ReLU;
	// downsampling is by stride (no pooling).
	Conv     []ConvConfig `json:"conv"`
	FCHidden int          `json:"fc_hidden"`
	// Embedding is both the image embedding size (the LSTM's input at
	// step −1) and the word embedding size.
	Embedding int `json:"embedding_size"`
	Hidden    int `json:"hidden_size"`
}

// DefaultShowTellConfig is the captioner shipped in models/showtell-lstm,
// for the captions data set's 56×112 canvases (package captions), whose
// vocabulary the caller sets (vocab ends with eos).
func DefaultShowTellConfig(vocab []string) Config {
	return Config{
		Architecture: ArchShowTell,
		Vocab:        vocab,
		EOS:          len(vocab) - 1,
		MaxSteps:     40,
		DType:        "float32",
		Arch: &ShowTellConfig{
			Input:     InputConfig{Channels: 1, Height: 56, Width: 112, Min: -1, Max: 1},
			Conv:      []ConvConfig{{16, 3, 2, 1}, {32, 3, 2, 1}, {32, 3, 2, 1}, {64, 3, 2, 1}},
			FCHidden:  256,
			Embedding: 64,
			Hidden:    128,
		},
	}
}

// Validate checks the section describes a model lenspec can build.
func (a *ShowTellConfig) Validate(c *Config) error {
	// The encoder and the sizes are the CNN-RNN captioner's, checked the
	// same way.
	cc := CaptionerConfig{Input: a.Input, Conv: a.Conv, FCHidden: a.FCHidden, Embedding: a.Embedding, Hidden: a.Hidden, Cell: CellLSTM}
	return cc.Validate(c)
}

// ParamCount counts the model's parameters.
func (a *ShowTellConfig) ParamCount(c *Config) float64 {
	cc := CaptionerConfig{Input: a.Input, Conv: a.Conv, FCHidden: a.FCHidden, Embedding: a.Embedding, Hidden: a.Hidden, Cell: CellLSTM}
	return cc.ParamCount(c) + float64(a.Embedding) // the start token's row
}

// Spec is the model's input description.
func (a *ShowTellConfig) Spec() InputSpec {
	in := a.Input
	return InputSpec{Kind: Continuous, Shape: []int{in.Channels, in.Height, in.Width}, Min: in.Min, Max: in.Max}
}

func init() {
	Register(Architecture{
		Name: ArchShowTell,
		ParseConfig: func(b []byte) (ArchConfig, error) {
			var a ShowTellConfig
			if err := DecodeSection(b, &a); err != nil {
				return nil, err
			}
			return &a, nil
		},
		New32: func(c *Config, rng *rand.Rand) (Decoder[float32], error) { return NewShowTell[float32](c, rng) },
		New64: func(c *Config, rng *rand.Rand) (Decoder[float64], error) { return NewShowTell[float64](c, rng) },
	})
}

// ShowTell is the Show-and-Tell image captioner (Vinyals et al., CVPR
// 2015) at the scale of the captions data set: a strided-convolution
// encoder whose image embedding is the LSTM's input at step −1, then word
// embeddings, starting with the start token ⟨S⟩:
//
//	x₋₁ = FC₂(ReLU(FC₁(ReLU(Conv_L(… ReLU(Conv₁(image)))))))
//	(h₀, c₀) = LSTM(x₋₁, 0, 0)                       (its output unused)
//	(h_{t+1}, c_{t+1}) = LSTM(W_e[w_t], h_t, c_t),  w₀ = ⟨S⟩, w_t = y_{t−1}
//	o_t = W_out·h_{t+1} + b_out,  y_t = argmax o_t
//
// with LSTM PyTorch's nn.LSTMCell (gates i, f, g, o). The word embedding
// W_e has one row per output token and a last row for ⟨S⟩, which is never
// an output. Only convolutions, dense layers, ReLU, embeddings, the LSTM
// cell and the output projection appear; it lowers itself into the
// verifier (LowerEncoder, LowerStep).
type ShowTell[T ad.Float] struct {
	Cfg  *Config
	Arch *ShowTellConfig
	encoder[T]
	// Emb has Vocab()+1 rows: the last is the start token's.
	Emb  *nn.Embedding[T]
	LSTM *nn.LSTMCell[T]
	Out  *nn.Linear[T]
}

// NewShowTell builds the model for cfg with weights drawn from rng (nil:
// zero).
func NewShowTell[T ad.Float](cfg *Config, rng *rand.Rand) (*ShowTell[T], error) {
	a, ok := cfg.Arch.(*ShowTellConfig)
	if !ok || cfg.Architecture != ArchShowTell {
		return nil, fmt.Errorf("model: config is for %q, not %q", cfg.Architecture, ArchShowTell)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &ShowTell[T]{Cfg: cfg, Arch: a, encoder: newEncoder[T](a.Input, a.Conv, a.FCHidden, a.Embedding, rng)}
	m.Emb = nn.NewEmbedding[T]("decoder.embedding", len(cfg.Vocab)+1, a.Embedding, rng)
	m.LSTM = nn.NewLSTMCell[T]("decoder.cell", a.Embedding, a.Hidden, rng)
	m.Out = nn.NewLinear[T]("decoder.out", a.Hidden, len(cfg.Vocab), rng)
	if rng != nil {
		for i := range m.Out.W.W.Data {
			m.Out.W.W.Data[i] *= outputInitGain
		}
	}
	return m, nil
}

// outputInitGain scales the output layer's He initialisation. The LSTM's
// h is bounded by 1 and starts near 0.1, so at He scale the image moves
// the first logits too little for its gradient to stand out: trained from
// there the model sits for thousands of steps on the caption prior. At 5×,
// a 64-image batch is fitted in 31 steps instead of 151.
const outputInitGain = 5

// Params lists every parameter in file order.
func (m *ShowTell[T]) Params() []*ad.Param[T] {
	ps := append(m.encoder.params(), m.Emb.Params()...)
	ps = append(ps, m.LSTM.Params()...)
	return append(ps, m.Out.Params()...)
}

// Config is the model's configuration.
func (m *ShowTell[T]) Config() *Config { return m.Cfg }

// Input describes the image the model reads.
func (m *ShowTell[T]) Input() InputSpec { return m.Arch.Spec() }

// EOS is the end-of-sequence token id.
func (m *ShowTell[T]) EOS() int { return m.Cfg.EOS }

// MaxSteps is the default decoding step cap.
func (m *ShowTell[T]) MaxSteps() int { return m.Cfg.MaxSteps }

// Vocab is the number of output tokens (⟨S⟩ is not one).
func (m *ShowTell[T]) Vocab() int { return len(m.Cfg.Vocab) }

// Start is the start token's row of the word embedding.
func (m *ShowTell[T]) startID() int { return len(m.Cfg.Vocab) }

// showTellState is the LSTM's (h, c).
type showTellState[T ad.Float] struct{ h, c *ad.Node[T] }

// Rows gathers the given rows of h and c.
func (s *showTellState[T]) Rows(tp *ad.Tape[T], idx []int) State[T] {
	return &showTellState[T]{h: tp.Gather(s.h, idx), c: tp.Gather(s.c, idx)}
}

// Start encodes images in.X [B, C·H·W] and runs the LSTM's step −1 on the
// image embedding from a zero state.
func (m *ShowTell[T]) Start(tp *ad.Tape[T], in Input[T]) (State[T], error) {
	b, err := m.imageBatch(ArchShowTell, in)
	if err != nil {
		return nil, err
	}
	x := m.encode(tp, in.X, in.Dropout, in.Rng)
	zero := func() *ad.Node[T] { return tp.Const(ad.New[T](b, m.Arch.Hidden)) }
	h, c := m.LSTM.Forward(tp, x, zero(), zero())
	return &showTellState[T]{h: h, c: c}, nil
}

// Step feeds ⟨S⟩ at the first step (prev nil) and the previous token's
// embedding afterwards.
func (m *ShowTell[T]) Step(tp *ad.Tape[T], st State[T], prev []int) (*ad.Node[T], State[T]) {
	logits, next, _ := m.StepGates(tp, st, prev)
	return logits, next
}

// StepGates is Step that also returns the LSTM's gate pre-activations
// [B, 4·Hidden] (i, f, g, o), which GateSaturation measures.
func (m *ShowTell[T]) StepGates(tp *ad.Tape[T], st State[T], prev []int) (*ad.Node[T], State[T], *ad.Node[T]) {
	s := st.(*showTellState[T])
	e := nn.NewEval(tp, s.h.Value.Shape[0])
	e.Tokens = prev
	h, c, gates := m.describeStep(e, prev == nil, e.Input(s.h), e.Input(s.c))
	hn := e.Node(h)
	return m.Out.Forward(tp, hn), &showTellState[T]{h: hn, c: e.Node(c)}, e.Node(gates)
}

// describeStep is one LSTM step on state (h, c): fed the start token's
// embedding at the first step, the token fed back afterwards. It returns
// the next state and the gates' pre-activations.
func (m *ShowTell[T]) describeStep(b nn.Builder, first bool, h, c nn.Value) (hNext, cNext, gates nn.Value) {
	var x nn.Value
	if first {
		x = b.Row("start", m.Emb.W, m.startID(), m.Arch.Embedding)
	} else {
		x = b.Embed("emb", m.Emb.W, m.Vocab(), m.Arch.Embedding)
	}
	gates = m.LSTM.Gates(b, m.LSTM.Project(b, x), h)
	hNext, cNext = nn.LSTMUpdate(b, gates, c, m.Arch.Hidden)
	return hNext, cNext, gates
}

// LowerEncoder describes the encoder to b, and the LSTM's step −1 on the
// image embedding from a zero state: the state (h, c) the first step
// reads.
func (m *ShowTell[T]) LowerEncoder(b nn.Builder, x nn.Value) (map[string]nn.Value, error) {
	h, c := m.LSTM.Describe(nn.Scope(b, "h0"), m.describe(b, x), nn.Value{}, nn.Value{})
	return map[string]nn.Value{"h": h, "c": c}, nil
}

// LowerStep describes one LSTM step (describeStep).
func (m *ShowTell[T]) LowerStep(b nn.Builder, first bool, s map[string]nn.Value) (nn.Value, map[string]nn.Value, error) {
	h, c, _ := m.describeStep(b, first, s["h"], s["c"])
	return h, map[string]nn.Value{"h": h, "c": c}, nil
}

// LowerLogits returns the output layer.
func (m *ShowTell[T]) LowerLogits() (w, b []float64) {
	return m.Out.W.Float64s(), m.Out.B.Float64s()
}

// Cost counts the model's operations per image.
func (m *ShowTell[T]) Cost() Cost {
	a := m.Arch
	cc := &Captioner[T]{Cfg: m.Cfg, Arch: &CaptionerConfig{Input: a.Input, Conv: a.Conv, FCHidden: a.FCHidden, Embedding: a.Embedding, Hidden: a.Hidden, Cell: CellLSTM}}
	c := cc.Cost()
	c.Start += c.Step - 2*float64(a.Hidden*len(m.Cfg.Vocab)) // step −1 has no output layer
	return c
}
