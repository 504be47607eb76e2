package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
)

// TextData is a set of source sentences a text attack draws samples from:
// a translator's corpus split, tokenised by the model.
type TextData struct {
	Ref     DataRef
	Pairs   []corpus.Pair
	Sources [][]int // model.EncodeText of each pair's source
	// Redact keeps the corpus's text out of the records (a corpus whose
	// text may not be copied, corpus.Splits.Restricted): see
	// AttackText.Redacted.
	Redact bool
}

// Translations is a corpus split as text-attack data for model d.
func Translations(pairs []corpus.Pair, name, split string, seed uint64, d model.Decoder[float32]) (TextData, error) {
	tok := d.Config().Tokenizer
	if tok == nil || d.Input().Kind != model.Tokens {
		return TextData{}, fmt.Errorf("the %s model does not read text", d.Config().Architecture)
	}
	td := TextData{Ref: DataRef{Name: name, Split: split, Seed: seed}, Pairs: pairs}
	for _, p := range pairs {
		td.Sources = append(td.Sources, model.EncodeText(tok, p.Src))
	}
	return td, nil
}

// CorpusText is split "test" or "dev" of a translator's corpus sp (read
// with split seed seed) as text-attack data for model d: named by the
// corpus's format and content, its text kept out of the records where the
// corpus asks for it (corpus.Splits.Restricted).
func CorpusText(sp *corpus.Splits, split string, seed uint64, d model.Decoder[float32]) (TextData, error) {
	pairs := sp.Test
	switch split {
	case "test":
	case "dev":
		pairs = sp.Dev
	default:
		return TextData{}, fmt.Errorf("split %q: a text model's sentences come from dev or test", split)
	}
	data, err := Translations(pairs, sp.Format+":"+sp.SHA256[:12], split, seed, d)
	data.Redact = sp.Restricted
	return data, err
}

// Reference identifies the sentences in records.
func (d TextData) Reference() DataRef { return d.Ref }

// checkSamples refuses a sample outside the sentences.
func (d TextData) checkSamples(samples []int) error {
	if len(d.Sources) == 0 {
		return errors.New("no data or no samples")
	}
	for _, s := range samples {
		if s < 0 || s >= len(d.Sources) {
			return fmt.Errorf("sample %d outside the %d sentences", s, len(d.Sources))
		}
	}
	return nil
}

// checkTextEps checks a text attack's δ grid: fractions of a sentence's
// tokens.
func checkTextEps(bad func(string, ...any), eps []float64) {
	if len(eps) == 0 {
		bad("no δ given")
	}
	for _, e := range eps {
		if !(e > 0 && e <= 1) {
			bad("δ %v must be in (0, 1] (the fraction of a sentence's tokens that may change)", e)
		}
	}
}

// checkTextSettings checks the settings of a text attack of any method
// besides the budget: the gradient horizon (the step cap's is 0: one
// key) and the loss.
func checkTextSettings(bad func(string, ...any), s *AttackSettings) {
	if s.Horizon < 0 || s.Horizon > s.MaxSteps {
		bad("gradient horizon %d must be in 0..%d (the step cap)", s.Horizon, s.MaxSteps)
	}
	if s.Horizon == s.MaxSteps {
		s.Horizon = 0 // the same setting: one key
	}
	if _, err := attack.ParseLoss(s.Loss); s.Loss != "" && err != nil {
		bad("%v", err)
	}
}

// failed gives a failed text unit its sentence.
func (d TextData) failed(rec *AttackRecord, sample int) {
	rec.AttackText = &AttackText{SrcText: d.Pairs[sample].Src, SrcIDs: nonNil(d.Sources[sample])}
	rec.SrcLen = len(rec.SrcIDs)
	if d.Redact {
		rec.redact()
	}
}

// targets builds the sentences' targets: each sentence's substitutions,
// or its embedding ball for a method that attacks embeddings.
func (d TextData) targets(ctx context.Context, c *AttackConfig, meth Method, us []unit) (batch, error) {
	m, s := c.Model, c.Settings
	srcs, budgets := make([][]int, len(us)), make([]int, len(us))
	if meth.Embedded {
		b := targetBatch[[]float64]{targets: make([]attack.Target[[]float64], len(us))}
		for i, u := range us {
			x := d.Sources[u.sample]
			// The free rows come first from the target's own stream, as
			// every other choice made for it.
			set, err := attack.NewEmbeddings(m.D32, x, u.eps, math.Inf(1), rand.New(rand.NewPCG(s.Seed, uint64(u.sample))))
			if err == nil {
				b.targets[i], err = attack.NewTarget[[]float64](ctx, m.D64, set, s.MaxLen, s.MaxSteps, s.Seed, uint64(u.sample))
			}
			if err != nil {
				return nil, fmt.Errorf("sentence %d: %w", u.sample, err)
			}
			srcs[i], budgets[i] = x, len(set.Free)
		}
		b.record = func(i int, rec *AttackRecord, o attack.Outcome[[]float64]) error {
			d.record(c, rec, b.targets[i].Original, srcs[i], budgets[i], o.Replayed, o.Pick, nil)
			return d.embeddingWitness(c, rec, us[i], srcs[i], o.Input)
		}
		return b, nil
	}
	b := targetBatch[[]int]{targets: make([]attack.Target[[]int], len(us))}
	for i, u := range us {
		set, err := attack.NewSubstitutions(m.D64, d.Sources[u.sample], u.eps)
		if err == nil {
			b.targets[i], err = attack.NewTarget[[]int](ctx, m.D64, set, s.MaxLen, s.MaxSteps, s.Seed, uint64(u.sample))
		}
		if err != nil {
			return nil, fmt.Errorf("sentence %d: %w", u.sample, err)
		}
		srcs[i], budgets[i] = set.X, set.Budget
	}
	b.record = func(i int, rec *AttackRecord, o attack.Outcome[[]int]) error {
		d.record(c, rec, b.targets[i].Original, srcs[i], budgets[i], o.Replayed, o.Pick, o.Input)
		return nil
	}
	return b, nil
}

// record fills in a text unit's part of its record: the sentence, the
// original and adversarial outputs' texts, and the adversarial source
// (ids: nil for an attack on embeddings).
func (d TextData) record(c *AttackConfig, rec *AttackRecord, orig model.Result, src []int, budget int, o attack.Replayed, pick string, ids []int) {
	tok := c.Model.D64.Config().Tokenizer
	text := func(ids []int) string {
		t, err := model.DecodeText(tok, ids)
		if err != nil {
			return fmt.Sprintf("(%v)", err)
		}
		return t
	}
	p := d.Pairs[rec.Sample]
	rec.AttackText = &AttackText{SrcText: p.Src, SrcIDs: nonNil(src), RefText: p.Tgt, SrcLen: len(src), Budget: budget,
		OrigText: text(orig.Tokens), AdvOutput: text(o.Result.Tokens), Steps: o.Steps, Pick: pick}
	if ids != nil {
		rec.AdvIDs, rec.AdvText = ids, text(ids)
	}
	if d.Redact {
		rec.redact()
	}
}

// embeddingWitness writes the embedding attack's input rows, with the
// source they stand for (its position in the corpus when redacted).
func (d TextData) embeddingWitness(c *AttackConfig, rec *AttackRecord, u unit, src []int, embedded []float64) error {
	name := witnessName(d.Ref, u.sample, u.eps, c.Method, u.key)
	if err := os.MkdirAll(c.WitnessDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(c.WitnessDir, name+".safetensors")
	e := len(embedded) / len(src)
	f := &safetensors.File{Metadata: map[string]string{"key": u.key, "model_sha256": c.Model.Digest, "src_text": rec.SrcText},
		Tensors: []safetensors.Tensor{safetensors.F64("embedded", []int{len(src), e}, embedded),
			safetensors.I32("src_ids", []int{len(src)}, int32s(src))}}
	if d.Redact { // the sentence is the corpus's: point into it
		f.Metadata["src_text"] = ""
		f.Metadata["sample"] = fmt.Sprint(u.sample)
		f.Tensors = f.Tensors[:1]
	}
	if err := safetensors.WriteFile(path, f); err != nil {
		return err
	}
	rec.Witness = path
	return nil
}

// redact leaves the corpus's text out of r: the source and reference,
// their ids, and the adversarial source, which becomes its substitutions
// into the source.
func (r *AttackRecord) redact() {
	if r.AdvIDs != nil {
		r.AdvSubs = [][2]int{}
		for i, id := range r.AdvIDs {
			if i >= len(r.SrcIDs) || id != r.SrcIDs[i] {
				r.AdvSubs = append(r.AdvSubs, [2]int{i, id})
			}
		}
	}
	r.SrcText, r.RefText, r.AdvText = "", "", ""
	r.SrcIDs, r.AdvIDs = nil, nil
	r.Redacted = true
}

// RedactedSource describes a redacted record's adversarial source
// without quoting the corpus: its sentence, and how many of its tokens
// the substitutions AdvSubs change.
func (r AttackRecord) RedactedSource() string {
	return fmt.Sprintf("%s sentence %d with %d of its %d tokens substituted", r.Data.Split, r.Sample, len(r.AdvSubs), r.SrcLen)
}

// ApplySubs restores a redacted record's adversarial source ids from the
// corpus's source ids of its sentence (model.EncodeText of the pair's
// source), checking they are the ones the record was made from.
func ApplySubs(r AttackRecord, src []int) ([]int, error) {
	if len(src) != r.SrcLen {
		return nil, fmt.Errorf("sentence %d has %d source tokens, the record %d: another corpus or tokenizer", r.Sample, len(src), r.SrcLen)
	}
	out := append([]int(nil), src...)
	for _, s := range r.AdvSubs {
		if s[0] < 0 || s[0] >= len(out) {
			return nil, fmt.Errorf("sentence %d: substitution at position %d of %d", r.Sample, s[0], len(out))
		}
		out[s[0]] = s[1]
	}
	return out, nil
}

func int32s(x []int) []int32 {
	out := make([]int32, len(x))
	for i, v := range x {
		out[i] = int32(v)
	}
	return out
}
