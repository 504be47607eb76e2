package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/model"
)

// TestAttackResumes runs a small attack twice with the same results file:
// the second run finds every record done and appends nothing; a changed
// setting runs again.
func TestAttackResumes(t *testing.T) {
	dir := smallModel(t)
	out := filepath.Join(t.TempDir(), "a.jsonl")
	args := []string{"attack", "--model", dir, "--method", "random", "--eps", "0.05,0.1", "--index", "0,3", "--budget", "40", "--out", out, "-q", "--json"}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(stdout, "\n"); n != 4 {
		t.Fatalf("first run printed %d records, want 4:\n%s", n, stdout)
	}
	recs, err := experiment.ReadAttackRecords(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records in the file, want 4", len(recs))
	}
	for _, r := range recs {
		if r.Evals != 40 || r.Method != "random" || r.Settings.Budget != 40 || r.SchemaVersion != experiment.SchemaVersion || r.ModelSHA256 == "" {
			t.Fatalf("record %+v", r)
		}
		var total int64
		for _, c := range r.LengthCounts {
			total += c
		}
		if total != 40 {
			t.Fatalf("length counts sum to %d, want 40", total)
		}
		if r.Success != (r.AdvLength > r.K && r.MinRelMargin >= model.RelTieMargin) {
			t.Fatalf("success flag inconsistent: %+v", r)
		}
		if r.Success && r.Witness == "" {
			t.Fatalf("success without a witness: %+v", r)
		}
	}
	code, stdout, stderr = runCLI(t, args...)
	if code != 0 || strings.TrimSpace(stdout) != "" {
		t.Fatalf("second run: exit %d, printed %q (%s)", code, stdout, stderr)
	}
	// One more eps runs only the new pair of records.
	args[6] = "0.05,0.1,0.2"
	code, stdout, _ = runCLI(t, args...)
	if code != 0 || strings.Count(stdout, "\n") != 2 {
		t.Fatalf("extended run printed %q", stdout)
	}
	// Another step cap is another experiment: all six run.
	code, stdout, _ = runCLI(t, append(args, "--max-steps", "5")...)
	if code != 0 || strings.Count(stdout, "\n") != 6 {
		t.Fatalf("run with another step cap printed %q", stdout)
	}
}

// TestAttackWitnessReplays forces successes with a large radius and checks
// each saved witness decodes, through the CLI, to the recorded length, for
// the CNN-RNN and the transformer captioner.
func TestAttackWitnessReplays(t *testing.T) {
	for _, m := range []struct {
		name  string
		model func(*testing.T) string
	}{{"cnn-rnn", smallModel}, {"cnn-transformer", transformerModel}} {
		t.Run(m.name, func(t *testing.T) { attackWitnessReplays(t, m.model(t)) })
	}
}

func attackWitnessReplays(t *testing.T, dir string) {
	out := filepath.Join(t.TempDir(), "w.jsonl")
	code, _, stderr := runCLI(t, "attack", "--model", dir, "--method", "pgd", "--eps", "1", "--index", "1,2,5", "--budget", "30",
		"--lr", "0.05", "--max-len", "0", "--out", out, "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recs, err := experiment.ReadAttackRecords(out)
	if err != nil {
		t.Fatal(err)
	}
	witnesses := 0
	for _, r := range recs {
		if !r.Success {
			continue
		}
		witnesses++
		if _, err := os.Stat(r.WitnessPNG); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCLI(t, "decode", "--model", dir, "--input", r.Witness, "--json")
		if code != 0 {
			t.Fatalf("decode witness: %s", stderr)
		}
		var d experiment.Decoded
		if err := json.Unmarshal([]byte(stdout), &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Tokens) != r.AdvLength || d.Stopped != r.Stopped {
			t.Fatalf("witness decodes to %v (stopped %v), record says %d (stopped %v)", d.Tokens, d.Stopped, r.AdvLength, r.Stopped)
		}
	}
	if witnesses == 0 {
		t.Fatal("no success at radius 1 with K̂ = 0: nothing was checked")
	}
}

// TestAttackNamesCrashedUnits: a unit whose process was killed twice
// while it ran is recorded as crashed; that run, and every rerun until
// `results retry`, names it and the retry command on stderr and exits 1,
// where a rerun used to say only "already done" and exit 0.
func TestAttackNamesCrashedUnits(t *testing.T) {
	dir := smallModel(t)
	out := filepath.Join(t.TempDir(), "a.jsonl")
	args := []string{"attack", "--model", dir, "--method", "random", "--eps", "0.05", "--index", "0,3", "--budget", "20", "--out", out, "--json"}
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Sample 3's record goes, and two attempts of it stay behind: what
	// two kill -9s while it ran leave.
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(raw)), "\n")
	var keep, attempts string
	for _, l := range lines {
		var r experiment.AttackRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Sample != 3 {
			keep += strings.TrimSpace(l) + "\n"
			continue
		}
		k, _ := json.Marshal(experiment.AttackKey(r))
		attempts += `{"key":` + string(k) + `,"pid":1,"time":"2026-01-01T00:00:00Z"}` + "\n"
	}
	if err := os.WriteFile(out, []byte(keep), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out+".attempts", []byte(attempts+attempts), 0o644); err != nil {
		t.Fatal(err)
	}
	retry := "`lenspec results retry " + out + "`"
	for run, resumed := range []string{"", "2 records already done, 1 of this run's units recorded as crashed"} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 1 || !strings.Contains(stderr, "lenspec: "+out+": 1 unit recorded as crashed, not run again (sample 3 at δ 0.05 (random))") ||
			!strings.Contains(stderr, retry) || !strings.Contains(stderr, resumed) {
			t.Fatalf("run %d: exit %d, stderr %q; want 1, naming sample 3 and %s", run, code, stderr, retry)
		}
		// The first run records the crash (and prints it), a rerun nothing.
		if n := strings.Count(stdout, "\n"); n != 1-run {
			t.Fatalf("run %d printed %d records:\n%s", run, n, stdout)
		}
	}
	if code, _, stderr := runCLI(t, "results", "retry", out); code != 0 {
		t.Fatalf("retry: exit %d: %s", code, stderr)
	}
	if code, stdout, stderr := runCLI(t, args...); code != 0 || strings.Count(stdout, "\n") != 1 || strings.Contains(stderr, "crashed") {
		t.Fatalf("after retry: exit %d, printed %q, stderr %q", code, stdout, stderr)
	}
}
