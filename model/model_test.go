package model

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/safetensors"
)

// tinyConfig is small enough for finite differences over every weight.
func tinyConfig() Config {
	c := DefaultCaptionerConfig()
	c.Input = InputConfig{Channels: 1, Height: 6, Width: 8, Min: -1, Max: 1}
	c.Conv = []ConvConfig{{2, 3, 2, 1}, {3, 3, 1, 1}}
	c.FCHidden, c.Embedding, c.Hidden = 5, 3, 4
	c.Vocab = []string{"a", "b", "c", "<eos>"}
	c.EOS = 3
	c.MaxSteps = 6
	return c
}

func tinyModel(t testing.TB, seed uint64) *Captioner[float64] {
	t.Helper()
	m, err := NewCaptioner[float64](tinyConfig(), rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func randInput(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	return x
}

// TestLossGradient checks the teacher-forced loss gradient with respect to
// the input and every parameter against central finite differences.
func TestLossGradient(t *testing.T) {
	m := tinyModel(t, 3)
	rng := rand.New(rand.NewPCG(4, 4))
	const b = 3
	x := randInput(rng, b*m.Cfg.InputSize())
	labels := [][]int{{0, 2}, {1}, {}}
	loss := func() float64 {
		tp := ad.NewTape[float64](false)
		return m.Loss(tp, tp.Const(ad.FromSlice(x, b, m.Cfg.InputSize())), labels).Value.Data[0]
	}
	tp := ad.NewTrainingTape[float64]()
	xn := tp.Var(ad.FromSlice(x, b, m.Cfg.InputSize()))
	if err := tp.Backward(m.Loss(tp, xn, labels)); err != nil {
		t.Fatal(err)
	}
	check := func(name string, vals, grad []float64) {
		const h = 1e-6
		for i := range vals {
			orig := vals[i]
			vals[i] = orig + h
			fp := loss()
			vals[i] = orig - h
			fm := loss()
			vals[i] = orig
			num := (fp - fm) / (2 * h)
			if math.Abs(grad[i]-num) > 1e-5*math.Max(1, math.Abs(num)) {
				t.Fatalf("%s[%d]: analytic %.9g, finite difference %.9g", name, i, grad[i], num)
			}
		}
	}
	check("input", x, xn.Grad.Data)
	for _, p := range m.Params() {
		check(p.Name, p.W.Data, p.G.Data)
	}
}

// naiveDecode is a one-image reference decoder written with plain loops,
// guarding the batched tape path.
func naiveDecode(m *Captioner[float64], x []float64, steps int) ([]int, bool) {
	tp := ad.NewTape[float64](false)
	i0 := m.Encode(tp, tp.Const(ad.FromSlice(x, 1, len(x)))).Value.Data
	in := append([]float64(nil), i0...)
	h := make([]float64, m.Cfg.Hidden)
	var toks []int
	affine := func(w, b []float64, v []float64, rows int) []float64 {
		out := make([]float64, rows)
		cols := len(v)
		for r := 0; r < rows; r++ {
			s := b[r]
			for c := 0; c < cols; c++ {
				s += w[r*cols+c] * v[c]
			}
			out[r] = s
		}
		return out
	}
	for t := 0; t < steps; t++ {
		a := affine(m.Cell.Wih.W.Data, m.Cell.Bih.W.Data, in, m.Cfg.Hidden)
		bb := affine(m.Cell.Whh.W.Data, m.Cell.Bhh.W.Data, h, m.Cfg.Hidden)
		for k := range h {
			h[k] = math.Max(0, a[k]+bb[k])
		}
		o := affine(m.Out.W.W.Data, m.Out.B.W.Data, h, m.Vocab())
		y := 0
		for k, v := range o {
			if v > o[y] {
				y = k
			}
		}
		if y == m.Cfg.EOS {
			return toks, true
		}
		toks = append(toks, y)
		in = append(in[:0], m.Emb.W.W.Data[y*m.Cfg.Embedding:(y+1)*m.Cfg.Embedding]...)
	}
	return toks, false
}

func TestDecodeMatchesNaiveAndFloat32(t *testing.T) {
	ctx := context.Background()
	lengths := map[int]int{}
	for seed := uint64(1); seed <= 20; seed++ {
		m := tinyModel(t, seed)
		m32 := Cast[float32](m)
		rng := rand.New(rand.NewPCG(seed, 9))
		const n = 50
		x := randInput(rng, n*m.Cfg.InputSize())
		res, err := m.Decode(ctx, x, n, 0)
		if err != nil {
			t.Fatal(err)
		}
		x32 := make([]float32, len(x))
		for i, v := range x {
			x32[i] = float32(v)
		}
		res32, err := m32.Decode(ctx, x32, n, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			toks, stopped := naiveDecode(m, x[i*m.Cfg.InputSize():(i+1)*m.Cfg.InputSize()], m.Cfg.MaxSteps)
			if stopped != r.Stopped || !slices.Equal(toks, r.Tokens) {
				t.Fatalf("seed %d image %d: batched %v/%v, naive %v/%v", seed, i, r.Tokens, r.Stopped, toks, stopped)
			}
			if r.MinRelMargin > 1e-4 && (res32[i].Stopped != r.Stopped || !slices.Equal(res32[i].Tokens, r.Tokens)) {
				t.Fatalf("seed %d image %d: float32 %v, float64 %v (margin %g)", seed, i, res32[i].Tokens, r.Tokens, r.MinRelMargin)
			}
			if r.Stopped {
				lengths[len(r.Tokens)]++
			} else {
				lengths[-1]++
			}
		}
	}
	if len(lengths) < 2 {
		t.Fatalf("random tiny models produced one kind of output only: %v", lengths)
	}
}

func TestArgmaxTiesLowestIndex(t *testing.T) {
	for _, c := range []struct {
		row  []float64
		want int
		gap  float64
	}{
		{[]float64{1, 3, 3, 2}, 1, 0},
		{[]float64{5, 1}, 0, 4},
		{[]float64{-2, -1, -1.5}, 1, 0.5},
		{[]float64{7}, 0, math.Inf(1)},
	} {
		got, gap, _ := Argmax(c.row)
		if got != c.want || gap != c.gap {
			t.Errorf("Argmax(%v) = %d gap %v, want %d gap %v", c.row, got, gap, c.want, c.gap)
		}
	}
}

func TestDecodeStepCap(t *testing.T) {
	m := tinyModel(t, 5)
	// Make eos unreachable: its bias far below every other token.
	m.Out.B.W.Data[m.Cfg.EOS] = -1e6
	x := make([]float64, m.Cfg.InputSize())
	res, err := m.Decode(context.Background(), x, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Stopped || len(res[0].Tokens) != 4 {
		t.Fatalf("got stopped=%v tokens=%v, want unstopped with 4 tokens", res[0].Stopped, res[0].Tokens)
	}
	// And always-eos gives length 0.
	m.Out.B.W.Data[m.Cfg.EOS] = 1e6
	res, _ = m.Decode(context.Background(), x, 1, 4)
	if l, ok := res[0].Length(); !ok || l != 0 {
		t.Fatalf("length %d stopped %v, want 0 true", l, ok)
	}
	if _, err := m.Decode(context.Background(), x[:3], 1, 4); err == nil {
		t.Fatal("short input accepted")
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	m := tinyModel(t, 7)
	dir := t.TempDir()
	if err := Save(dir, m); err != nil {
		t.Fatal(err)
	}
	got, err := Load[float64](dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range got.Params() {
		want := m.Params()[i]
		for j, v := range p.W.Data {
			if v != float64(float32(want.W.Data[j])) {
				t.Fatalf("%s[%d] = %v, want %v", p.Name, j, v, want.W.Data[j])
			}
		}
	}
}

func TestLoadRejectsBadModels(t *testing.T) {
	m := tinyModel(t, 8)
	cases := []struct {
		name   string
		mutate func(dir string) error
		want   string
	}{
		{"missing dir", func(dir string) error { return os.RemoveAll(dir) }, "config.json"},
		{"bad json", func(dir string) error { return os.WriteFile(filepath.Join(dir, ConfigFile), []byte("{"), 0o644) }, "malformed config"},
		{"unknown field", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"architecture":"cnn-rnn-captioner","bogus":1}`), 0o644)
		}, "bogus"},
		{"bad eos", func(dir string) error { return rewriteConfig(dir, func(c *Config) { c.EOS = 99 }) }, "eos_id 99"},
		{"shape mismatch", func(dir string) error { return rewriteConfig(dir, func(c *Config) { c.Hidden = 7 }) }, "has shape"},
		{"missing weights", func(dir string) error { return os.Remove(filepath.Join(dir, WeightsFile)) }, "model.safetensors"},
		{"truncated weights", func(dir string) error {
			p := filepath.Join(dir, WeightsFile)
			b, _ := os.ReadFile(p)
			return os.WriteFile(p, b[:len(b)-10], 0o644)
		}, "model.safetensors"},
		{"nan weight", func(dir string) error {
			return rewriteWeights(dir, func(f *safetensors.File) {
				w, _ := f.Tensors[0].Float32s()
				w[1] = float32(math.NaN())
				f.Tensors[0] = safetensors.F32(f.Tensors[0].Name, f.Tensors[0].Shape, w)
			})
		}, "NaN"},
		{"missing tensor", func(dir string) error {
			return rewriteWeights(dir, func(f *safetensors.File) { f.Tensors = f.Tensors[1:] })
		}, "missing tensor"},
		{"extra tensor", func(dir string) error {
			return rewriteWeights(dir, func(f *safetensors.File) {
				f.Tensors = append(f.Tensors, safetensors.F32("extra", []int{1}, []float32{1}))
			})
		}, "unexpected tensor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := Save(dir, m); err != nil {
				t.Fatal(err)
			}
			if err := c.mutate(dir); err != nil {
				t.Fatal(err)
			}
			_, err := Load[float32](dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
		})
	}
}

func rewriteConfig(dir string, f func(*Config)) error {
	c, err := ReadConfig(dir)
	if err != nil {
		return err
	}
	f(c)
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ConfigFile), b, 0o644)
}

func rewriteWeights(dir string, f func(*safetensors.File)) error {
	p := filepath.Join(dir, WeightsFile)
	sf, err := safetensors.ReadFile(p)
	if err != nil {
		return err
	}
	f(sf)
	return safetensors.WriteFile(p, sf)
}
