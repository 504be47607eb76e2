package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/experiment"
)

func TestVerifyCLI(t *testing.T) {
	dir := smallModel(t)
	out := filepath.Join(t.TempDir(), "v.jsonl")
	args := []string{"verify", "--model", dir, "--eps", "0.0001,0.5", "--index", "0,1", "--timeout", "20s", "--attack-steps", "20", "--out", out, "-q"}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	words := strings.Fields(stdout)
	if len(words) != 4 {
		t.Fatalf("stdout %q: want one word per sample", stdout)
	}
	recs, err := experiment.ReadVerifyRecords(out)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.Verdict != words[i] {
			t.Fatalf("record %d verdict %q, stdout %q", i, r.Verdict, words[i])
		}
		switch r.Verdict {
		case "vulnerable":
			if r.Witness == "" || r.WitnessLength == nil || *r.WitnessLength <= r.K {
				t.Fatalf("vulnerable record without a replayed witness longer than K̂: %+v", r)
			}
			if _, err := os.Stat(r.Witness); err != nil {
				t.Fatal(err)
			}
		case "robust":
			if r.Stage == "" {
				t.Fatalf("robust without the stage that proved it: %+v", r)
			}
		case "unknown":
		default:
			t.Fatalf("verdict %q", r.Verdict)
		}
	}
	// Resume: nothing left to do.
	code, stdout, _ = runCLI(t, args...)
	if code != 0 || strings.TrimSpace(stdout) != "" {
		t.Fatalf("rerun printed %q", stdout)
	}
}

// TestVerifyExperimentShards: two shards — one from --shard, one from a
// Kubernetes Indexed Job's environment — split the (δ, image) list into
// disjoint halves in their own files; the summary covers both, and their
// merge holds every record once.
func TestVerifyExperimentShards(t *testing.T) {
	dir := smallModel(t)
	out := t.TempDir()
	base := []string{"experiment", "mmnist-verify", "--model", dir, "--out", out, "--images", "3", "--eps", "0.0001,0.5",
		"--no-mip", "--attack-steps", "5", "--timeout", "20s", "-q"}
	if code, _, stderr := runCLI(t, append(base, "--shard", "1/2")...); code != 0 {
		t.Fatalf("shard 1/2: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLIEnv(t, map[string]string{"JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "2"}, append(base, "--json")...)
	if code != 0 {
		t.Fatalf("indexed job 1 of 2: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, " 0.5 |") || !strings.Contains(stdout, `"table"`) {
		t.Fatalf("summary %s", stdout)
	}
	seen := map[string]bool{}
	var files []string
	for _, f := range []string{"verify.shard-1-of-2.jsonl", "verify.shard-2-of-2.jsonl"} {
		p := filepath.Join(out, f)
		files = append(files, p)
		recs, err := experiment.ReadVerifyRecords(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 3 {
			t.Fatalf("%s: %d records, want 3 of the 6", f, len(recs))
		}
		for _, r := range recs {
			k := experiment.VerifyKey(r)
			if seen[k] {
				t.Fatalf("%s: record %s also in the other shard", f, k)
			}
			seen[k] = true
		}
	}
	merged := filepath.Join(out, "merged.jsonl")
	if code, _, stderr := runCLI(t, append([]string{"results", "merge", "--out", merged}, files...)...); code != 0 {
		t.Fatalf("merge: %s", stderr)
	}
	if recs, err := experiment.ReadVerifyRecords(merged); err != nil || len(recs) != 6 {
		t.Fatalf("merged %d records (%v), want 6", len(recs), err)
	}
	for _, bad := range []string{"0/2", "3/2", "1/0", "a/b", "1/2/3"} {
		if code, _, _ := runCLI(t, "experiment", "mmnist-verify", "--model", dir, "--out", out, "--shard", bad); code != 2 {
			t.Fatalf("--shard %s: exit %d, want 2", bad, code)
		}
	}
}

// TestResultsSummaryOfShippedFiles: the results files of docs/runs, from
// before schema 1, summarise through the CLI.
func TestResultsSummaryOfShippedFiles(t *testing.T) {
	for _, f := range []string{"../../docs/runs/attacks.jsonl", "../../docs/runs/verify.jsonl"} {
		code, stdout, stderr := runCLI(t, "results", "summary", "--out", t.TempDir(), f)
		if code != 0 || !strings.Contains(stdout, " 0.5 |") {
			t.Fatalf("%s: exit %d: %s %s", f, code, stdout, stderr)
		}
	}
}

// TestBoundCommand: bound prints {"lower", "upper"} per sample, certified
// where they meet; with --out it keeps resumable records; bad flags are
// usage errors.
func TestBoundCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "b.jsonl")
	code, stdout, stderr := runCLI(t, "bound", "--model", "../../models/mmnist-rnn-rs", "--eps", "0.01", "--index", "0", "--timeout", "20s", "--json", "-q")
	if code != 0 {
		t.Fatalf("bound: exit %d: %s", code, stderr)
	}
	var b struct {
		Lower     int
		Upper     *int
		Certified bool
	}
	if err := json.Unmarshal([]byte(stdout), &b); err != nil || b.Upper == nil || !b.Certified || *b.Upper != b.Lower || b.Lower < 1 {
		t.Fatalf("bound --json: %q (%v)", stdout, err)
	}
	for i := 0; i < 2; i++ { // the second run resumes: nothing new
		if code, _, stderr := runCLI(t, "bound", "--model", "../../models/mmnist-rnn-rs", "--eps", "0.01", "--index", "0", "--timeout", "20s", "--out", out, "-q"); code != 0 {
			t.Fatalf("bound --out: exit %d: %s", code, stderr)
		}
	}
	recs, err := experiment.ReadVerifyRecords(out)
	if err != nil || len(recs) != 1 || recs[0].Bound == nil || recs[0].Verdict != experiment.VerdictCertified {
		t.Fatalf("records %+v (%v)", recs, err)
	}
	if code, _, stderr := runCLI(t, "bound", "--model", "../../models/mmnist-rnn-rs", "--eps", "0.01", "--index", "0", "--max-len", "-3"); code != 2 {
		t.Fatalf("--max-len -3: exit %d: %s", code, stderr)
	}
}
