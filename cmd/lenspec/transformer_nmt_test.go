package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nmt"
)

// TestTransformerNMT: lenspec train nmt --arch transformer writes a
// transformer translator (the best dev-BLEU epoch kept), which eval,
// translate and every text attack run on unchanged; each attack's
// adversarial source replays from its text through translate.
func TestTransformerNMT(t *testing.T) {
	tsv := toyCorpus(t)
	out := filepath.Join(t.TempDir(), "tf")
	code, stdout, stderr := runCLI(t, "train", "nmt", "--arch", "transformer", "--out", out, "--corpus", tsv, "--epochs", "12",
		"--d-model", "16", "--nhead", "2", "--encoder-layers", "1", "--decoder-layers", "2", "--dim-feedforward", "32",
		"--vocab", "300", "--batch", "16", "--lr", "3e-3", "--select-dev", "--json", "-q")
	if code != 0 {
		t.Fatalf("train nmt --arch transformer: exit %d: %s", code, stderr)
	}
	var sum nmt.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Out != out {
		t.Fatalf("summary %q: %v", stdout, err)
	}
	m, err := model.Load[float32](out)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := m.Config().Arch.(*model.TransformerTranslatorConfig)
	if !ok || a.DModel != 16 || a.DecoderLayers != 2 || a.Dropout != 0.1 {
		t.Fatalf("trained %s %+v", m.Config().Architecture, m.Config().Arch)
	}
	tr := m.Config().Training
	if byEpoch, _ := tr["dev_bleu_by_epoch"].([]any); len(byEpoch) != 12 || tr["label_smoothing"] != 0.1 || tr["lr"] != 3e-3 {
		t.Fatalf("training record %v", tr)
	}

	// Fine-tuning keeps the architecture and its sizes.
	ft := filepath.Join(t.TempDir(), "ft")
	if code, _, stderr := runCLI(t, "train", "nmt", "--out", ft, "--corpus", tsv, "--init", out, "--epochs", "1", "--batch", "16", "--lr", "1e-3", "-q"); code != 0 {
		t.Fatalf("train nmt --init of a transformer: exit %d: %s", code, stderr)
	}
	if ftm, err := model.Load[float32](ft); err != nil || ftm.Config().Arch.(*model.TransformerTranslatorConfig).DecoderLayers != 2 {
		t.Fatalf("fine-tuned transformer: %v", err)
	}

	code, stdout, stderr = runCLI(t, "eval", "--model", out, "--corpus", tsv, "--examples", "1", "--json", "-q")
	var ev struct {
		BLEU     float64
		Examples []struct{ Source, Output string }
	}
	if err := json.Unmarshal([]byte(stdout), &ev); code != 0 || err != nil || len(ev.Examples) != 1 || ev.BLEU != sum.BLEU {
		t.Fatalf("eval: exit %d, %q (%v, %s); training reported BLEU %v", code, stdout, err, stderr, sum.BLEU)
	}
	// A model this little trained may write invalid UTF-8, which JSON
	// gives as U+FFFD per byte, as []rune does.
	if code, got, _ := runCLI(t, "translate", "--model", out, ev.Examples[0].Source); code != 0 || string([]rune(strings.TrimSpace(got))) != ev.Examples[0].Output {
		t.Fatalf("translate of the first example gives %q, eval showed %q", got, ev.Examples[0].Output)
	}

	// The translator benchmark counts the LSTM's FLOPs: it refuses a
	// transformer in one line (it used to panic).
	if code, _, stderr := runCLI(t, "bench", "--model", out, "--corpus", tsv, "-q"); code != 1 || !strings.HasSuffix(stderr, "not of a transformer-translator\n") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("bench of a transformer: exit %d: %q", code, stderr)
	}

	for _, method := range []string{"flip", "random", "gumbel", "embedding"} {
		res := filepath.Join(t.TempDir(), method+".jsonl")
		code, stdout, stderr = runCLI(t, "attack", "--model", out, "--corpus", tsv, "--method", method, "--eps", "1", "--sentences", "2",
			"--budget", "4", "--max-steps", "30", "--out", res, "--json", "-q")
		if code != 0 {
			t.Fatalf("attack --method %s: exit %d: %s", method, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) != 2 {
			t.Fatalf("attack --method %s: %d records, want 2: %s", method, len(lines), stdout)
		}
		for _, line := range lines {
			var r struct {
				Error     string
				AdvText   string `json:"adv_text"`
				AdvLength int    `json:"adv_length"`
				Stopped   bool
				Witness   string
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil || r.Error != "" {
				t.Fatalf("%s record %q: %v", method, line, err)
			}
			if method == "embedding" {
				if r.Witness == "" {
					t.Fatalf("embedding record without a witness: %s", line)
				}
				continue
			}
			_, tout, _ := runCLI(t, "translate", "--model", out, "--max-steps", "30", "--json", r.AdvText)
			var got struct {
				Length  int
				Stopped bool
			}
			if err := json.Unmarshal([]byte(tout), &got); err != nil || got.Length != r.AdvLength || got.Stopped != r.Stopped {
				t.Fatalf("%s: %q translates to %+v, the attack recorded %d (stopped %v)", method, r.AdvText, got, r.AdvLength, r.Stopped)
			}
		}
	}
}
