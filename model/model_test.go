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
	"syscall"
	"testing"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/safetensors"
)

var cells = []string{CellReLU, CellLSTM}

// tinyConfig is small enough for finite differences over every weight.
func tinyConfig(cell string) *Config {
	c := DefaultCaptionerConfig()
	a := c.Arch.(*CaptionerConfig)
	a.Input = InputConfig{Channels: 1, Height: 6, Width: 8, Min: -1, Max: 1}
	a.Conv = []ConvConfig{{2, 3, 2, 1}, {3, 3, 1, 1}}
	a.FCHidden, a.Embedding, a.Hidden, a.Cell = 5, 3, 4, cell
	c.Vocab = []string{"a", "b", "c", "<eos>"}
	c.EOS = 3
	c.MaxSteps = 6
	return &c
}

func tinyModel(t testing.TB, cell string, seed uint64) *Captioner[float64] {
	t.Helper()
	m, err := NewCaptioner[float64](tinyConfig(cell), rand.New(rand.NewPCG(seed, 1)))
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

func size(d interface{ Input() InputSpec }) int { return d.Input().Size() }

// checkFD compares the analytic gradient grad of loss with respect to vals
// with central finite differences, value by value.
func checkFD(t *testing.T, name string, vals, grad []float64, loss func() float64) {
	t.Helper()
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

// checkLossGradient checks the gradient of loss at the b-row input batch
// x, with respect to x and to every parameter of m, against central
// finite differences: the check every training loss gets.
func checkLossGradient(t *testing.T, m interface {
	Params() []*ad.Param[float64]
	Input() InputSpec
}, x []float64, b int, loss func(*ad.Tape[float64], Input[float64]) (*ad.Node[float64], error)) {
	t.Helper()
	value := func() float64 {
		tp := ad.NewTape[float64](false)
		l, err := loss(tp, Input[float64]{X: tp.Const(ad.FromSlice(x, b, size(m)))})
		if err != nil {
			t.Fatal(err)
		}
		return l.Value.Data[0]
	}
	tp := ad.NewTrainingTape[float64]()
	xn := tp.Var(ad.FromSlice(x, b, size(m)))
	l, err := loss(tp, Input[float64]{X: xn})
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Backward(l); err != nil {
		t.Fatal(err)
	}
	checkFD(t, "input", x, xn.Grad.Data, value)
	for _, p := range m.Params() {
		checkFD(t, p.Name, p.W.Data, p.G.Data, value)
	}
}

// TestLossGradient checks the teacher-forced loss gradient with respect to
// the input and every parameter against central finite differences, for
// both cells.
func TestLossGradient(t *testing.T) {
	for _, cell := range cells {
		t.Run(cell, func(t *testing.T) {
			m := tinyModel(t, cell, 3)
			rng := rand.New(rand.NewPCG(4, 4))
			const b = 3
			x := randInput(rng, b*size(m))
			labels := [][]int{{0, 2}, {1}, {}}
			checkLossGradient(t, m, x, b, func(tp *ad.Tape[float64], in Input[float64]) (*ad.Node[float64], error) {
				return TeacherForcedLoss[float64](tp, m, in, labels)
			})
		})
	}
}

// naiveDecode is a one-image reference decoder written with plain loops,
// guarding the batched tape path: the encoder runs on the tape (its layers
// have their own loop tests), the decoder in scalar code.
func naiveDecode(m *Captioner[float64], x []float64, steps int) ([]int, bool) {
	tp := ad.NewTape[float64](false)
	s, err := m.Start(tp, Input[float64]{X: tp.Const(ad.FromSlice(x, 1, len(x)))})
	if err != nil {
		panic(err)
	}
	in := append([]float64(nil), s.(*captionerState[float64]).i0.Value.Data...)
	H := m.Arch.Hidden
	h, c := make([]float64, H), make([]float64, H)
	affine := func(w, b []float64, v []float64, rows int) []float64 {
		out := make([]float64, rows)
		for r := 0; r < rows; r++ {
			s := b[r]
			for k, vk := range v {
				s += w[r*len(v)+k] * vk
			}
			out[r] = s
		}
		return out
	}
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	var toks []int
	for t := 0; t < steps; t++ {
		if m.LSTM != nil {
			l := m.LSTM
			a := affine(l.Wih.W.Data, l.Bih.W.Data, in, 4*H)
			b := affine(l.Whh.W.Data, l.Bhh.W.Data, h, 4*H)
			for k := 0; k < H; k++ {
				i, f, g, o := sig(a[k]+b[k]), sig(a[H+k]+b[H+k]), math.Tanh(a[2*H+k]+b[2*H+k]), sig(a[3*H+k]+b[3*H+k])
				c[k] = f*c[k] + i*g
				h[k] = o * math.Tanh(c[k])
			}
		} else {
			a := affine(m.RNN.Wih.W.Data, m.RNN.Bih.W.Data, in, H)
			b := affine(m.RNN.Whh.W.Data, m.RNN.Bhh.W.Data, h, H)
			for k := range h {
				h[k] = math.Max(0, a[k]+b[k])
			}
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
		e := m.Arch.Embedding
		in = append(in[:0], m.Emb.W.W.Data[y*e:(y+1)*e]...)
	}
	return toks, false
}

func TestDecodeMatchesNaiveAndFloat32(t *testing.T) {
	ctx := context.Background()
	for _, cell := range cells {
		t.Run(cell, func(t *testing.T) {
			lengths := map[int]int{}
			for seed := uint64(1); seed <= 20; seed++ {
				m := tinyModel(t, cell, seed)
				m32, err := Cast[float32, float64](m)
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(seed, 9))
				const n = 50
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
					toks, stopped := naiveDecode(m, x[i*size(m):(i+1)*size(m)], m.Cfg.MaxSteps)
					if stopped != r.Stopped || !slices.Equal(toks, r.Tokens) {
						t.Fatalf("seed %d image %d: batched %v/%v, naive %v/%v", seed, i, r.Tokens, r.Stopped, toks, stopped)
					}
					if !r.Tie() && r.MinRelMargin > 1e-4 && (res32[i].Stopped != r.Stopped || !slices.Equal(res32[i].Tokens, r.Tokens)) {
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
		})
	}
}

// TestGreedyOptions: OnStep sees every step with the rows decoding at it
// (a row's eos step included), and NoEOS follows the best non-eos token.
func TestGreedyOptions(t *testing.T) {
	m := tinyModel(t, CellReLU, 11)
	rng := rand.New(rand.NewPCG(12, 1))
	const n = 30
	x := randInput(rng, n*size(m))
	tp := ad.NewTape[float64](false)
	var liveCount []int
	res, err := Greedy[float64](tp, m, Input[float64]{X: tp.Const(ad.FromSlice(x, n, size(m)))}, GreedyOptions[float64]{
		OnStep: func(step int, logits *ad.Node[float64], rows []int, live []bool) {
			if logits.Value.Shape[0] != len(rows) || len(live) != len(rows) || logits.Value.Shape[1] != m.Vocab() {
				t.Fatalf("step %d logits %v for %d rows", step, logits.Value.Shape, len(rows))
			}
			k := 0
			for _, l := range live {
				if l {
					k++
				}
			}
			liveCount = append(liveCount, k)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for step, k := range liveCount {
		want := 0
		for _, r := range res {
			if !r.Stopped || len(r.Tokens) >= step { // still running, or emits eos at this step or later
				want++
			}
		}
		if k != want {
			t.Fatalf("step %d: %d live rows, results imply %d", step, k, want)
		}
	}
	tp = ad.NewTape[float64](false)
	noeos, err := Greedy[float64](tp, m, Input[float64]{X: tp.Const(ad.FromSlice(x, n, size(m)))}, GreedyOptions[float64]{NoEOS: true, MaxSteps: 5})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range noeos {
		if r.Stopped || len(r.Tokens) != 5 || slices.Contains(r.Tokens, m.EOS()) {
			t.Fatalf("row %d: NoEOS gave %v stopped %v", i, r.Tokens, r.Stopped)
		}
		// Where greedy emitted no eos the paths agree.
		g := res[i].Tokens
		for k := 0; k < min(len(g), 5); k++ {
			if g[k] != r.Tokens[k] {
				t.Fatalf("row %d: NoEOS path %v leaves the greedy path %v before any eos", i, r.Tokens, g)
			}
		}
	}
}

// TestGreedyPrefix: a forced continuation feeds the prefix instead of the
// argmax and flags the rows where that changed the path; forcing the greedy
// path itself changes nothing.
func TestGreedyPrefix(t *testing.T) {
	m := tinyModel(t, CellReLU, 11)
	rng := rand.New(rand.NewPCG(12, 2))
	const n = 20
	x := randInput(rng, n*size(m))
	decode := func(prefix [][]int) []Result {
		tp := ad.NewTape[float64](false)
		res, err := Greedy[float64](tp, m, Input[float64]{X: tp.Const(ad.FromSlice(x, n, size(m)))}, GreedyOptions[float64]{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	plain := decode(nil)
	same, other := make([][]int, n), make([][]int, n)
	for i, r := range plain {
		if len(r.Tokens) > 0 {
			same[i] = r.Tokens[:1]
		}
		other[i] = []int{(1 + firstOr(r.Tokens, -1)) % m.EOS()} // never eos, never the greedy first token
	}
	for i, r := range decode(same) {
		if r.Diverged || !slices.Equal(r.Tokens, plain[i].Tokens) || r.Stopped != plain[i].Stopped {
			t.Fatalf("row %d: forcing its own path gave %v (diverged %v), greedy %v", i, r.Tokens, r.Diverged, plain[i].Tokens)
		}
	}
	diverged := 0
	for i, r := range decode(other) {
		if len(r.Tokens) == 0 || r.Tokens[0] != other[i][0] {
			t.Fatalf("row %d: forced %v, decoded %v", i, other[i], r.Tokens)
		}
		if r.Diverged {
			diverged++
		}
	}
	if diverged == 0 {
		t.Fatal("forcing another first token diverged nowhere")
	}
}

func firstOr(s []int, v int) int {
	if len(s) > 0 {
		return s[0]
	}
	return v
}

// TestStateRows: decoding a subset of rows from a gathered state gives the
// rows' own outputs, for both cells' states.
func TestStateRows(t *testing.T) {
	for _, cell := range cells {
		m := tinyModel(t, cell, 13)
		rng := rand.New(rand.NewPCG(14, 1))
		const n = 6
		x := randInput(rng, n*size(m))
		full, err := Decode[float64](context.Background(), m, Batch[float64]{X: x}, 0)
		if err != nil {
			t.Fatal(err)
		}
		idx := []int{4, 1, 1}
		tp := ad.NewTape[float64](false)
		s, err := m.Start(tp, Input[float64]{X: tp.Const(ad.FromSlice(x, n, size(m)))})
		if err != nil {
			t.Fatal(err)
		}
		s = s.Rows(tp, idx)
		var prev []int
		for step := 0; step < 3; step++ {
			var logits *ad.Node[float64]
			logits, s = m.Step(tp, s, prev)
			prev = make([]int, len(idx))
			for k, r := range idx {
				y, _, _ := Argmax(logits.Value.Data[k*m.Vocab() : (k+1)*m.Vocab()])
				prev[k] = y
				switch {
				case step < len(full[r].Tokens) && y != full[r].Tokens[step]:
					t.Fatalf("%s row %d step %d: %d, full batch emitted %d", cell, r, step, y, full[r].Tokens[step])
				case step == len(full[r].Tokens) && full[r].Stopped && y != m.EOS():
					t.Fatalf("%s row %d step %d: %d, full batch emitted eos", cell, r, step, y)
				}
				if y == m.EOS() {
					prev[k] = 0
				}
			}
		}
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
	m := tinyModel(t, CellReLU, 5)
	// Make eos unreachable: its bias far below every other token.
	m.Out.B.W.Data[m.Cfg.EOS] = -1e6
	x := make([]float64, size(m))
	res, err := Decode[float64](context.Background(), m, Batch[float64]{X: x}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Stopped || len(res[0].Tokens) != 4 {
		t.Fatalf("got stopped=%v tokens=%v, want unstopped with 4 tokens", res[0].Stopped, res[0].Tokens)
	}
	// And always-eos gives length 0.
	m.Out.B.W.Data[m.Cfg.EOS] = 1e6
	res, _ = Decode[float64](context.Background(), m, Batch[float64]{X: x}, 4)
	if !res[0].Stopped || len(res[0].Tokens) != 0 {
		t.Fatalf("length %d stopped %v, want 0 true", len(res[0].Tokens), res[0].Stopped)
	}
	if _, err := Decode[float64](context.Background(), m, Batch[float64]{X: x[:3]}, 4); err == nil {
		t.Fatal("short input accepted")
	}
	if _, err := Decode[float64](context.Background(), m, Batch[float64]{Tokens: [][]int{{1}}}, 4); err == nil {
		t.Fatal("token input accepted by an image model")
	}
	if _, err := Decode[float64](context.Background(), m, Batch[float64]{X: x}, MaxStepCap+1); err == nil {
		t.Fatal("step cap above MaxStepCap accepted")
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	for _, cell := range cells {
		m := tinyModel(t, cell, 7)
		dir := t.TempDir()
		if err := Save[float64](dir, m); err != nil {
			t.Fatal(err)
		}
		got, err := Load[float64](dir)
		if err != nil {
			t.Fatal(err)
		}
		if got.Config().Arch.(*CaptionerConfig).Cell != cell {
			t.Fatalf("cell %q came back as %q", cell, got.Config().Arch.(*CaptionerConfig).Cell)
		}
		for i, p := range got.Params() {
			want := m.Params()[i]
			if p.Name != want.Name {
				t.Fatalf("parameter %d is %s, want %s", i, p.Name, want.Name)
			}
			for j, v := range p.W.Data {
				if v != float64(float32(want.W.Data[j])) {
					t.Fatalf("%s[%d] = %v, want %v", p.Name, j, v, want.W.Data[j])
				}
			}
		}
	}
}

// TestShippedModelsLoadUnchanged: the model directories in the repository
// load, and their config.json re-encodes to the same JSON value.
func TestShippedModelsLoadUnchanged(t *testing.T) {
	for _, dir := range shippedCaptioners() {
		d, err := Load[float32](dir)
		if err != nil {
			t.Fatal(err)
		}
		orig, err := os.ReadFile(filepath.Join(dir, ConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		again, err := json.Marshal(d.Config())
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(orig, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(again, &b); err != nil {
			t.Fatal(err)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("%s: config.json does not survive a round trip:\n%s\n%s", dir, ja, jb)
		}
		if d.Input().Size() != 28*112 || d.Vocab() != 11 {
			t.Fatalf("%s: input %v vocab %d", dir, d.Input(), d.Vocab())
		}
	}
}

func TestDigest(t *testing.T) {
	m := tinyModel(t, CellReLU, 9)
	dir := t.TempDir()
	if err := Save[float64](dir, m); err != nil {
		t.Fatal(err)
	}
	a, err := Digest(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Digest(dir + "/./")
	if err != nil || a != b {
		t.Fatalf("one model, two digests: %s %s (%v)", a, b, err)
	}
	m.Out.B.W.Data[0] += 1
	if err := Save[float64](dir, m); err != nil {
		t.Fatal(err)
	}
	if c, _ := Digest(dir); c == a {
		t.Fatal("new weights at the same path kept the digest")
	}
}

func TestLoadRejectsBadModels(t *testing.T) {
	m := tinyModel(t, CellReLU, 8)
	writeConfig := func(s string) func(string) error {
		return func(dir string) error { return os.WriteFile(filepath.Join(dir, ConfigFile), []byte(s), 0o644) }
	}
	cases := []struct {
		name   string
		mutate func(dir string) error
		want   string
	}{
		{"missing dir", func(dir string) error { return os.RemoveAll(dir) }, "config.json"},
		{"bad json", writeConfig("{"), "malformed config"},
		{"unknown field", func(dir string) error {
			return rewriteConfigJSON(dir, func(o map[string]any) { o["bogus"] = 1 })
		}, "bogus"},
		{"unknown architecture", writeConfig(`{"architecture":"nope"}`), `architecture "nope" is not supported`},
		{"duplicate key", func(dir string) error {
			b, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
			s := strings.Replace(string(b), `"eos_id": 3`, `"eos_id": 3, "eos_id": 2`, 1)
			return os.WriteFile(filepath.Join(dir, ConfigFile), []byte(s), 0o644)
		}, `duplicate key "eos_id"`},
		{"nested duplicate key", func(dir string) error {
			b, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
			s := strings.Replace(string(b), `"min": -1`, `"min": -1, "min": 0`, 1)
			return os.WriteFile(filepath.Join(dir, ConfigFile), []byte(s), 0o644)
		}, `duplicate key "min" in object $.input`},
		{"bad eos", func(dir string) error { return rewriteConfig(dir, func(c *Config) { c.EOS = 99 }) }, "eos_id 99"},
		{"float64 dtype", func(dir string) error { return rewriteConfig(dir, func(c *Config) { c.DType = "float64" }) }, `dtype "float64"`},
		{"huge step cap", func(dir string) error { return rewriteConfig(dir, func(c *Config) { c.MaxSteps = 1e6 }) }, "max_steps"},
		{"bad cell", func(dir string) error {
			return rewriteConfig(dir, func(c *Config) { c.Arch.(*CaptionerConfig).Cell = "peephole" })
		}, `cell "peephole"`},
		{"shape mismatch", func(dir string) error {
			return rewriteConfig(dir, func(c *Config) { c.Arch.(*CaptionerConfig).Hidden = 7 })
		}, "has shape"},
		{"lstm config on rnn weights", func(dir string) error {
			return rewriteConfig(dir, func(c *Config) { c.Arch.(*CaptionerConfig).Cell = CellLSTM })
		}, "has shape"},
		{"config is a FIFO", func(dir string) error {
			p := filepath.Join(dir, ConfigFile)
			os.Remove(p)
			return syscall.Mkfifo(p, 0o644)
		}, "not a regular file"},
		{"config is /dev/zero", func(dir string) error {
			p := filepath.Join(dir, ConfigFile)
			os.Remove(p)
			return os.Symlink("/dev/zero", p)
		}, "not a regular file"},
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
		{"float64 weights", func(dir string) error {
			return rewriteWeights(dir, func(f *safetensors.File) {
				w, _ := f.Tensors[0].Float64s()
				f.Tensors[0] = safetensors.F64(f.Tensors[0].Name, f.Tensors[0].Shape, w)
			})
		}, "is F64"},
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
			if err := Save[float64](dir, m); err != nil {
				t.Fatal(err)
			}
			// Files written by hand or exported elsewhere carry no
			// checksums (TestChecksums has those).
			if err := os.Remove(filepath.Join(dir, SumsFile)); err != nil {
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

// TestFloat16WeightsLoadExactly: F16 weights widen to float32 exactly, so
// the float32 and float64 models are one network.
func TestFloat16WeightsLoadExactly(t *testing.T) {
	m := tinyModel(t, CellReLU, 8)
	dir := t.TempDir()
	if err := Save[float64](dir, m); err != nil {
		t.Fatal(err)
	}
	// Half-precision values: multiples of 1/64 in a small range, as
	// exported from PyTorch (without checksums).
	os.Remove(filepath.Join(dir, SumsFile))
	if err := rewriteWeights(dir, func(f *safetensors.File) {
		w, _ := f.Tensors[0].Float32s()
		h := make([]uint16, len(w))
		for i := range w {
			v := float32(math.Round(float64(w[i])*64) / 64)
			w[i] = v
			h[i] = f16(v)
		}
		f.Tensors[0] = safetensors.Tensor{Name: f.Tensors[0].Name, DType: safetensors.Float16, Shape: f.Tensors[0].Shape, Data: le16(h)}
	}); err != nil {
		t.Fatal(err)
	}
	d32, err := Load[float32](dir)
	if err != nil {
		t.Fatal(err)
	}
	d64, err := Load[float64](dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range d32.Params() {
		for j, v := range p.W.Data {
			if float64(v) != d64.Params()[i].W.Data[j] {
				t.Fatalf("%s[%d]: float32 %v, float64 %v", p.Name, j, v, d64.Params()[i].W.Data[j])
			}
		}
	}
}

// f16 encodes a float32 that half precision represents exactly (normal
// numbers only, as the test uses).
func f16(v float32) uint16 {
	if v == 0 {
		return 0
	}
	b := math.Float32bits(v)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	return sign | uint16(exp)<<10 | uint16(b>>13&0x3ff)
}

func le16(h []uint16) []byte {
	out := make([]byte, 2*len(h))
	for i, v := range h {
		out[2*i], out[2*i+1] = byte(v), byte(v>>8)
	}
	return out
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

func rewriteConfigJSON(dir string, f func(map[string]any)) error {
	p := filepath.Join(dir, ConfigFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	var o map[string]any
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	f(o)
	if b, err = json.Marshal(o); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
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

// FuzzParseConfig: any document either parses into a valid config that
// re-encodes to a document parsing to the same config, or is refused with
// a one-line error; never a panic.
func FuzzParseConfig(f *testing.F) {
	for _, dir := range shippedCaptioners() {
		if b, err := os.ReadFile(filepath.Join(dir, ConfigFile)); err == nil {
			f.Add(b)
		}
	}
	lstm, _ := json.Marshal(tinyConfig(CellLSTM))
	f.Add(lstm)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"architecture":"cnn-rnn-captioner","conv":[{"out_channels":-1}]}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{"architecture":"cnn-rnn-captioner","vocab":["a","b"],"eos_id":1,"max_steps":3,"dtype":"float32","input":{"channels":1,"height":2,"width":2,"min":0,"max":1},"conv":[],"fc_hidden":1,"embedding_size":1,"hidden_size":1,"cell":"rnn_relu","cell":"lstm"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		// Anything accepted must build a model without panicking, unless it
		// is too large to allocate in a test.
		if c.Arch.ParamCount(c) < 1<<22 {
			if _, err := New[float32](c, nil); err != nil {
				t.Fatalf("validated config failed to build: %v", err)
			}
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("valid config does not encode: %v", err)
		}
		c2, err := ParseConfig(again)
		if err != nil {
			t.Fatalf("re-encoded config refused: %v\n%s", err, again)
		}
		j1, _ := json.Marshal(c)
		j2, _ := json.Marshal(c2)
		if string(j1) != string(j2) {
			t.Fatalf("round trip changed the config:\n%s\n%s", j1, j2)
		}
	})
}

func TestCost(t *testing.T) {
	cfg := DefaultCaptionerConfig()
	m, err := NewCaptioner[float32](&cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Cost()
	// conv1: 14·56 outputs × 8 channels × 9 MACs; conv2: 7·28 × 16 × 72;
	// fc1 3136·128; fc2 128·32; 2 FLOPs per MAC.
	if want := 2.0 * (14*56*8*9 + 7*28*16*72 + 3136*128 + 128*32); c.Start != want {
		t.Fatalf("encoder FLOPs %v, want %v", c.Start, want)
	}
	if c.FirstLayer != 2.0*14*56*8*9 || c.Step != 2.0*(32*32+32*32+32*11) {
		t.Fatalf("counts %+v", c)
	}
	cfg.Arch.(*CaptionerConfig).Cell = CellLSTM
	l, _ := NewCaptioner[float32](&cfg, nil)
	if got := l.Cost().Step; got != 2.0*(4*(32*32+32*32)+32*11) {
		t.Fatalf("LSTM step FLOPs %v", got)
	}
}
