package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/nn"
)

// tinyCaptionerTConfig is a transformer captioner small enough for finite
// differences over every weight: 12 memory positions of width 4.
func tinyCaptionerTConfig(normFirst bool, positions string, layers int) *Config {
	c := DefaultTransformerCaptionerConfig()
	a := c.Arch.(*TransformerCaptionerConfig)
	a.Input = InputConfig{Channels: 1, Height: 6, Width: 8, Min: -1, Max: 1}
	a.Conv = []ConvConfig{{2, 3, 2, 1}}
	a.DModel, a.NHead, a.NumDecoderLayers, a.DimFeedforward = 4, 2, layers, 6
	a.NormFirst, a.MemoryPositions = normFirst, positions
	c.Vocab = []string{"a", "b", "c", "<eos>"}
	c.EOS = 3
	c.MaxSteps = 6
	return &c
}

// transformerVariants are the layouts the tests cover: post- and
// pre-norm, learned and sinusoidal memory codes, one and two layers.
var transformerVariants = []struct {
	name      string
	normFirst bool
	positions string
	layers    int
}{
	{"post-norm learned", false, PositionsLearned, 1},
	{"pre-norm sinusoidal 2 layers", true, PositionsSinusoidal, 2},
}

func tinyCaptionerT(t testing.TB, normFirst bool, positions string, layers int, seed uint64) *TransformerCaptioner[float64] {
	t.Helper()
	m, err := NewTransformerCaptioner[float64](tinyCaptionerTConfig(normFirst, positions, layers), rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTransformerCaptionerCachedEqualsFull: the logits of Start and the
// cached Steps (and of Rows taken midway) equal those of the whole token
// sequence decoded at once by the decoder's Forward, with no cache.
func TestTransformerCaptionerCachedEqualsFull(t *testing.T) {
	for _, v := range transformerVariants {
		t.Run(v.name, func(t *testing.T) {
			m := tinyCaptionerT(t, v.normFirst, v.positions, v.layers, 5)
			rng := rand.New(rand.NewPCG(6, 6))
			const b, steps = 3, 5
			x := randInput(rng, b*size(m))
			toks := make([][]int, steps) // toks[t][r]: row r's token fed after step t
			for s := range toks {
				toks[s] = []int{rng.IntN(m.Vocab()), rng.IntN(m.Vocab()), rng.IntN(m.Vocab())}
			}

			// The whole sequence: start row, then the tokens, all at once.
			tp := ad.NewTape[float64](false)
			mem := m.memory(tp, tp.Const(ad.FromSlice(x, b, size(m))), b)
			ids := []int{m.Vocab(), m.Vocab(), m.Vocab()}
			for _, tk := range toks[:steps-1] {
				ids = append(ids, tk...)
			}
			d := m.Arch.DModel
			emb := nn.Sinusoidal[float64]{Dim: d}.Add(tp, tp.Reshape(m.Emb.Forward(tp, ids), steps, b, d), 0)
			y := m.Decoder.Forward(tp, emb, mem, nil, nil, nn.Dropout{})
			full := m.Out.Forward(tp, tp.Reshape(y, steps*b, d)).Value.Data
			v := m.Vocab()
			want := func(s, r int) []float64 { return full[(s*b+r)*v : (s*b+r+1)*v] }

			st, err := m.Start(tp, Input[float64]{X: tp.Const(ad.FromSlice(x, b, size(m)))})
			if err != nil {
				t.Fatal(err)
			}
			rows := []int{0, 1, 2}
			var prev []int
			for s := 0; s < steps; s++ {
				var logits *ad.Node[float64]
				logits, st = m.Step(tp, st, prev)
				for k, r := range rows {
					for j, got := range logits.Value.Data[k*v : (k+1)*v] {
						if w := want(s, r)[j]; math.Abs(got-w) > 1e-12 {
							t.Fatalf("step %d row %d logit %d: cached %.15g, whole sequence %.15g", s, r, j, got, w)
						}
					}
				}
				if s == 1 { // drop row 1 and swap the others, as a batch whose row finished
					rows = []int{2, 0}
					st = st.Rows(tp, []int{2, 0})
				}
				prev = prev[:0]
				for _, r := range rows {
					prev = append(prev, toks[s][r])
				}
			}
		})
	}
}

// TestTransformerCaptionerLossGradient checks the teacher-forced loss's
// gradient with respect to the image and every parameter against central
// finite differences, with labels of different lengths.
func TestTransformerCaptionerLossGradient(t *testing.T) {
	for _, v := range transformerVariants {
		t.Run(v.name, func(t *testing.T) {
			m := tinyCaptionerT(t, v.normFirst, v.positions, v.layers, 7)
			rng := rand.New(rand.NewPCG(8, 8))
			const b = 3
			x := randInput(rng, b*size(m))
			labels := [][]int{{0, 2}, {1}, {}}
			checkLossGradient(t, m, x, b, func(tp *ad.Tape[float64], in Input[float64]) (*ad.Node[float64], error) {
				return TeacherForcedLoss[float64](tp, m, in, labels)
			})
		})
	}
}

// TestTransformerCaptionerConfigErrors: each bad setting is refused with
// one line naming the key (torch.nn.Transformer's name) and its value.
func TestTransformerCaptionerConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(a *TransformerCaptionerConfig)
		want string
	}{
		{"nhead not dividing d_model", func(a *TransformerCaptionerConfig) { a.NHead = 3 }, "nhead 3 does not divide d_model 4"},
		{"d_model zero", func(a *TransformerCaptionerConfig) { a.DModel = 0 }, "d_model 0 is not positive"},
		{"d_model huge", func(a *TransformerCaptionerConfig) { a.DModel = 1 << 20 }, "d_model 1048576 and dim_feedforward 6 must be at most 65536"},
		{"dim_feedforward zero", func(a *TransformerCaptionerConfig) { a.DimFeedforward = 0 }, "dim_feedforward 0 is not positive"},
		{"activation", func(a *TransformerCaptionerConfig) { a.Activation = "tanh" }, `activation "tanh" is neither relu nor gelu`},
		{"no layers", func(a *TransformerCaptionerConfig) { a.NumDecoderLayers = 0 }, "num_decoder_layers 0 must be in 1..64"},
		{"dropout", func(a *TransformerCaptionerConfig) { a.Dropout = 1 }, "dropout 1 must be in [0, 1)"},
		{"dropout NaN", func(a *TransformerCaptionerConfig) { a.Dropout = math.NaN() }, "dropout NaN must be in [0, 1)"},
		{"memory positions", func(a *TransformerCaptionerConfig) { a.MemoryPositions = "rotary" }, `memory_positions "rotary" is neither "learned" nor "sinusoidal"`},
		{"layer_norm_eps", func(a *TransformerCaptionerConfig) { a.LayerNormEps = -1 }, "layer_norm_eps -1 is not a positive number"},
		{"empty conv output", func(a *TransformerCaptionerConfig) { a.Conv = []ConvConfig{{2, 9, 1, 0}} }, "conv[0]: output -2x0 is empty"},
		{"input range", func(a *TransformerCaptionerConfig) { a.Input.Min = 1 }, "input range [1, 1] must be non-empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tinyCaptionerTConfig(false, PositionsLearned, 1)
			c.edit(cfg.Arch.(*TransformerCaptionerConfig))
			err := cfg.Validate()
			if err == nil {
				t.Fatalf("accepted; want %q", c.want)
			}
			if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 0 {
				t.Fatalf("error %q, want one line containing %q", msg, c.want)
			}
			if _, err := NewTransformerCaptioner[float32](cfg, nil); err == nil {
				t.Fatal("built a model of an invalid config")
			}
		})
	}
	if err := tinyCaptionerTConfig(true, PositionsSinusoidal, 2).Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
}

// TestTransformerCaptionerCost: the default model's counts, by hand.
func TestTransformerCaptionerCost(t *testing.T) {
	cfg := DefaultTransformerCaptionerConfig()
	m, err := NewTransformerCaptioner[float32](&cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Cost()
	// The CNN-RNN captioner's convolutions; the 196 memory positions
	// projected from 16 channels to 64, then to one layer's keys and
	// values (2·64·64 each).
	if want := 2.0 * (14*56*8*9 + 7*28*16*72 + 196*16*64 + 196*2*64*64); c.Start != want || c.FirstLayer != 2.0*14*56*8*9 {
		t.Fatalf("start FLOPs %+v, want %v", c, want)
	}
	// Self-attention's q, k, v and out (4·64²), cross-attention's q and
	// out (2·64²), the feed-forward block (2·64·256), scores and sum over
	// the memory (2·196·64), the output layer (64·11).
	if want := 2.0 * (4*64*64 + 2*64*64 + 2*64*256 + 2*196*64 + 64*11); c.Step != want {
		t.Fatalf("step FLOPs %v, want %v", c.Step, want)
	}
}

// TestTransformerCaptionerParamCount: the config's count, which bounds
// what a file may make lenspec allocate, is the model's.
func TestTransformerCaptionerParamCount(t *testing.T) {
	def := DefaultTransformerCaptionerConfig()
	for _, cfg := range []*Config{&def, tinyCaptionerTConfig(true, PositionsSinusoidal, 2)} {
		m, err := NewTransformerCaptioner[float32](cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range m.Params() {
			n += len(p.W.Data)
		}
		if got := cfg.Arch.ParamCount(cfg); got != float64(n) {
			t.Errorf("%+v: ParamCount %v, the model has %d", *cfg.Arch.(*TransformerCaptionerConfig), got, n)
		}
	}
}
