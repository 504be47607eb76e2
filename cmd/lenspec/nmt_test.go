package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nmt"
)

// toyCorpus writes a small German–English corpus of sentences built from a
// toy grammar, one "source<TAB>target" pair per line.
func toyCorpus(t *testing.T) string {
	t.Helper()
	subj := [][2]string{{"Das Haus", "The house"}, {"Der Hund", "The dog"}, {"Die Katze", "The cat"}, {"Das Auto", "The car"}, {"Der Baum", "The tree"}}
	adj := [][2]string{{"groß", "big"}, {"klein", "small"}, {"alt", "old"}, {"neu", "new"}, {"rot", "red"}, {"schön", "nice"}}
	adv := [][2]string{{"", ""}, {"sehr ", "very "}, {"nicht ", "not "}, {"ganz ", "quite "}}
	var b strings.Builder
	for _, s := range subj {
		for _, a := range adj {
			for _, v := range adv {
				fmt.Fprintf(&b, "%s ist %s%s.\t%s is %s%s.\n", s[0], v[0], a[0], s[1], v[1], a[1])
			}
		}
	}
	path := filepath.Join(t.TempDir(), "toy.tsv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTrainNMTAndEval: lenspec train nmt on a corpus of one's own, then
// eval and translate on the model it wrote; bad settings are usage errors.
func TestTrainNMTAndEval(t *testing.T) {
	tsv := toyCorpus(t)
	out := filepath.Join(t.TempDir(), "nmt")
	small := []string{"--embedding", "16", "--hidden", "16", "--decoder", "16", "--attention", "16", "--combine", "16", "--vocab", "300", "--batch", "16"}
	code, stdout, stderr := runCLI(t, append([]string{"train", "nmt", "--out", out, "--corpus", tsv, "--epochs", "2", "--json", "-q"}, small...)...)
	if code != 0 {
		t.Fatalf("train nmt: exit %d: %s", code, stderr)
	}
	var sum nmt.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Out != out {
		t.Fatalf("summary %q: %v", stdout, err)
	}
	for _, name := range []string{model.ConfigFile, model.WeightsFile, bpe.VocabFile, bpe.MergesFile} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "LICENSE")); err == nil {
		t.Fatal("a model trained on a corpus of one's own got the Ding licence notice")
	}
	// Fine-tuning on the sentence pairs keeps the tokenizer and records
	// where it started.
	ft := filepath.Join(t.TempDir(), "ft")
	if code, _, stderr := runCLI(t, "train", "nmt", "--out", ft, "--corpus", tsv, "--init", out, "--sentences-only", "--epochs", "1", "--batch", "4", "--label-smoothing", "0.1", "-q"); code != 0 {
		t.Fatalf("train nmt --init: exit %d: %s", code, stderr)
	}
	v0, _ := os.ReadFile(filepath.Join(out, bpe.VocabFile))
	v1, _ := os.ReadFile(filepath.Join(ft, bpe.VocabFile))
	if len(v0) == 0 || !bytes.Equal(v0, v1) {
		t.Fatal("fine-tuning changed the tokenizer")
	}
	ftm, err := model.Load[float32](ft)
	if err != nil {
		t.Fatal(err)
	}
	if dg, _ := model.Digest(out); ftm.Config().Training["init_sha256"] != dg || ftm.Config().Training["sentences_only"] != true {
		t.Fatalf("fine-tuned model's training record %v", ftm.Config().Training)
	}
	// The record says how to rebuild it: every flag given but where it went.
	wantCmd := "lenspec train nmt --out DIR --batch 4 --corpus " + tsv + " --epochs 1 --init " + out + " --label-smoothing 0.1 --sentences-only"
	if tr := ftm.Config().Training; tr["command"] != wantCmd || tr["label_smoothing"] != 0.1 {
		t.Fatalf("training record: command %q, label smoothing %v; want %q, 0.1", tr["command"], tr["label_smoothing"], wantCmd)
	}
	// --select-dev keeps the weights of the epoch with the best dev BLEU:
	// the model written scores exactly what its record says it scored.
	sel := filepath.Join(t.TempDir(), "sel")
	if code, _, stderr := runCLI(t, "train", "nmt", "--out", sel, "--corpus", tsv, "--init", out, "--epochs", "6", "--batch", "4", "--lr", "0.01", "--final-lr", "0.003", "--select-dev", "-q"); code != 0 {
		t.Fatalf("train nmt --select-dev: exit %d: %s", code, stderr)
	}
	selm, err := model.Load[float32](sel)
	if err != nil {
		t.Fatal(err)
	}
	byEpoch, _ := selm.Config().Training["dev_bleu_by_epoch"].([]any)
	chosen, _ := selm.Config().Training["selected_epoch"].(float64)
	if len(byEpoch) != 6 || chosen < 1 {
		t.Fatalf("selection record %v", selm.Config().Training)
	}
	best := 0
	for i, v := range byEpoch {
		if v.(float64) > byEpoch[best].(float64) {
			best = i
		}
	}
	if int(chosen) != best+1 {
		t.Fatalf("selected epoch %v of dev BLEU %v", chosen, byEpoch)
	}
	code, stdout, stderr = runCLI(t, "eval", "--model", sel, "--corpus", tsv, "--split", "dev", "--json", "-q")
	var evSel map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &evSel) != nil || evSel["bleu"] != byEpoch[best] {
		t.Fatalf("selected model's dev BLEU %v (exit %d: %s), recorded %v", evSel["bleu"], code, stderr, byEpoch)
	}
	if code, _, stderr := runCLI(t, "train", "nmt", "--out", t.TempDir(), "--corpus", tsv, "--init", t.TempDir()); code != 1 || !strings.Contains(stderr, "config.json") {
		t.Fatalf("--init of an empty directory: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "checkpoint")); err == nil {
		t.Fatal("checkpoint left behind")
	}

	code, stdout, stderr = runCLI(t, "eval", "--model", out, "--corpus", tsv, "--json", "-q")
	if code != 0 {
		t.Fatalf("eval: exit %d: %s", code, stderr)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(stdout), &ev); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"bleu", "baseline_bleu", "samples", "unstopped", "max_len", "max_length_ratio", "over_3x_source", "max_len_dev", "unstopped_dev"} {
		if _, ok := ev[k]; !ok {
			t.Fatalf("eval output %v lacks %q", ev, k)
		}
	}
	if ev["bleu"].(float64) != sum.BLEU {
		t.Fatalf("eval BLEU %v, training summary %v", ev["bleu"], sum.BLEU)
	}
	// --examples: the first translations of the split, as a Markdown table
	// in text mode, the same outputs translate gives.
	code, stdout, stderr = runCLI(t, "eval", "--model", out, "--corpus", tsv, "--examples", "2", "-q")
	if code != 0 || !strings.Contains(stdout, "| # | source | reference | output |") || strings.Count(stdout, "\n| ") != 3 {
		t.Fatalf("eval --examples 2: exit %d: %q %s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, "eval", "--model", out, "--corpus", tsv, "--examples", "1", "--json", "-q")
	var ex struct {
		Examples []struct{ Source, Output string }
	}
	if err := json.Unmarshal([]byte(stdout), &ex); code != 0 || err != nil || len(ex.Examples) != 1 {
		t.Fatalf("eval --examples 1 --json: exit %d, %q, %v", code, stdout, err)
	}
	if code, got, _ := runCLI(t, "translate", "--model", out, ex.Examples[0].Source); code != 0 || strings.TrimSpace(got) != ex.Examples[0].Output {
		t.Fatalf("translate of the first example gives %q, eval showed %q", got, ex.Examples[0].Output)
	}
	if code, _, stderr := runCLI(t, "eval", "--model", out); code != 2 || !strings.Contains(stderr, "--corpus") {
		t.Fatalf("eval of a model of one's own corpus without --corpus: exit %d: %s", code, stderr)
	}

	// translate: arguments, --json, stdin (an empty line stays empty).
	code, stdout, _ = runCLI(t, "translate", "--model", out, "Das Haus ist klein.", "Der Hund ist alt.")
	if code != 0 || strings.Count(stdout, "\n") != 2 {
		t.Fatalf("translate: exit %d, %q", code, stdout)
	}
	code, stdout, _ = runCLI(t, "translate", "--model", out, "--json", "Das Auto ist rot.")
	var tr struct {
		Source  string
		IDs     []int
		Tokens  []string
		Length  int
		Stopped bool
	}
	if err := json.Unmarshal([]byte(stdout), &tr); code != 0 || err != nil || tr.Source != "Das Auto ist rot." || tr.Length != len(tr.IDs) || len(tr.Tokens) != len(tr.IDs) {
		t.Fatalf("translate --json: exit %d, %q, %v", code, stdout, err)
	}
	var o bytes.Buffer
	a := &app{stdin: strings.NewReader("Das Haus ist neu.\n\nDie Katze ist schön.\n"), stdout: &o, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	if code := run(context.Background(), a, []string{"translate", "--model", out, "--batch", "2"}); code != 0 {
		t.Fatalf("translate from stdin: exit %d", code)
	}
	if lines := strings.Split(o.String(), "\n"); len(lines) != 4 || lines[1] != "" {
		t.Fatalf("translate from stdin: %q", o.String())
	}

	// Text attacks through lenspec attack and the experiment command; every
	// adversarial source replays from its text through translate.
	res := filepath.Join(t.TempDir(), "atk.jsonl")
	code, stdout, stderr = runCLI(t, "attack", "--model", out, "--corpus", tsv, "--method", "flip", "--eps", "1", "--sentences", "2",
		"--budget", "20", "--max-steps", "30", "--out", res, "--json", "-q")
	if code != 0 {
		t.Fatalf("attack: exit %d: %s", code, stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var r struct {
			AdvText   string `json:"adv_text"`
			AdvLength int    `json:"adv_length"`
			Stopped   bool
			SrcText   string `json:"src_text"`
			Data      struct{ Split string }
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.SrcText == "" || r.AdvText == "" {
			t.Fatalf("attack record %q: %v", line, err)
		}
		if r.Data.Split != "test" {
			t.Fatalf("attack without --split drew from %q, want test (the flag's default)", r.Data.Split)
		}
		_, tout, _ := runCLI(t, "translate", "--model", out, "--max-steps", "30", "--json", r.AdvText)
		var tr struct {
			Length  int
			Stopped bool
		}
		if err := json.Unmarshal([]byte(tout), &tr); err != nil || tr.Length != r.AdvLength || tr.Stopped != r.Stopped {
			t.Fatalf("%q: translate gives %+v, the attack recorded %d (stopped %v)", r.AdvText, tr, r.AdvLength, r.Stopped)
		}
	}
	// --loss reaches the relaxed attacks and their keys (flip, which has no
	// loss, refuses it: see the table below).
	for method, want := range map[string]string{"gumbel": "eos-logprob"} {
		code, stdout, stderr = runCLI(t, "attack", "--model", out, "--corpus", tsv, "--method", method, "--loss", "eos-logprob", "--eps", "1",
			"--index", "0", "--split", "dev", "--budget", "3", "--max-steps", "30", "--out", filepath.Join(t.TempDir(), "loss.jsonl"), "--json", "-q")
		var r struct {
			Settings struct{ Loss string }
			Data     struct{ Split string }
		}
		if err := json.Unmarshal([]byte(stdout), &r); code != 0 || err != nil || r.Settings.Loss != want || r.Data.Split != "dev" {
			t.Fatalf("%s --loss eos-logprob --split dev: exit %d, record loss %q split %q (%v, %s)", method, code, r.Settings.Loss, r.Data.Split, err, stderr)
		}
	}
	expDir := t.TempDir()
	code, stdout, stderr = runCLI(t, "experiment", "nmt-attack", "--model", out, "--corpus", tsv, "--out", expDir, "--sentences", "2",
		"--eps", "0.5,1", "--random-budget", "10", "--gumbel-budget", "3", "--embedding-budget", "3", "--flip-budget", "10", "--max-steps", "30", "-q")
	if code != 0 || !strings.Contains(stdout, "flip") || !strings.Contains(stdout, "gumbel") {
		t.Fatalf("experiment nmt-attack: exit %d: %s %s", code, stdout, stderr)
	}
	for _, name := range []string{"nmt-attacks.jsonl", "nmt-attack-lengths.png", "nmt-attack-lengths.svg", "nmt-attack-table.md"} {
		if _, err := os.Stat(filepath.Join(expDir, name)); err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"attack", "--model", out, "--corpus", tsv, "--method", "pgd", "--eps", "0.5", "--sentences", "1", "--out", res}, 2, "gumbel"},
		{[]string{"attack", "--model", out, "--corpus", tsv, "--method", "flip", "--eps", "1.5", "--sentences", "1", "--out", res}, 2, "δ"},
		{[]string{"attack", "--model", out, "--corpus", tsv, "--method", "flip", "--eps", "0.5", "--images", "1", "--out", res}, 2, "--sentences"},
		{[]string{"attack", "--model", out, "--corpus", tsv, "--method", "gumbel", "--eps", "0.5", "--sentences", "1", "--restarts", "4", "--out", res}, 2, "--restarts is for image models"},
		{[]string{"experiment", "nmt-attack", "--model", out, "--corpus", tsv, "--sentences", "1", "--early-stop=false", "--out", t.TempDir()}, 2, "--early-stop is for image models"},
		{[]string{"attack", "--model", out, "--corpus", tsv, "--method", "gumbel", "--eps", "0.5", "--sentences", "1", "--loss", "nope", "--out", res}, 2, "--loss"},
		{[]string{"attack", "--model", out, "--corpus", tsv, "--method", "flip", "--eps", "0.5", "--sentences", "1", "--tau", "2", "--out", res}, 2, "--tau is read by gumbel only, not by flip"},
		{[]string{"attack", "--model", out, "--corpus", tsv, "--method", "random", "--eps", "0.5", "--sentences", "1", "--loss", "eos-logprob", "--out", res}, 2, "--loss is read by gumbel and embedding only"},
		{[]string{"attack", "--model", out, "--corpus", tsv, "--method", "gumbel", "--eps", "0.5", "--sentences", "1", "--loop=false", "--out", res}, 2, "--loop is read by flip only"},
		{[]string{"experiment", "nmt-attack", "--model", out, "--corpus", tsv, "--sentences", "1", "--methods", "random,embedding", "--beam", "3", "--out", t.TempDir()}, 2, "not by random or embedding"},
		{[]string{"experiment", "nmt-attack", "--model", out, "--corpus", tsv, "--sentences", "1", "--methods", "random", "--flip-budget", "3", "--out", t.TempDir()}, 2, "--flip-budget"},
		{[]string{"experiment", "nmt-attack", "--model", out, "--corpus", tsv, "--sentences", "1", "--methods", "random", "--random-budget", "0", "--out", t.TempDir()}, 2, "lenspec: --random-budget 0: want 1..1000000000\n"},
		{[]string{"attack", "--model", out, "--corpus", tsv, "--method", "flip", "--eps", "0.5", "--sentences", "1", "--split", "train", "--out", res}, 2, "dev or test"},
		{[]string{"translate", "x"}, 2, "--model"},
		{[]string{"translate", "--model", smallModel(t), "x"}, 2, "does not read text"},
		{[]string{"translate", "--model", out, "--batch", "0", "x"}, 2, "--batch"},
		{[]string{"train", "nmt", "--out", t.TempDir(), "--vocab", "10"}, 2, "--vocab 10 must be in 261..65536"},
		// The toy corpus's characters need more than 270 tokens: known
		// once it is read, still a usage error naming the flag.
		{[]string{"train", "nmt", "--out", t.TempDir(), "--corpus", tsv, "--vocab", "270"}, 2, "--vocab 270 is below the"},
		{[]string{"train", "nmt", "--out", t.TempDir(), "--corpus", tsv, "--init", out, "--vocab", "500"}, 2, "--vocab conflicts with --init"},
		{[]string{"train", "nmt", "--out", t.TempDir(), "--corpus", tsv, "--init", out, "--decoder", "32"}, 2, "--decoder conflicts with --init"},
		{[]string{"train", "nmt", "--out", t.TempDir(), "--epochs", "0"}, 2, "epochs"},
		{[]string{"train", "nmt", "--out", t.TempDir(), "--sentence-repeat", "0"}, 2, "--sentence-repeat"},
		{[]string{"train", "nmt", "--out", t.TempDir(), "--sentence-repeat", "2", "--sentences-only"}, 2, "--sentence-repeat"},
		{[]string{"train", "nmt", "--out", t.TempDir(), "--label-smoothing", "1"}, 2, "label smoothing"},
		{[]string{"train", "nmt", "--out", t.TempDir(), "--corpus", filepath.Join(t.TempDir(), "missing.tsv")}, 1, "missing.tsv"},
		{[]string{"train", "nmt", "--out", t.TempDir(), "--ding", tsv}, 1, "sha256"},
		{[]string{"eval", "--model", out, "--corpus", tsv, "--split", "train"}, 2, "test or dev"},
		{[]string{"eval", "--model", out, "--corpus", tsv, "--examples", "-1"}, 2, "examples"},
	} {
		code, _, stderr := runCLI(t, append(c.args, "-q")...)
		if code != c.code || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want exit %d naming %q on one line", c.args, code, stderr, c.code, c.want)
		}
	}
}
