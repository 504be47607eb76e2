package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/results"
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
	for _, w := range words {
		if w != "robust" && w != "vulnerable" && w != "unknown" {
			t.Fatalf("stdout word %q", w)
		}
	}
	recs, err := results.Read[verifyRecord](out)
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
		}
	}
	// Resume: nothing left to do.
	code, stdout, _ = runCLI(t, args...)
	if code != 0 || strings.TrimSpace(stdout) != "" {
		t.Fatalf("rerun printed %q", stdout)
	}
	// Bad flags are usage errors.
	if code, _, _ := runCLI(t, "verify", "--model", dir, "--eps", "0.1", "--index", "0", "--out", out, "--bounds", "magic"); code != 2 {
		t.Fatalf("bad --bounds: exit %d, want 2", code)
	}
}

// TestVerifyExperimentShards: two shards split the (δ, image) list into
// disjoint halves in their own files, and the summary covers both.
func TestVerifyExperimentShards(t *testing.T) {
	dir := smallModel(t)
	out := t.TempDir()
	for _, sh := range []string{"1/2", "2/2"} {
		code, _, stderr := runCLI(t, "experiment", "mmnist-verify", "--model", dir, "--out", out, "--images", "3", "--eps", "0.0001,0.5",
			"--no-mip", "--attack-steps", "5", "--timeout", "20s", "--shard", sh, "-q")
		if code != 0 {
			t.Fatalf("shard %s: exit %d: %s", sh, code, stderr)
		}
	}
	seen := map[string]bool{}
	for _, f := range []string{"verify-shard-1-of-2.jsonl", "verify-shard-2-of-2.jsonl"} {
		recs, err := results.Read[verifyRecord](filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 3 {
			t.Fatalf("%s: %d records, want 3 of the 6", f, len(recs))
		}
		for _, r := range recs {
			k, _ := verifyKey(mustJSON(r))
			if seen[k] {
				t.Fatalf("%s: record %s also in the other shard", f, k)
			}
			seen[k] = true
		}
	}
	all, err := readVerifyRecords(out)
	if err != nil || len(all) != 6 {
		t.Fatalf("summary reads %d records (%v), want 6", len(all), err)
	}
	for _, bad := range []string{"0/2", "3/2", "1/0", "a/b", "1/2/3"} {
		if code, _, _ := runCLI(t, "experiment", "mmnist-verify", "--model", dir, "--out", out, "--shard", bad); code != 2 {
			t.Fatalf("--shard %s: exit %d, want 2", bad, code)
		}
	}
}
