package model

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/nn"
)

// ArchCaptioner names the CNN-RNN image captioner in config.json.
const ArchCaptioner = "cnn-rnn-captioner"

// ConvConfig describes one convolution layer of the encoder.
type ConvConfig struct {
	OutChannels int `json:"out_channels"`
	Kernel      int `json:"kernel"`
	Stride      int `json:"stride"`
	Padding     int `json:"padding"`
}

// geom is the layer's geometry for ad's convolution.
func (c ConvConfig) geom() ad.ConvGeom {
	return ad.ConvGeom{Kernel: c.Kernel, Stride: c.Stride, Pad: c.Padding}
}

// InputConfig describes the image the model reads: its shape and the
// range [Min, Max] of every value, which is also the box attacks and
// verification stay in and the range PNG bytes 0..255 map onto.
type InputConfig struct {
	Channels int     `json:"channels"`
	Height   int     `json:"height"`
	Width    int     `json:"width"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
}

// CaptionerConfig is the captioner's section of config.json.
type CaptionerConfig struct {
	Input    InputConfig  `json:"input"`
	Conv     []ConvConfig `json:"conv"`
	FCHidden int          `json:"fc_hidden"`
	// Embedding is both the image embedding size (i₀) and the token
	// embedding size: both feed the same cell input.
	Embedding int    `json:"embedding_size"`
	Hidden    int    `json:"hidden_size"`
	Cell      string `json:"cell"`
}

// DefaultCaptionerConfig is the Multi-MNIST captioner shipped in
// models/mmnist-rnn. Channel counts and the first FC width are kept small:
// every ReLU there is a potential binary variable for the verifier.
func DefaultCaptionerConfig() Config {
	return Config{
		Architecture: ArchCaptioner,
		Vocab:        []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "<eos>"},
		EOS:          10,
		MaxSteps:     20,
		DType:        "float32",
		Arch: &CaptionerConfig{
			Input:     InputConfig{Channels: 1, Height: 28, Width: 112, Min: -1, Max: 1},
			Conv:      []ConvConfig{{8, 3, 2, 1}, {16, 3, 2, 1}},
			FCHidden:  128,
			Embedding: 32,
			Hidden:    32,
			Cell:      CellReLU,
		},
	}
}

// Validate checks the section describes a captioner lenspec can build.
func (a *CaptionerConfig) Validate(c *Config) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	in := a.Input
	if in.Channels <= 0 || in.Height <= 0 || in.Width <= 0 || in.Channels > maxDim || in.Height > maxDim || in.Width > maxDim {
		bad("input shape %dx%dx%d must be positive and at most %d", in.Channels, in.Height, in.Width, maxDim)
	}
	if !(in.Min < in.Max) || in.Min < -1e6 || in.Max > 1e6 {
		bad("input range [%v, %v] must be non-empty and within ±1e6", in.Min, in.Max)
	}
	h, w := in.Height, in.Width
	for i, cv := range a.Conv {
		if cv.OutChannels <= 0 || cv.Kernel <= 0 || cv.Stride <= 0 || cv.Padding < 0 {
			bad("conv[%d]: %+v has a non-positive size", i, cv)
			continue
		}
		if cv.OutChannels > maxDim || cv.Kernel > maxDim || cv.Stride > maxDim || cv.Padding > maxDim {
			bad("conv[%d]: %+v exceeds the supported size %d", i, cv, maxDim)
			continue
		}
		h, w = cv.geom().Out(h), cv.geom().Out(w)
		if h <= 0 || w <= 0 {
			bad("conv[%d]: output %dx%d is empty", i, h, w)
		}
	}
	for _, d := range []struct {
		name string
		v    int
	}{{"fc_hidden", a.FCHidden}, {"embedding_size", a.Embedding}, {"hidden_size", a.Hidden}} {
		if d.v <= 0 || d.v > maxDim {
			bad("%s %d must be in 1..%d", d.name, d.v, maxDim)
		}
	}
	if _, ok := cellKinds[a.Cell]; !ok {
		bad("cell %q is not supported (want one of %q)", a.Cell, cellNames())
	}
	return errors.Join(errs...)
}

// ParamCount counts the captioner's parameters.
func (a *CaptionerConfig) ParamCount(c *Config) float64 {
	n, in := 0.0, float64(a.Input.Channels)
	for _, cv := range a.Conv {
		n += float64(cv.OutChannels) * (in*float64(cv.Kernel)*float64(cv.Kernel) + 1)
		in = float64(cv.OutChannels)
	}
	ch, h, w := a.FeatureShape()
	v, e, hd := float64(len(c.Vocab)), float64(a.Embedding), float64(a.Hidden)
	gates := float64(cellKinds[a.Cell])
	n += float64(ch)*float64(h)*float64(w)*float64(a.FCHidden) + float64(a.FCHidden)*(e+1) + e
	return n + v*e + gates*hd*(e+hd+2) + v*(hd+1)
}

// FeatureShape returns the encoder's convolution output [C, H, W] (the
// input itself when there are no convolutions).
func (a *CaptionerConfig) FeatureShape() (ch, h, w int) { return featureShape(a.Input, a.Conv) }

// Spec is the captioner's input description.
func (a *CaptionerConfig) Spec() InputSpec {
	in := a.Input
	return InputSpec{Kind: Continuous, Shape: []int{in.Channels, in.Height, in.Width}, Min: in.Min, Max: in.Max}
}

func init() {
	Register(Architecture{
		Name: ArchCaptioner,
		ParseConfig: func(b []byte) (ArchConfig, error) {
			var a CaptionerConfig
			if err := DecodeSection(b, &a); err != nil {
				return nil, err
			}
			return &a, nil
		},
		New32: func(c *Config, rng *rand.Rand) (Decoder[float32], error) { return NewCaptioner[float32](c, rng) },
		New64: func(c *Config, rng *rand.Rand) (Decoder[float64], error) { return NewCaptioner[float64](c, rng) },
	})
}

// Captioner is the paper's CNN-RNN image captioner (§4, §5.1):
//
//	i₀ = FC₂(ReLU(FC₁(ReLU(Conv₂(ReLU(Conv₁(x))))))),  h₀ = 0 (and c₀ = 0)
//	h_{t+1} = cell(i_t, h_t)
//	o_t = W_out·h_{t+1} + b_out,  y_t = argmax o_t,  i_{t+1} = emb[y_t]
//
// with cell the ReLU RNN, h' = ReLU(W_ih·i + b_ih + W_hh·h + b_hh), an
// LSTM or a GRU. Every cell lowers into the verifier (Lower*).
type Captioner[T ad.Float] struct {
	Cfg  *Config
	Arch *CaptionerConfig
	encoder[T]
	Emb *nn.Embedding[T]
	// Exactly one of RNN, LSTM and GRU is set, as the config's cell says.
	RNN  *nn.RNNCell[T]
	LSTM *nn.LSTMCell[T]
	GRU  *nn.GRUCell[T]
	Out  *nn.Linear[T]
	cell cell[T]
}

// NewCaptioner builds a captioner for cfg with weights drawn from rng (nil:
// zero).
func NewCaptioner[T ad.Float](cfg *Config, rng *rand.Rand) (*Captioner[T], error) {
	a, ok := cfg.Arch.(*CaptionerConfig)
	if !ok || cfg.Architecture != ArchCaptioner {
		return nil, fmt.Errorf("model: config is for %q, not %q", cfg.Architecture, ArchCaptioner)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Captioner[T]{Cfg: cfg, Arch: a, encoder: newEncoder[T](a.Input, a.Conv, a.FCHidden, a.Embedding, rng)}
	m.Emb = nn.NewEmbedding[T]("decoder.embedding", len(cfg.Vocab), a.Embedding, rng)
	var err error
	if m.cell, err = newCell[T](a.Cell, "decoder.cell", a.Embedding, a.Hidden, rng); err != nil {
		return nil, err
	}
	switch c := m.cell.(type) {
	case rnnCell[T]:
		m.RNN = c.RNNCell
	case lstmCell[T]:
		m.LSTM = c.LSTMCell
	case gruCell[T]:
		m.GRU = c.GRUCell
	}
	m.Out = nn.NewLinear[T]("decoder.out", a.Hidden, len(cfg.Vocab), rng)
	return m, nil
}

// Params lists every parameter in file order.
func (m *Captioner[T]) Params() []*ad.Param[T] {
	ps := append(m.encoder.params(), m.Emb.Params()...)
	ps = append(ps, m.cell.params()...)
	return append(ps, m.Out.Params()...)
}

// Config is the model's configuration.
func (m *Captioner[T]) Config() *Config { return m.Cfg }

// Input describes the image the captioner reads.
func (m *Captioner[T]) Input() InputSpec { return m.Arch.Spec() }

// EOS is the end-of-sequence token id.
func (m *Captioner[T]) EOS() int { return m.Cfg.EOS }

// MaxSteps is the default decoding step cap.
func (m *Captioner[T]) MaxSteps() int { return m.Cfg.MaxSteps }

// Vocab is the number of output tokens.
func (m *Captioner[T]) Vocab() int { return len(m.Cfg.Vocab) }

// captionerState is the decoder state: the cell's (h first, an LSTM's c
// second), and i₀, the input of the first step, until that step has run.
type captionerState[T ad.Float] struct {
	s  []*ad.Node[T]
	i0 *ad.Node[T]
}

// Rows gathers the given rows of every part of the state.
func (s *captionerState[T]) Rows(tp *ad.Tape[T], idx []int) State[T] {
	out := &captionerState[T]{s: make([]*ad.Node[T], len(s.s))}
	for k, v := range s.s {
		out.s[k] = tp.Gather(v, idx)
	}
	if s.i0 != nil {
		out.i0 = tp.Gather(s.i0, idx)
	}
	return out
}

// Start encodes images in.X [B, C·H·W] to i₀, with zero state.
func (m *Captioner[T]) Start(tp *ad.Tape[T], in Input[T]) (State[T], error) {
	b, err := m.imageBatch(ArchCaptioner, in)
	if err != nil {
		return nil, err
	}
	i0 := m.encode(tp, in.X, in.Dropout, in.Rng)
	s := &captionerState[T]{s: make([]*ad.Node[T], m.cell.states()), i0: i0}
	for k := range s.s {
		s.s[k] = tp.Const(ad.New[T](b, m.Arch.Hidden))
	}
	return s, nil
}

// Step feeds i₀ at the first step (prev nil) and the embedding of the
// previous token afterwards: describeStep on the tape.
func (m *Captioner[T]) Step(tp *ad.Tape[T], st State[T], prev []int) (*ad.Node[T], State[T]) {
	s := st.(*captionerState[T])
	if prev == nil && s.i0 == nil {
		panic("model: captioner step after the first needs the previous tokens")
	}
	e := nn.NewEval(tp, s.s[0].Value.Shape[0])
	e.Tokens = prev
	var i0 nn.Value
	if prev == nil {
		i0 = e.Input(s.i0)
	}
	state := make([]nn.Value, len(s.s))
	for k, v := range s.s {
		state[k] = e.Input(v)
	}
	out, next := m.describeStep(e, prev == nil, i0, state)
	ns := &captionerState[T]{s: make([]*ad.Node[T], len(next))}
	for k, v := range next {
		ns.s[k] = e.Node(v)
	}
	return m.Out.Forward(tp, e.Node(out)), ns
}

// describeStep is one decoder step: the cell fed i₀ at the first step and
// the embedding of the token fed back afterwards, on state s. It returns
// the vector the output layer reads and the next state.
func (m *Captioner[T]) describeStep(b nn.Builder, first bool, i0 nn.Value, s []nn.Value) (nn.Value, []nn.Value) {
	x := i0
	if !first {
		x = b.Embed("emb", m.Emb.W, m.Vocab(), m.Arch.Embedding)
	}
	next := m.cell.describe(b, x, s)
	return next[0], next
}

// Cost counts a model's floating-point operations per input (2 per
// multiply–add of its affine maps; elementwise work is not counted), for
// benchmarks' ratios to the GEMM bound.
type Cost struct {
	// Start encodes one input; FirstLayer is the part of Start in the layer
	// reading the input, whose input gradient training does not need.
	Start, FirstLayer float64
	// Step is one decoder step.
	Step float64
}

// Coster is implemented by architectures that count their operations.
type Coster interface{ Cost() Cost }

// convCost counts the operations of convolutions convs on one image in:
// Cost's Start and FirstLayer.
func convCost(in InputConfig, convs []ConvConfig) Cost {
	var c Cost
	h, w, ch := in.Height, in.Width, in.Channels
	for i, cv := range convs {
		h, w = cv.geom().Out(h), cv.geom().Out(w)
		f := 2 * float64(h*w*cv.OutChannels*ch*cv.Kernel*cv.Kernel)
		c.Start += f
		if i == 0 {
			c.FirstLayer = f
		}
		ch = cv.OutChannels
	}
	return c
}

// Cost counts the captioner's operations per image.
func (m *Captioner[T]) Cost() Cost {
	a := m.Arch
	c := convCost(a.Input, a.Conv)
	in, h, w := featureShape(a.Input, a.Conv)
	c.Start += 2 * float64(h*w*in*a.FCHidden+a.FCHidden*a.Embedding)
	gates := cellKinds[a.Cell]
	c.Step = 2 * float64(gates*(a.Embedding*a.Hidden+a.Hidden*a.Hidden)+a.Hidden*len(m.Cfg.Vocab))
	return c
}
