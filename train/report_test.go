package train

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/bleu"
)

// TestStatus: the progress line names what the options turn on.
func TestStatus(t *testing.T) {
	p := Progress{Epoch: 2, Epochs: 5, Loss: 0.25, Unstable: 7, Certified: 3}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "epoch 2/5 loss 0.250"},
		{Options{Stability: 0.1}, "epoch 2/5 loss 0.250 unstable 7"},
		{Options{IBP: 1, BatchSize: 64, IBPBound: "crown-ibp"}, "epoch 2/5 loss 0.250 certified 3/64 (crown-ibp)"},
	} {
		if got := tc.o.Status(p); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

// TestShowTellSummary: the summary's JSON keeps the keys (in the order
// a map printed them) and its line says the same.
func TestShowTellSummary(t *testing.T) {
	score := bleu.Score{BLEU: 30, Precisions: [4]float64{60, 40, 30, 20}, BP: 1, HypLen: 4, RefLen: 4}
	r := ShowTellResult{Seconds: 99.6, Eval: Eval{SequenceAccuracy: 0.5, MaxLen: 9, Unstopped: 1}, BLEU: score}
	s := r.Summary("dir")
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"out": "dir", "seconds": 99.6, "test_exact_caption_accuracy": 0.5, "test_bleu4": 30.0,
		"bleu": score.String(), "test_max_len": 9, "test_unstopped": 1}
	wantJS, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(js) != string(wantJS) {
		t.Errorf("JSON %s\nwant %s", js, wantJS)
	}
	var w strings.Builder
	s.WriteText(&w)
	if line := "trained dir in 100s (this run): test exact-caption accuracy 0.5000, " + score.String() + "; longest test output 9 (unstopped 1)\n"; w.String() != line {
		t.Errorf("%q\nwant %q", w.String(), line)
	}
}
