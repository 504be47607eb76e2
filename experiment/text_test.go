package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/model"
)

// tinyTextModel is a small random translator with a tokenizer, saved and
// loaded as experiments load models.
func tinyTextModel(t *testing.T) *Model {
	t.Helper()
	tok, err := bpe.Train([]string{" das haus ist klein.", " the house is small.", " ein kleines haus.", " a small house."}, bpe.TrainOptions{VocabSize: 300, MinFrequency: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.DefaultTranslatorConfig(tok.Size(), bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID)
	a := cfg.Arch.(*model.TranslatorConfig)
	a.Embedding, a.EncoderHidden, a.DecoderHidden, a.Attention, a.Combine = 8, 6, 10, 8, 8
	cfg.Tokenizer, cfg.MaxSteps = tok, 30
	m, err := model.NewTranslator[float32](&cfg, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range m.Params() {
		for i := range p.W.Data {
			p.W.Data[i] = float32(0.7 * rng.NormFloat64())
		}
	}
	dir := t.TempDir()
	if err := model.Save[float32](dir, m); err != nil {
		t.Fatal(err)
	}
	mod, err := LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// toyPairs is the toy corpus of the text experiment tests.
var toyPairs = []corpus.Pair{{Src: "Das Haus ist klein.", Tgt: "The house is small."}, {Src: "Ein kleines Haus.", Tgt: "A small house."}, {Src: "Das Haus.", Tgt: "The house."}}

// toyTranslations is pairs as split of a corpus named "toy", with m's
// translations.
func toyTranslations(t *testing.T, m *Model, pairs []corpus.Pair, split string) TextData {
	t.Helper()
	data, err := Translations(pairs, "toy", split, 1, m.D32)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRunTextAttack: every method runs through the runner, its records
// carry the texts and ids the issue names and stay in the set, a rerun
// resumes without redoing work, and the summary draws its figure and
// table.
func TestRunTextAttack(t *testing.T) {
	m := tinyTextModel(t)
	data := toyTranslations(t, m, toyPairs, "dev")
	dir := t.TempDir()
	out := filepath.Join(dir, "nmt.jsonl")
	budgets := map[string]int{MethodRandom: 40, MethodGumbel: 6, MethodEmbedding: 6, MethodFlip: 40}
	var all []AttackRecord
	for _, method := range TextMethods {
		c := AttackConfig{Model: m, Data: data, Samples: []int{0, 1, 2}, Eps: []float64{0.5, 1}, Method: method, Batch: 2, Out: out,
			Settings: AttackSettings{MaxLen: -1, Budget: budgets[method], Seed: 1, LR: 0.05, Tau: 1, Clip: 1, Beam: 2, Swaps: 8}}
		var got []AttackRecord
		if err := RunAttack(context.Background(), c, func(r AttackRecord) error { got = append(got, r); return nil }); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if len(got) != 6 {
			t.Fatalf("%s: %d records, want 6", method, len(got))
		}
		for _, r := range got {
			if r.Error != "" {
				t.Fatalf("%s: %s", method, r.Error)
			}
			if r.SrcText == "" || len(r.SrcIDs) == 0 || r.OrigText == "" && r.OrigLength > 0 {
				t.Fatalf("%s: record lacks the source: %+v", method, r)
			}
			if method == MethodEmbedding {
				if r.Witness == "" || r.AdvIDs != nil {
					t.Fatalf("embedding: witness %q, adv ids %v", r.Witness, r.AdvIDs)
				}
				continue
			}
			changed := 0
			for i, id := range r.AdvIDs {
				if id != r.SrcIDs[i] {
					changed++
				}
				if id < 4 {
					t.Fatalf("%s: special token %d in the adversarial source", method, id)
				}
			}
			if len(r.AdvIDs) != len(r.SrcIDs) || changed > r.Budget || r.AdvText == "" {
				t.Fatalf("%s: %d of %d changed (budget %d), text %q", method, changed, len(r.AdvIDs), r.Budget, r.AdvText)
			}
			// The saved text reproduces the ids, and they the output.
			if ids := model.EncodeText(m.D32.Config().Tokenizer, r.AdvText); !slices.Equal(ids, r.AdvIDs) {
				t.Fatalf("%s: adv text %q encodes to %v, recorded %v", method, r.AdvText, ids, r.AdvIDs)
			}
			tr, err := model.Translate(context.Background(), m.D64, []string{r.AdvText}, r.Settings.MaxSteps)
			if err != nil || tr[0].Length != r.AdvLength || tr[0].Stopped != r.Stopped {
				t.Fatalf("%s: %q translates to %d tokens (%v), recorded %d", method, r.AdvText, tr[0].Length, err, r.AdvLength)
			}
		}
		// A rerun finds everything done.
		n := 0
		if err := RunAttack(context.Background(), c, func(AttackRecord) error { n++; return nil }); err != nil || n != 0 {
			t.Fatalf("%s: rerun made %d records (%v)", method, n, err)
		}
		all = append(all, got...)
	}
	recs, err := ReadAttackRecords(out)
	if err != nil || len(recs) != len(all) {
		t.Fatalf("%d records read back (%v), %d written", len(recs), err, len(all))
	}
	sum, err := SummariseTextAttacks(recs, dir, "toy")
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Rows) != 8 || !strings.Contains(sum.Table, "gumbel") || sum.Longest == nil {
		t.Fatalf("summary %+v", sum)
	}
	for _, p := range []string{sum.FigurePNG, sum.FigureSVG, sum.TableFile} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", p, err)
		}
	}
	// Bad configurations are refused before any work.
	for _, bad := range []AttackConfig{
		{Model: m, Data: data, Samples: []int{0}, Eps: []float64{1.5}, Method: MethodRandom, Batch: 1, Out: out, Settings: AttackSettings{Budget: 1}},
		{Model: m, Data: data, Samples: []int{0}, Eps: []float64{0.5}, Method: "nope", Batch: 1, Out: out, Settings: AttackSettings{Budget: 1}},
		{Model: m, Data: data, Samples: []int{7}, Eps: []float64{0.5}, Method: MethodRandom, Batch: 1, Out: out, Settings: AttackSettings{Budget: 1}},
	} {
		if err := RunAttack(context.Background(), bad, nil); err == nil {
			t.Errorf("%+v: no error", bad.Method)
		}
	}
}

// TestRedactedTextAttack: on a corpus whose text may not be copied the
// records hold no text of it — no source, reference or adversarial
// sentence, no source ids — and the adversarial source is restored
// exactly from the corpus by ApplySubs: the ids an unredacted run of the
// same attack records.
func TestRedactedTextAttack(t *testing.T) {
	m := tinyTextModel(t)
	pairs := toyPairs[:2]
	data := toyTranslations(t, m, pairs, "test")
	var redOut string
	run := func(redact bool) []AttackRecord {
		d := data
		d.Redact = redact
		var got []AttackRecord
		c := AttackConfig{Model: m, Data: d, Samples: []int{0, 1}, Eps: []float64{1}, Method: MethodFlip, Batch: 2,
			Out: filepath.Join(t.TempDir(), "r.jsonl"), Settings: AttackSettings{MaxLen: -1, Budget: 40, Seed: 1, Clip: 1, Beam: 2, Swaps: 8}}
		if err := RunAttack(context.Background(), c, func(r AttackRecord) error { got = append(got, r); return nil }); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(c.Out)
		if err != nil {
			t.Fatal(err)
		}
		if redact {
			redOut = c.Out
		}
		for _, p := range pairs {
			if redact && (strings.Contains(string(raw), p.Src) || strings.Contains(string(raw), p.Tgt) || strings.Contains(string(raw), "src_ids")) {
				t.Fatalf("a redacted results file quotes the corpus: %s", raw)
			}
		}
		return got
	}
	plain, red := run(false), run(true)
	for i, r := range red {
		if !r.Redacted || r.SrcText != "" || r.RefText != "" || r.AdvText != "" || r.SrcIDs != nil || r.AdvIDs != nil {
			t.Fatalf("record %d not redacted: %+v", i, r)
		}
		if r.SrcLen != len(plain[i].SrcIDs) || r.AdvLength != plain[i].AdvLength {
			t.Fatalf("record %d: redacted %d tokens → %d, plain %d → %d", i, r.SrcLen, r.AdvLength, len(plain[i].SrcIDs), plain[i].AdvLength)
		}
		ids, err := ApplySubs(r, data.Sources[r.Sample])
		if err != nil || !slices.Equal(ids, plain[i].AdvIDs) {
			t.Fatalf("record %d: restored %v (%v), plain run %v", i, ids, err, plain[i].AdvIDs)
		}
	}
	if _, err := ApplySubs(red[0], data.Sources[0][1:]); err == nil {
		t.Fatal("substitutions applied to a source of another length")
	}
	// Redacted records have no src_ids: they still merge as text attack
	// records, every field kept (they were once read as image attack
	// records, and the merge dropped every text field).
	merged := filepath.Join(t.TempDir(), "merged.jsonl")
	rep, err := Merge(merged, []string{redOut}, JoinOptions{})
	if err != nil || rep.Kind != "text-attack" || rep.Records != len(red) {
		t.Fatalf("merge of redacted records: %+v, %v", rep, err)
	}
	back, err := ReadAttackRecords(merged)
	if err != nil || len(back) != len(red) {
		t.Fatalf("%d merged records (%v), want %d", len(back), err, len(red))
	}
	orig, err := ReadAttackRecords(redOut)
	if err != nil {
		t.Fatal(err)
	}
	for i := range orig {
		a, _ := json.Marshal(back[i])
		b, _ := json.Marshal(orig[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("merged record %d differs:\n%s\n%s", i, a, b)
		}
	}
	// The summary names a redacted sentence and counts its substitutions
	// rather than printing the id lists.
	sum, err := SummariseTextAttacks(red, t.TempDir(), "toy")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Longest == nil || !sum.Longest.Redacted || sum.Longest.AdvSubs == nil || strings.Contains(sum.Table, "[[") ||
		!strings.Contains(sum.Table, "substitutions in the record") || !strings.Contains(sum.Table, "test sentence") {
		t.Fatalf("summary of redacted records: %+v\n%s", sum.Longest, sum.Table)
	}
}

// TestMergeTextPerEps: one run may give a method other settings at
// another δ (random search's budget), and its files merge; two settings
// at one (method, δ) are two experiments, and the merge refuses them.
func TestMergeTextPerEps(t *testing.T) {
	m := tinyTextModel(t)
	data := toyTranslations(t, m, toyPairs[:2], "test")
	dir := t.TempDir()
	run := func(name string, eps float64, budget int) string {
		c := AttackConfig{Model: m, Data: data, Samples: []int{0, 1}, Eps: []float64{eps}, Method: MethodRandom, Batch: 2,
			Out: filepath.Join(dir, name), Settings: AttackSettings{MaxLen: -1, Budget: budget, Seed: 1}}
		if err := RunAttack(context.Background(), c, nil); err != nil {
			t.Fatal(err)
		}
		return c.Out
	}
	a, b, c := run("a.jsonl", 1, 40), run("b.jsonl", 0.5, 20), run("c.jsonl", 1, 20)
	rep, err := Merge(filepath.Join(dir, "ab.jsonl"), []string{a, b}, JoinOptions{})
	if err != nil || rep.Records != 4 {
		t.Fatalf("budgets per δ: %+v, %v", rep, err)
	}
	if _, err := Merge(filepath.Join(dir, "ac.jsonl"), []string{a, c}, JoinOptions{}); err == nil || !strings.Contains(err.Error(), "another experiment") {
		t.Fatalf("two budgets at one δ merged: %v", err)
	}
}

// TestTextLossSetting: --loss reaches the relaxed attacks and their keys;
// the margin loss keeps the key records had before the setting existed,
// and a method without a loss drops it.
func TestTextLossSetting(t *testing.T) {
	m := tinyTextModel(t)
	data := toyTranslations(t, m, toyPairs, "dev")
	cfg := func(method, loss string) AttackConfig {
		c := AttackConfig{Model: m, Data: data, Samples: []int{0}, Eps: []float64{1}, Method: method, Batch: 1, Out: filepath.Join(t.TempDir(), "r.jsonl"),
			Settings: AttackSettings{MaxLen: -1, Budget: 4, Seed: 1, Loss: loss, LR: 0.05, Tau: 1, Clip: 1, Beam: 2, Swaps: 4}}
		if err := c.Validate(); err != nil {
			t.Fatalf("%s %q: %v", method, loss, err)
		}
		return c
	}
	key := func(c AttackConfig) string {
		return AttackKey(AttackRecord{Model: "m", Data: data.Ref, Eps: 1, Method: c.Method, Settings: c.Settings})
	}
	for _, tc := range []struct {
		method, loss string
		want         string // the setting kept
		sameAsMargin bool
	}{
		{MethodGumbel, "margin", "", true},
		{MethodGumbel, "eos-logprob", "eos-logprob", false},
		{MethodEmbedding, "eos-logprob", "eos-logprob", false},
		{MethodFlip, "eos-logprob", "", true},
		{MethodRandom, "eos-logprob", "", true},
	} {
		c, base := cfg(tc.method, tc.loss), cfg(tc.method, "")
		if c.Settings.Loss != tc.want || (key(c) == key(base)) != tc.sameAsMargin {
			t.Errorf("%s %q: setting %q, key equal to the margin's %v", tc.method, tc.loss, c.Settings.Loss, key(c) == key(base))
		}
		if r := pgdOptions(c.Settings); (tc.method == MethodGumbel || tc.method == MethodEmbedding) && string(r.Loss) != tc.loss {
			t.Errorf("%s %q: the attack runs with loss %q", tc.method, tc.loss, r.Loss)
		}
	}
	bad := cfg(MethodRandom, "")
	bad.Settings.Loss = "nope"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("loss nope: %v", err)
	}
}

// TestTextSummaryFailed: a failed sentence shows in its own column, not
// only as a lower success rate.
func TestTextSummaryFailed(t *testing.T) {
	ok := AttackRecord{AttackText: &AttackText{}, Sample: 1, Eps: 1, Method: MethodFlip, OrigLength: 5, AdvLength: 9, Stopped: true, Success: true, MinRelMargin: 0.1, Evals: 3}
	bad := AttackRecord{AttackText: &AttackText{}, Sample: 2, Eps: 1, Method: MethodFlip, Error: "the process died 2 times"}
	for _, tc := range []struct {
		recs []AttackRecord
		want bool
	}{{[]AttackRecord{ok}, false}, {[]AttackRecord{ok, bad}, true}} {
		sum, err := SummariseTextAttacks(tc.recs, t.TempDir(), "t")
		if err != nil {
			t.Fatal(err)
		}
		header := strings.SplitN(sum.Table, "\n", 2)[0]
		if strings.Contains(header, "failed") != tc.want || tc.want && !strings.Contains(sum.Table, "|      1 |") {
			t.Errorf("%d records, failed column %v:\n%s", len(tc.recs), tc.want, sum.Table)
		}
	}
}

// TestCorpusText: a corpus split as attack data, named by the corpus's
// format and content, redacted where the corpus asks; no other split.
func TestCorpusText(t *testing.T) {
	m := tinyTextModel(t)
	sp := &corpus.Splits{Dev: []corpus.Pair{{Src: "das haus", Tgt: "the house"}}, Test: []corpus.Pair{{Src: "der hund", Tgt: "the dog"}, {Src: "die katze", Tgt: "the cat"}},
		Format: "tsv", SHA256: strings.Repeat("ab", 32), Restricted: true}
	for split, want := range map[string][]corpus.Pair{"test": sp.Test, "dev": sp.Dev} {
		d, err := CorpusText(sp, split, 3, m.D32)
		if err != nil {
			t.Fatal(err)
		}
		if d.Ref != (DataRef{Name: "tsv:abababababab", Split: split, Seed: 3}) || !slices.Equal(d.Pairs, want) || len(d.Sources) != len(want) || !d.Redact {
			t.Errorf("%s: %+v", split, d)
		}
	}
	if _, err := CorpusText(sp, "train", 3, m.D32); err == nil {
		t.Error("the train split given as attack data")
	}
}
