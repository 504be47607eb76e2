package experiment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/train"
)

// writeText is a report's text.
func writeText(write func(w *strings.Builder)) string {
	var w strings.Builder
	write(&w)
	return w.String()
}

// TestReportsText: each report of a command in the words it prints.
func TestReportsText(t *testing.T) {
	run := train.CaptionerRun{Options: train.Options{Seed: 3, Epochs: 4}, Out: "m"}
	res := train.CaptionerResult{Seconds: 12.4, Loss: 0.5, Test: train.Eval{SequenceAccuracy: 0.875}, Train: train.Eval{MaxLen: 6, Unstopped: 1}}
	probed := res
	probed.Probe = CertifyCount{Eps: 0.01, Images: 8, Robust: 5}
	caps := CaptionPreviewReport{Items: []CaptionPreview{{Caption: "a b", Preview: "p0.png"}, {Caption: "c", Output: "c d", Preview: "p1.png"}},
		LengthHistogram: []int{0, 3, 0, 1}, Split: "test", N: 4}
	for _, tc := range []struct {
		name, got, want string
	}{
		{"eval", writeText(func(w *strings.Builder) {
			(&CaptionerEval{Model: "m", Split: "test", Samples: 10, SequenceAccuracy: 0.9, MaxLenTrain: 7, UnstoppedTrain: 0, LengthHistogram: []int{0, 2, 8}}).WriteText(w)
		}), "m on test (10 samples): sequence accuracy 0.9000; longest output on train 7 (unstopped 0); lengths [0 2 8]\n"},
		{"merge", writeText(func(w *strings.Builder) {
			(&MergeReport{Kind: "verify", Records: 5, Duplicates: 2, Out: "o.jsonl"}).WriteText(w)
		}), "o.jsonl: 5 verify records written, 2 duplicates skipped\n"},
		{"merge best", writeText(func(w *strings.Builder) {
			(&MergeReport{Kind: "attack", Records: 5, Resolved: 2, Replaced: 1, Out: "o.jsonl"}).WriteText(w)
		}), "o.jsonl: 5 attack records written, 0 duplicates skipped, 2 conflicts resolved by --on-conflict best (1 records replaced)\n"},
		{"retry", writeText(func(w *strings.Builder) { RetryReport{{"a.jsonl", 0}, {"b.jsonl", 3}}.WriteText(w) }),
			"a.jsonl: nothing to retry\nb.jsonl: 3 records removed; rerun its command to redo them\n"},
		{"captioner", writeText(func(w *strings.Builder) { SummariseCaptioner(run, res).WriteText(w) }),
			"trained m in 12s: test sequence accuracy 0.8750, longest train output 6 (unstopped 1)\n"},
		{"captioner probed", writeText(func(w *strings.Builder) { SummariseCaptioner(run, probed).WriteText(w) }),
			"trained m in 12s: test sequence accuracy 0.8750, longest train output 6 (unstopped 1); verifier 5/8 at δ=0.01\n"},
		{"captions", writeText(func(w *strings.Builder) { caps.WriteText(w) }),
			"p0.png  \"a b\"\np1.png  \"c\"  model: \"c d\"\n"},
		{"captions histogram", writeText(func(w *strings.Builder) { caps.Histogram = true; caps.WriteText(w) }),
			"p0.png  \"a b\"\np1.png  \"c\"  model: \"c d\"\ncaption lengths of the test split (4 canvases):\n" +
				"  1 words      3  " + strings.Repeat("#", 60) + "\n  3 words      1  " + strings.Repeat("#", 20) + "\n"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q\nwant %q", tc.name, tc.got, tc.want)
		}
	}
	js, err := json.Marshal(SummariseCaptioner(run, probed))
	if err != nil || !strings.Contains(string(js), `"seed":3,"epochs":4,`) || !strings.Contains(string(js), `"probe":{"eps":0.01,`) {
		t.Errorf("captioner summary JSON %s: %v", js, err)
	}
	if js, _ := json.Marshal(caps); !strings.HasPrefix(string(js), `{"items":[`) || !strings.HasSuffix(string(js), `"length_histogram":[0,3,0,1]}`) {
		t.Errorf("captions JSON %s", js)
	}
}

// TestRetryFiles: each file's count, in order; a file that cannot be
// read stops it.
func TestRetryFiles(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := RetryFiles([]string{empty, empty}, true)
	if err != nil || len(rep) != 2 || rep[0] != (Retried{empty, 0}) {
		t.Fatalf("%+v %v", rep, err)
	}
	if _, err := RetryFiles([]string{empty, filepath.Join(dir, "missing.jsonl")}, false); err == nil {
		t.Fatal("a missing file retried")
	}
}
