package experiment

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lenspec/lenspec/model"
)

// neverStoppingDir is tinyModelDir's model made to amplify its state and
// never emit eos: the recurrence doubles the ReLU state every step until
// it overflows (about 1,000 steps in float64, 130 in float32).
func neverStoppingDir(t *testing.T) string {
	t.Helper()
	dir := tinyModelDir(t, 6)
	d, err := model.Load[float64](dir)
	if err != nil {
		t.Fatal(err)
	}
	m := d.(*model.Captioner[float64])
	h := m.RNN.Hidden
	for i := range m.RNN.Whh.W.Data {
		m.RNN.Whh.W.Data[i] = 0
	}
	for i := 0; i < h; i++ {
		m.RNN.Whh.W.Data[i*h+i], m.RNN.Bhh.W.Data[i] = 2, 0.5
	}
	for i := range m.Out.W.W.Data {
		m.Out.W.W.Data[i] = 0
	}
	for j := 0; j < h; j++ {
		m.Out.W.W.Data[j] = 1 // token 0: the state's sum
	}
	for i := range m.Out.B.W.Data {
		m.Out.B.W.Data[i] = 0
	}
	m.Out.B.W.Data[m.Cfg.EOS] = -1
	if err := model.Save(dir, d); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestNonFiniteIsRecorded: at a step cap past the overflow of a
// never-stopping model, an attack records its outputs (their length when
// the logits overflowed, marked), for both methods, instead of failing to
// encode NaN margins.
func TestNonFiniteIsRecorded(t *testing.T) {
	m := loadModel(t, neverStoppingDir(t))
	const cap = 5000
	for _, method := range []string{MethodRandom, MethodPGD} {
		out := filepath.Join(t.TempDir(), "r.jsonl")
		c := pgdConfig(m, out, []int{0, 1}, 50)
		c.Method, c.Settings.MaxSteps, c.Settings.Budget = method, cap, 4
		if method == MethodRandom {
			c.Settings = c.Settings.Normalize(method)
		}
		if err := RunAttack(context.Background(), c, nil); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		recs := readAttacks(t, out)
		if len(recs) != 2 {
			t.Fatalf("%s: %d records, want 2", method, len(recs))
		}
		for i, r := range recs {
			if r.Error != "" || !r.OrigNonFinite || !r.NonFinite || r.Stopped || r.AdvLength == 0 || r.AdvLength >= cap ||
				r.OrigLength == 0 || r.OrigLength >= cap || len(r.AdvTokens) != r.AdvLength {
				t.Fatalf("%s sample %d: %+v, want non-finite original and output cut before the cap", method, i, r)
			}
		}
	}
}
