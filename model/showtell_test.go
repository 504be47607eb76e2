package model

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

func tinyShowTellConfig() *Config {
	c := DefaultShowTellConfig([]string{"a", "b", "c", "<eos>"})
	a := c.Arch.(*ShowTellConfig)
	a.Input = InputConfig{Channels: 1, Height: 6, Width: 8, Min: -1, Max: 1}
	a.Conv = []ConvConfig{{2, 3, 2, 1}, {3, 3, 1, 1}}
	a.FCHidden, a.Embedding, a.Hidden = 5, 3, 4
	c.MaxSteps = 6
	return &c
}

func tinyShowTell(t testing.TB, seed uint64) *ShowTell[float64] {
	t.Helper()
	m, err := NewShowTell[float64](tinyShowTellConfig(), rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	// Larger weights than PyTorch's initialisation, so that paths vary in
	// length and gates saturate.
	for _, p := range m.Params() {
		for i := range p.W.Data {
			p.W.Data[i] *= 3
		}
	}
	return m
}

// naiveShowTell is a one-image reference decoder in scalar loops: the
// encoder runs on the tape (its layers have loop tests of their own), the
// LSTM's step −1, ⟨S⟩ and every step in plain code. It also returns each
// step's gate pre-activations.
func naiveShowTell(m *ShowTell[float64], x []float64, steps int) (toks []int, stopped bool, gates [][]float64) {
	tp := ad.NewTape[float64](false)
	in := m.encode(tp, tp.Const(ad.FromSlice(x, 1, len(x))), 0, nil).Value.Data
	H, E := m.Arch.Hidden, m.Arch.Embedding
	h, c := make([]float64, H), make([]float64, H)
	affine := func(w, b []float64, v []float64, rows int) []float64 {
		out := make([]float64, rows)
		for r := range rows {
			s := b[r]
			for k, vk := range v {
				s += w[r*len(v)+k] * vk
			}
			out[r] = s
		}
		return out
	}
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	l := m.LSTM
	cell := func(in []float64) []float64 {
		a := affine(l.Wih.W.Data, l.Bih.W.Data, in, 4*H)
		b := affine(l.Whh.W.Data, l.Bhh.W.Data, h, 4*H)
		z := make([]float64, 4*H)
		for k := range z {
			z[k] = a[k] + b[k]
		}
		for k := range H {
			i, f, g, o := sig(z[k]), sig(z[H+k]), math.Tanh(z[2*H+k]), sig(z[3*H+k])
			c[k] = f*c[k] + i*g
			h[k] = o * math.Tanh(c[k])
		}
		return z
	}
	cell(in) // step −1: the image embedding
	y := m.Vocab()
	for range steps {
		gates = append(gates, cell(m.Emb.W.W.Data[y*E:(y+1)*E]))
		o := affine(m.Out.W.W.Data, m.Out.B.W.Data, h, m.Vocab())
		y = 0
		for k, v := range o {
			if v > o[y] {
				y = k
			}
		}
		if y == m.Cfg.EOS {
			return toks, true, gates
		}
		toks = append(toks, y)
	}
	return toks, false, gates
}

// TestShowTellDecodeMatchesNaive holds batched greedy decoding (with its
// compaction of finished rows) to the scalar loop in float64, and the
// float32 path to it where no step is near a tie. The loop runs step −1
// and then max_steps steps: an output that does not stop has max_steps
// tokens, step −1 does not count toward the cap (docs/models.md).
func TestShowTellDecodeMatchesNaive(t *testing.T) {
	ctx := context.Background()
	lengths := map[int]int{}
	for seed := uint64(1); seed <= 10; seed++ {
		m := tinyShowTell(t, seed)
		m32, err := Cast[float32, float64](m)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 9))
		const n = 40
		x := randInput(rng, n*size(m))
		res, err := Decode[float64](ctx, m, Batch[float64]{X: x}, 0)
		if err != nil {
			t.Fatal(err)
		}
		x32 := make([]float32, len(x))
		for i, v := range x {
			x32[i] = float32(v)
		}
		res32, err := Decode(ctx, m32, Batch[float32]{X: x32}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			toks, stopped, _ := naiveShowTell(m, x[i*size(m):(i+1)*size(m)], m.Cfg.MaxSteps)
			if stopped != r.Stopped || !slices.Equal(toks, r.Tokens) {
				t.Fatalf("seed %d image %d: batched %v/%v, naive %v/%v", seed, i, r.Tokens, r.Stopped, toks, stopped)
			}
			if r.MinRelMargin > 1e-4 && (res32[i].Stopped != r.Stopped || !slices.Equal(res32[i].Tokens, r.Tokens)) {
				t.Fatalf("seed %d image %d: float32 %v, float64 %v (margin %g)", seed, i, res32[i].Tokens, r.Tokens, r.MinRelMargin)
			}
			l := len(r.Tokens)
			if !r.Stopped {
				if l != m.Cfg.MaxSteps {
					t.Fatalf("seed %d image %d: not stopped after %d tokens, the cap is %d", seed, i, l, m.Cfg.MaxSteps)
				}
				l = -1
			}
			lengths[l]++
		}
	}
	if len(lengths) < 3 || lengths[-1] == 0 {
		t.Fatalf("outputs of lengths %v only (-1: not stopped): the test exercises neither compaction nor the cap", lengths)
	}
}

func TestShowTellLossGradient(t *testing.T) {
	m := tinyShowTell(t, 3)
	for _, p := range m.Params() {
		for i := range p.W.Data {
			p.W.Data[i] /= 3 // away from saturation, where differences are informative
		}
	}
	rng := rand.New(rand.NewPCG(4, 4))
	const b = 3
	x := randInput(rng, b*size(m))
	labels := [][]int{{0, 2}, {1}, {}}
	checkLossGradient(t, m, x, b, func(tp *ad.Tape[float64], in Input[float64]) (*ad.Node[float64], error) {
		return TeacherForcedLoss[float64](tp, m, in, labels)
	})
}

func TestShowTellSaveLoad(t *testing.T) {
	m := tinyShowTell(t, 5)
	for _, p := range m.Params() {
		for i, v := range p.W.Data {
			p.W.Data[i] = float64(float32(v)) // model.safetensors holds float32
		}
	}
	dir := t.TempDir()
	if err := Save[float64](dir, m); err != nil {
		t.Fatal(err)
	}
	d, err := Load[float64](dir)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := d.(*ShowTell[float64])
	if !ok {
		t.Fatalf("Load returned %T", d)
	}
	for i, p := range got.Params() {
		if p.Name != m.Params()[i].Name || !slices.Equal(p.W.Data, m.Params()[i].W.Data) {
			t.Fatalf("parameter %s changed in a round trip", p.Name)
		}
	}
	if n := got.Emb.W.W.Shape[0]; n != got.Vocab()+1 {
		t.Errorf("embedding has %d rows, want vocab + ⟨S⟩ = %d", n, got.Vocab()+1)
	}
	if want := int(got.Cfg.Arch.ParamCount(got.Cfg)); countParams(got.Params()) != want {
		t.Errorf("ParamCount %d, the model has %d", want, countParams(got.Params()))
	}
}

func countParams[T ad.Float](ps []*ad.Param[T]) int {
	n := 0
	for _, p := range ps {
		n += p.W.Len()
	}
	return n
}

func TestShowTellRejects(t *testing.T) {
	c := tinyShowTellConfig()
	c.Arch.(*ShowTellConfig).Hidden = 0
	if _, err := NewShowTell[float64](c, nil); err == nil || !strings.Contains(err.Error(), "hidden_size") {
		t.Errorf("hidden 0: %v", err)
	}
	m := tinyShowTell(t, 1)
	tp := ad.NewTape[float64](false)
	if _, err := m.Start(tp, Input[float64]{Tokens: [][]int{{1}}}); err == nil {
		t.Error("token input accepted")
	}
	if _, err := m.Start(tp, Input[float64]{X: tp.Const(ad.New[float64](1, 7))}); err == nil {
		t.Error("input of the wrong size accepted")
	}
}

// TestGateSaturation holds the measurement to the scalar loop's gates, for
// the Show-and-Tell model and the LSTM captioner, and checks the eos margin
// is the eos step's top-2 gap.
func TestGateSaturation(t *testing.T) {
	ctx := context.Background()
	m := tinyShowTell(t, 2)
	rng := rand.New(rand.NewPCG(2, 2))
	const n = 30
	x := randInput(rng, n*size(m))
	const thr = 1.5
	paths, err := GateSaturation(ctx, m, Batch[float64]{X: x}, 0, thr)
	if err != nil {
		t.Fatal(err)
	}
	some := 0.0
	for i, p := range paths {
		toks, stopped, gates := naiveShowTell(m, x[i*size(m):(i+1)*size(m)], m.Cfg.MaxSteps)
		if !slices.Equal(toks, p.Result.Tokens) || stopped != p.Result.Stopped || len(gates) != len(p.Saturated) {
			t.Fatalf("image %d: %d steps of gates for %v, naive %d for %v", i, len(p.Saturated), p.Result.Tokens, len(gates), toks)
		}
		H := m.Arch.Hidden
		for s, z := range gates {
			for g := range 4 {
				c := 0
				for _, v := range z[g*H : (g+1)*H] {
					if math.Abs(v) > thr {
						c++
					}
				}
				if want := float64(c) / float64(H); math.Abs(p.Saturated[s][g]-want) > 1e-12 {
					t.Fatalf("image %d step %d gate %s: %v saturated, naive %v", i, s, GateNames[g], p.Saturated[s][g], want)
				}
				some += p.Saturated[s][g]
			}
		}
		if stopped && !(p.EOSMargin >= 0 && p.EOSLogProb <= 0 && p.EOSLogProb > math.Log(1.0/float64(m.Vocab()))-1e-12) {
			t.Fatalf("image %d: eos margin %v, log-probability %v", i, p.EOSMargin, p.EOSLogProb)
		}
		if !stopped && !math.IsNaN(p.EOSMargin) {
			t.Fatalf("image %d did not stop but has eos margin %v", i, p.EOSMargin)
		}
	}
	if some == 0 {
		t.Fatal("no gate saturated: the test compares only zeros")
	}
	s := SummariseGates(paths)
	if s.Paths != n || len(s.ByStep) == 0 || s.StepPaths[0] != n || !(s.Gate[0] > 0) || !(s.EOSMarginMin <= s.EOSMarginMedian) {
		t.Fatalf("summary %+v", s)
	}

	// The LSTM captioner: StepGates computes Step's logits exactly.
	cm := tinyModel(t, CellLSTM, 4)
	if _, err := GateSaturation(ctx, cm, Batch[float64]{X: x[:3*size(cm)]}, 0, thr); err != nil {
		t.Fatal(err)
	}
	tp := ad.NewTape[float64](false)
	st, err := cm.Start(tp, Input[float64]{X: tp.Const(ad.FromSlice(x[:2*size(cm)], 2, size(cm)))})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cm.Step(tp, st, nil)
	b, _, gates := cm.StepGates(tp, st, nil)
	if !slices.Equal(a.Value.Data, b.Value.Data) || gates == nil {
		t.Fatal("the captioner's StepGates differs from Step")
	}
	if _, err := GateSaturation(ctx, tinyModel(t, CellReLU, 4), Batch[float64]{X: x[:size(cm)]}, 0, thr); err == nil || !strings.Contains(err.Error(), "no LSTM gates") {
		t.Fatalf("ReLU captioner: %v", err)
	}
}
