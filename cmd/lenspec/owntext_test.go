package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAttackOwnText: lenspec attack takes a translator's source sentences
// from --text and --text-file, writes the corpus's records for them, and
// every adversarial source replays from its text through translate; the
// same sentences resume under the same keys, and flags that pick corpus
// sentences are refused beside them.
func TestAttackOwnText(t *testing.T) {
	dir := tinyTranslatorDir(t)
	sents := []string{"das haus ist klein", "die katze ist alt"}
	file := filepath.Join(t.TempDir(), "mine.txt")
	if err := os.WriteFile(file, []byte(sents[0]+"\r\n\n"+sents[1]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type rec struct {
		Data struct {
			Name, Split, SHA256 string
		}
		Sample    int
		SrcText   string `json:"src_text"`
		AdvText   string `json:"adv_text"`
		AdvLength int    `json:"adv_length"`
		Stopped   bool
		Witness   string
	}
	attack := func(out string, src ...string) []rec {
		t.Helper()
		args := append([]string{"attack", "--model", dir, "--method", "random", "--eps", "1", "--budget", "30", "--max-steps", "10", "--out", out, "--json", "-q"}, src...)
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("attack %v: exit %d: %s", src, code, stderr)
		}
		var rs []rec
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			if line == "" {
				continue
			}
			var r rec
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("record %q: %v", line, err)
			}
			rs = append(rs, r)
		}
		return rs
	}
	out := filepath.Join(t.TempDir(), "own.jsonl")
	fromArgs := attack(out, "--text", sents[0], "--text", sents[1])
	fromFile := attack(filepath.Join(t.TempDir(), "file.jsonl"), "--text-file", file)
	for _, rs := range [][]rec{fromArgs, fromFile} {
		if len(rs) != 2 {
			t.Fatalf("%d records, want 2", len(rs))
		}
		for i, r := range rs {
			if r.Sample != i || r.SrcText != sents[i] || r.Data.Name != "sentences" || r.Data.SHA256 != fromArgs[0].Data.SHA256 || r.AdvText == "" {
				t.Fatalf("record %d: %+v", i, r)
			}
			_, tout, _ := runCLI(t, "translate", "--model", dir, "--max-steps", "10", "--json", r.AdvText)
			var tr struct {
				Length  int
				Stopped bool
			}
			if err := json.Unmarshal([]byte(tout), &tr); err != nil || tr.Length != r.AdvLength || tr.Stopped != r.Stopped {
				t.Fatalf("%q: translate gives %+v, the attack recorded %d (stopped %v)", r.AdvText, tr, r.AdvLength, r.Stopped)
			}
		}
	}
	if fromArgs[0].Data.Split != "args" || fromFile[0].Data.Split != "mine.txt" {
		t.Fatalf("data named %q and %q, want args and mine.txt", fromArgs[0].Data.Split, fromFile[0].Data.Split)
	}
	if again := attack(out, "--text", sents[0], "--text", sents[1]); len(again) != 0 {
		t.Fatalf("a rerun on the same sentences redid %d of them", len(again))
	}
	if other := attack(out, "--text", "der hund"); len(other) != 1 || other[0].Data.SHA256 == fromArgs[0].Data.SHA256 {
		t.Fatalf("other sentences: %+v", other)
	}
	// The embedding attack's witness carries the sentence.
	emb := attack(filepath.Join(t.TempDir(), "emb.jsonl"), "--method", "embedding", "--budget", "2", "--text", sents[1])
	if len(emb) != 1 || emb[0].Witness == "" || emb[0].SrcText != sents[1] {
		t.Fatalf("embedding attack on own text: %+v", emb)
	}
	if _, err := os.Stat(emb[0].Witness); err != nil {
		t.Fatal(err)
	}

	blank := filepath.Join(t.TempDir(), "blank.txt")
	if err := os.WriteFile(blank, []byte("\n  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(t.TempDir(), "r.jsonl")
	base := []string{"attack", "--model", dir, "--method", "flip", "--eps", "0.5", "--out", res}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--text", "a", "--text-file", file}, 2, "not both"},
		{[]string{"--text", "a", "--sentences", "2"}, 2, "--sentences picks the corpus's sentences"},
		{[]string{"--text", "a", "--index", "0"}, 2, "--index picks"},
		{[]string{"--text-file", file, "--split", "dev"}, 2, "--split picks"},
		{[]string{"--text", "  "}, 2, "sentence 1 is blank"},
		{[]string{"--text", "a\nb"}, 2, "several lines"},
		{[]string{"--text", strings.Repeat("das haus ", 20)}, 2, "max_source_len"},
		{[]string{"--text-file", filepath.Join(t.TempDir(), "missing.txt")}, 1, "missing.txt"},
		{[]string{"--text-file", blank}, 1, "blank.txt: no sentences"},
	} {
		code, _, stderr := runCLI(t, append(base, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d naming %q", c.args, code, stderr, c.code, c.want)
		}
	}
	if code, _, stderr := runCLI(t, "attack", "--model", smallModel(t), "--eps", "0.1", "--text", "a", "--out", res); code != 2 || !strings.Contains(stderr, "--text is for text models") {
		t.Errorf("--text on an image model: exit %d, %q", code, stderr)
	}
}
