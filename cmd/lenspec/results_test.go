package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/experiment"
)

// writeAttacks writes attack records of a PGD run as a results file.
func writeAttacks(t *testing.T, path string, recs ...experiment.AttackRecord) string {
	t.Helper()
	var b bytes.Buffer
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// pgdRecord is sample i's PGD record at δ 0.1, its output n tokens long.
func pgdRecord(digest string, i, n int) experiment.AttackRecord {
	return experiment.AttackRecord{SchemaVersion: experiment.SchemaVersion, Model: "m", ModelSHA256: digest,
		Data: experiment.DataRef{Name: "multimnist", Split: "test", Seed: 1}, Sample: i, Eps: 0.1, Method: "pgd",
		Settings:    experiment.AttackSettings{MaxLen: -1, MaxSteps: 20, Budget: 30, Seed: 1, Loss: "margin"},
		AttackImage: &experiment.AttackImage{Label: []int{1}, OrigTokens: []int{1}, AdvTokens: make([]int, n)},
		K:           1, OrigLength: 1, AdvLength: n,
		Stopped: true, Success: n > 1, MinRelMargin: 0.5, Evals: 30, Seconds: 1}
}

// TestResultsMergeConflicts: two files holding one unit with different
// results are refused (exit 1) naming the unit and both files, whatever
// their order, instead of keeping whichever came first; --on-conflict best
// keeps the longer output in either order.
func TestResultsMergeConflicts(t *testing.T) {
	dir := t.TempDir()
	a := writeAttacks(t, filepath.Join(dir, "a.jsonl"), pgdRecord("aaaa", 1, 2), pgdRecord("aaaa", 2, 3))
	b := writeAttacks(t, filepath.Join(dir, "b.jsonl"), pgdRecord("aaaa", 2, 5))
	for _, order := range [][]string{{a, b}, {b, a}} {
		out := filepath.Join(t.TempDir(), "m.jsonl")
		code, _, stderr := runCLI(t, append([]string{"results", "merge", "--out", out}, order...)...)
		if code != 1 || !strings.Contains(stderr, "sample 2 at δ 0.1 (pgd)") || !strings.Contains(stderr, a) || !strings.Contains(stderr, b) ||
			strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Fatalf("merge %v: exit %d: %s", order, code, stderr)
		}
		code, _, stderr = runCLI(t, append([]string{"results", "merge", "--on-conflict", "best", "--out", out}, order...)...)
		if code != 0 {
			t.Fatalf("merge --on-conflict best %v: exit %d: %s", order, code, stderr)
		}
		recs, err := experiment.ReadAttackRecords(out)
		if err != nil || len(recs) != 2 || recs[1].AdvLength != 5 {
			t.Fatalf("merged %v: %+v, %v", order, recs, err)
		}
	}
	if code, _, stderr := runCLI(t, "results", "merge", "--on-conflict", "first", "--out", filepath.Join(dir, "x.jsonl"), a); code != 2 {
		t.Fatalf("--on-conflict first: exit %d: %s", code, stderr)
	}
}

// TestResultsSummaryJoins: the same file given twice counts each unit
// once, and shards of two models are refused rather than summarised as one
// row.
func TestResultsSummaryJoins(t *testing.T) {
	dir := t.TempDir()
	a := writeAttacks(t, filepath.Join(dir, "a.jsonl"), pgdRecord("aaaa", 1, 2), pgdRecord("aaaa", 2, 3), pgdRecord("aaaa", 3, 1))
	code, stdout, stderr := runCLI(t, "results", "summary", "--json", "--out", t.TempDir(), a, a)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum experiment.AttackSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Rows) != 1 || sum.Rows[0].Samples != 3 {
		t.Fatalf("rows %+v, want one row of 3 images", sum.Rows)
	}
	b := writeAttacks(t, filepath.Join(dir, "b.jsonl"), pgdRecord("bbbb", 4, 2))
	code, _, stderr = runCLI(t, "results", "summary", "--out", t.TempDir(), a, b)
	if code != 1 || !strings.Contains(stderr, `model_sha256 "aaaa" vs "bbbb"`) || !strings.Contains(stderr, "b.jsonl") {
		t.Fatalf("two models: exit %d: %s", code, stderr)
	}
}

// TestResultsRetrySymlink: retry on a symbolic link to a results file
// rewrites the file it points to and keeps the link.
func TestResultsRetrySymlink(t *testing.T) {
	dir := t.TempDir()
	crashed := pgdRecord("abc", 2, 1)
	crashed.Error, crashed.Crashed = "the process died 2 times in this unit", true
	target := writeAttacks(t, filepath.Join(dir, "attacks.jsonl"), pgdRecord("abc", 1, 3), crashed)
	link := filepath.Join(t.TempDir(), "link.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "results", "retry", link)
	if want := link + ": 1 records removed; rerun its command to redo them\n"; code != 0 || stdout != want || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 0 and %q", code, stdout, stderr, want)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced by a file: %v, %v", fi.Mode(), err)
	}
	recs, err := experiment.ReadAttackRecords(target)
	if err != nil || len(recs) != 1 || recs[0].Sample != 1 {
		t.Fatalf("the target holds %+v, %v; want sample 1's record alone", recs, err)
	}
}

// TestResultsCheckExit: results check exits 0 when the witnesses replay
// as recorded (a vulnerable verdict of the shipped model, found by the
// warm start), 0 with the record counted as not replayable when its
// witness is missing, 1 naming the record when the claimed length is
// wrong, and 2 without files.
func TestResultsCheckExit(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "v.jsonl")
	if code, _, stderr := runCLI(t, "verify", "--model", "../../models/mmnist-rnn", "--index", "7360", "--eps", "0.05", "--out", out); code != 0 {
		t.Fatalf("verify: exit %d: %s", code, stderr)
	}
	recs, err := experiment.ReadVerifyRecords(out)
	if err != nil || len(recs) != 1 || recs[0].Verdict != "vulnerable" {
		t.Fatalf("verify: %v %+v", err, recs)
	}
	code, stdout, stderr := runCLI(t, "results", "check", "--model-dir", "../../models", out)
	if code != 0 || !strings.Contains(stdout, "claims  agree  disagree  not replayable  proofs  ties") || !strings.Contains(stdout, out+"  1       1      0") {
		t.Errorf("check: exit %d: %s%s", code, stdout, stderr)
	}
	bad := strings.Replace(mustRead(t, out), `"witness_length":3`, `"witness_length":4`, 1)
	badPath := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(badPath, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, "results", "check", "--model-dir", "../../models", badPath)
	if code != 1 || !strings.Contains(stdout, "disagree: "+badPath+" record 1") || !strings.Contains(stdout, "replays to 3 tokens, the record says 4") ||
		!strings.Contains(stderr, "1 records disagree") {
		t.Errorf("wrong length: exit %d: %s%s", code, stdout, stderr)
	}
	os.RemoveAll(filepath.Join(dir, "v.witnesses"))
	code, stdout, stderr = runCLI(t, "results", "check", "--model-dir", "../../models", out)
	if code != 0 || !strings.Contains(stdout, "not replayable (1): witness missing") {
		t.Errorf("missing witness: exit %d: %s%s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "results", "check"); code != 2 || !strings.Contains(stderr, "give the results files to check") {
		t.Errorf("no files: exit %d: %s", code, stderr)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestResultsRerunExit: results rerun exits 0 when the shipped model's
// verdicts come out again as recorded, 1 naming the record when one is
// edited to the opposite verdict (a flip), 1 in one line naming the file
// for attack records or a model that is not found, and 2 without files,
// samples or a budget.
func TestResultsRerunExit(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "v.jsonl")
	if code, _, stderr := runCLI(t, "verify", "--model", "../../models/mmnist-rnn", "--index", "7360", "--eps", "0.001,0.05", "--timeout", "10s", "--out", out); code != 0 {
		t.Fatalf("verify: exit %d: %s", code, stderr)
	}
	recs, err := experiment.ReadVerifyRecords(out)
	if err != nil || len(recs) != 2 || recs[0].Verdict != "robust" || recs[1].Verdict != "vulnerable" {
		t.Fatalf("verify: %v %+v", err, recs)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := write("flipped.jsonl", strings.Replace(mustRead(t, out), `"verdict":"robust"`, `"verdict":"vulnerable"`, 1))
	other := write("other.jsonl", strings.ReplaceAll(mustRead(t, out), recs[0].ModelSHA256, strings.Repeat("0", 64)))
	attacks := writeAttacks(t, filepath.Join(dir, "attacks.jsonl"), pgdRecord("abc", 1, 3))
	for _, tc := range []struct {
		name         string
		args         []string
		code         int
		stdout, line string // line: in stderr's one line
	}{
		{"as recorded", []string{out}, 0, "verdict flips: 0\n", ""},
		{"flipped", []string{flipped}, 1, "flip: " + flipped + " record 1 (sample 7360, δ 0.001, K̂ 2): vulnerable recorded, robust now", "1 verdict flips, 0 failed reruns"},
		{"attack records", []string{out, attacks}, 1, "", attacks + ": attack records, not verification records"},
		{"model not found", []string{other}, 1, "", other + ": record 1: model ../../models/mmnist-rnn (sha256 000000000000…) not found here"},
		{"no files", nil, 2, "", "give the verification results files to rerun"},
		{"no samples", []string{"--samples", "0", out}, 2, "", "--samples 0: want at least 1"},
		{"negative budget", []string{"--budget", "-1", out}, 2, "", "--budget -1: want seconds ≥ 0"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"results", "rerun", "-q", "--model-dir", "../../models"}, tc.args...)...)
		oneLine := strings.HasPrefix(stderr, "lenspec: ") && strings.Count(stderr, "\n") == 1 && strings.Contains(stderr, tc.line)
		if code != tc.code || !strings.Contains(stdout, tc.stdout) || tc.line != "" && !oneLine {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, one line with %q", tc.name, code, stdout, stderr, tc.code, tc.stdout, tc.line)
		}
	}
}
