package nmt

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/bleu"
)

// TestEvaluationText: an evaluation in lenspec eval's words, with and
// without examples; a cell's | and line break cannot break the table.
func TestEvaluationText(t *testing.T) {
	score := bleu.Score{BLEU: 12.5, Precisions: [4]float64{50, 25, 12.5, 6.25}, BP: 1, HypLen: 10, RefLen: 10}
	ev := Evaluation{Model: "m", Split: "test", Samples: 3, Score: score, BaselineBLEU: 4.25, MaxLen: 9, Unstopped: 1,
		MaxRatio: 2.5, OverRatio3: 0, MaxLenDev: 8, UnstoppedDev: 0, DevSamples: 5}
	head := "m on test (3 sentences): " + score.String() + "; dictionary baseline BLEU 4.25\n" +
		"test: longest greedy output 9 tokens, 1 unstopped, largest output/source ratio 2.50, 0 outputs over 3× their source\n" +
		"dev: longest greedy output 8 tokens, 0 of 5 unstopped\n"
	withEx := ev
	withEx.Examples = []Example{{Source: "a|b", Reference: "c\nd", Output: "e"}}
	for _, tc := range []struct {
		ev   Evaluation
		want string
	}{
		{ev, head},
		{withEx, head + "\n| # | source | reference | output |\n|---|---|---|---|\n| 1 | a\\|b | c d | e |\n"},
	} {
		var w strings.Builder
		tc.ev.WriteText(&w)
		if w.String() != tc.want {
			t.Errorf("text\n%s\nwant\n%s", w.String(), tc.want)
		}
	}
}

// TestSummary: a training run's summary keeps its JSON names and says
// the same in one line.
func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		r          Result
		text, json string
	}{
		{Result{Seconds: 61.4, FinalLoss: 1.5, BLEU: 20.125, BaselineBLEU: 3, MaxLenDev: 12, UnstoppedDev: 2},
			"trained out in 61s: test BLEU 20.12 (dictionary baseline 3.00); dev: longest output 12 tokens, 2 unstopped\n",
			`{"out":"out","seconds":61.4,"final_loss":1.5,"bleu":20.125,"baseline_bleu":3,"max_len_dev":12,"unstopped_dev":2}`},
		{Result{}, "trained out in 0s: test BLEU 0.00 (dictionary baseline 0.00); dev: longest output 0 tokens, 0 unstopped\n",
			`{"out":"out","seconds":0,"final_loss":0,"bleu":0,"baseline_bleu":0,"max_len_dev":0,"unstopped_dev":0}`},
	} {
		s := tc.r.Summary("out")
		var w strings.Builder
		s.WriteText(&w)
		js, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if w.String() != tc.text || string(js) != tc.json {
			t.Errorf("%q %s\nwant %q %s", w.String(), js, tc.text, tc.json)
		}
	}
}
