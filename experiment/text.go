package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/internal/oneline"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/results"
	"github.com/lenspec/lenspec/safetensors"
)

// Text attack methods (paper §5.2, NMT, and lenspec's own).
const (
	MethodGumbel    = "gumbel"
	MethodEmbedding = "embedding"
	MethodFlip      = "flip"
)

// TextMethods are the text attack methods, in the order runs and tables
// take them.
var TextMethods = []string{MethodRandom, MethodGumbel, MethodEmbedding, MethodFlip}

// TextData is a set of source sentences a text attack draws samples from:
// a translator's corpus split, tokenised by the model.
type TextData struct {
	Ref     DataRef
	Pairs   []corpus.Pair
	Sources [][]int // model.EncodeText of each pair's source
	// Redact keeps the corpus's text out of the records (a corpus whose
	// text may not be copied, corpus.Splits.Restricted): see
	// TextAttackRecord.Redacted.
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

// TextAttackSettings are the settings that change a text attack's result,
// besides the model, data, sample, δ and method. Those a method ignores are
// zero (normalize).
type TextAttackSettings struct {
	MaxLen   int    `json:"max_len"` // K̂ (−1: the original output's length)
	MaxSteps int    `json:"max_steps"`
	Budget   int    `json:"budget"` // samples, iterations or evaluations
	Seed     uint64 `json:"seed"`
	// Loss is the relaxed attacks' objective (attack.Loss); empty is the
	// paper's margin J̃, so records from before the field keep their keys.
	Loss string `json:"loss,omitempty"`
	// Relaxed attacks and flip.
	LR   float64 `json:"lr,omitempty"`
	Tau  float64 `json:"tau,omitempty"`
	Clip float64 `json:"clip,omitempty"`
	// Horizon caps the decoding steps a gradient unrolls (0: MaxSteps).
	Horizon int `json:"horizon,omitempty"`
	// Flip only.
	Beam  int `json:"beam,omitempty"`
	Swaps int `json:"swaps,omitempty"`
	// Loop adds flip's targeted continuations (attack.FlipOptions.Loop).
	Loop bool `json:"loop,omitempty"`
}

// Normalize returns the settings method reads, the rest zero: the form
// records are keyed by, so a setting a method ignores cannot split its
// results.
func (s TextAttackSettings) Normalize(method string) TextAttackSettings {
	switch method {
	case MethodRandom:
		s.LR, s.Tau, s.Clip, s.Beam, s.Swaps, s.Horizon = 0, 0, 0, 0, 0, 0
	case MethodEmbedding:
		s.Tau, s.Beam, s.Swaps = 0, 0, 0
	case MethodGumbel:
		s.Beam, s.Swaps = 0, 0
	case MethodFlip:
		s.LR, s.Tau = 0, 0
	}
	if method != MethodFlip {
		s.Loop = false
	}
	if (method != MethodGumbel && method != MethodEmbedding) || s.Loss == string(attack.LossMargin) {
		s.Loss = ""
	}
	return s
}

// TextAttackRecord is one line of a text attack results file: one
// (sentence, δ, method). Lengths are float64 replays; ids are the model's
// source token ids.
type TextAttackRecord struct {
	SchemaVersion int                `json:"schema_version"`
	Model         string             `json:"model"`
	ModelSHA256   string             `json:"model_sha256"`
	Data          DataRef            `json:"data"`
	Sample        int                `json:"sample"`
	Eps           float64            `json:"eps"`
	Method        string             `json:"method"`
	Settings      TextAttackSettings `json:"settings"`
	SrcText       string             `json:"src_text"`
	SrcIDs        []int              `json:"src_ids,omitempty"`
	RefText       string             `json:"ref_text"`
	// SrcLen is the source's length in tokens.
	SrcLen int `json:"src_len"`
	// Redacted is set for a corpus whose text may not be copied
	// (TextData.Redact): src_text, ref_text, src_ids and adv_text are
	// left out, and the adversarial source is AdvSubs, its substitutions
	// [position, token id] into sentence Sample's source ids, which the
	// corpus restores (ApplySubs).
	Redacted   bool     `json:"redacted,omitempty"`
	AdvSubs    [][2]int `json:"adv_subs,omitempty"`
	K          int      `json:"k"`
	Budget     int      `json:"substitutions"` // ⌈δ·n⌉
	OrigLength int      `json:"orig_length"`
	OrigText   string   `json:"orig_output"`
	// AdvText and AdvIDs are the adversarial source (discrete methods);
	// AdvLength its replayed output length (the cap when Stopped is
	// false), AdvOutput the output's text.
	AdvText      string  `json:"adv_text,omitempty"`
	AdvIDs       []int   `json:"adv_ids,omitempty"`
	AdvLength    int     `json:"adv_length"`
	AdvOutput    string  `json:"adv_output"`
	Stopped      bool    `json:"stopped"`
	Success      bool    `json:"success"`
	MinRelMargin float64 `json:"min_rel_margin"`
	Found32      int     `json:"found_float32_length"`
	Evals        int64   `json:"evals"`
	Steps        int     `json:"steps,omitempty"`
	Pick         string  `json:"pick,omitempty"`
	Seconds      float64 `json:"seconds"`
	// Witness is the embedding attack's input rows (safetensors).
	Witness      string  `json:"witness,omitempty"`
	LengthCounts []int64 `json:"length_counts,omitempty"`
	Error        string  `json:"error,omitempty"`
	// Crashed marks a failure that killed the process (CrashError).
	Crashed bool `json:"crashed,omitempty"`

	// NonFinite and OrigNonFinite mark outputs whose decoding met
	// non-finite logits (see AttackRecord).
	NonFinite     bool `json:"non_finite,omitempty"`
	OrigNonFinite bool `json:"orig_non_finite,omitempty"`
}

var textAttackKey = results.KeyFields("model_sha256", "data", "sample", "eps", "method", "settings")

// TextAttackKey returns the resume key of r.
func TextAttackKey(r TextAttackRecord) string { return mustKey(textAttackKey, r) }

// ReadTextAttackRecords reads a text attack results file, refusing records
// of another schema version.
func ReadTextAttackRecords(path string) ([]TextAttackRecord, error) {
	return readRecords(path, decodeTextAttack)
}

// TextAttackConfig is one text attack run: a method over sentences × δ.
type TextAttackConfig struct {
	Model    *Model
	Data     TextData
	Samples  []int
	Eps      []float64
	Method   string
	Settings TextAttackSettings
	// Batch is how many sentences the relaxed attacks run side by side
	// (random search decodes Batch·8 draws at a time); it changes speed,
	// not results.
	Batch           int
	Out, WitnessDir string
	Shard           Shard
	Progress        Progress
	Logf            func(format string, args ...any)
}

// Validate checks the settings before any work, resolving the step cap
// (0: the model's) and the method's defaults.
func (c *TextAttackConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Model == nil {
		return errors.New("no model")
	}
	if c.Model.D32.Input().Kind != model.Tokens {
		return fmt.Errorf("the %s model does not read token sequences", c.Model.D32.Config().Architecture)
	}
	known := false
	for _, m := range TextMethods {
		known = known || m == c.Method
	}
	if !known {
		bad("method %q: want one of %v", c.Method, TextMethods)
	}
	if len(c.Eps) == 0 {
		bad("no δ given")
	}
	for _, e := range c.Eps {
		if !(e > 0 && e <= 1) {
			bad("δ %v must be in (0, 1] (the fraction of a sentence's tokens that may change)", e)
		}
	}
	s := &c.Settings
	checkRun(bad, c.Model.D32, &s.MaxSteps, s.MaxLen, c.Batch)
	if s.Budget < 1 || s.Budget > 1e9 {
		bad("budget %d must be in 1..1e9", s.Budget)
	}
	if s.Horizon < 0 || s.Horizon > s.MaxSteps {
		bad("gradient horizon %d must be in 0..%d (the step cap)", s.Horizon, s.MaxSteps)
	}
	if s.Horizon == s.MaxSteps {
		s.Horizon = 0 // the same setting: one key
	}
	if _, err := attack.ParseLoss(s.Loss); s.Loss != "" && err != nil {
		errs = append(errs, err)
	}
	switch c.Method {
	case MethodGumbel, MethodEmbedding:
		if err := c.relaxed().Validate(); err != nil {
			errs = append(errs, err)
		}
	case MethodFlip:
		if err := c.flip().Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	*s = s.Normalize(c.Method)
	c.Shard, c.WitnessDir = outputs(c.Shard, c.Out, c.WitnessDir)
	return errors.Join(errs...)
}

func (c *TextAttackConfig) relaxed() attack.RelaxedOptions {
	s := c.Settings
	tau := s.Tau
	if c.Method == MethodEmbedding {
		tau = 1 // unused
	}
	loss := attack.Loss(s.Loss)
	if loss == "" {
		loss = attack.LossMargin
	}
	return attack.RelaxedOptions{Steps: s.Budget, LR: s.LR, Tau: tau, Eps: s.Clip, Loss: loss, MaxSteps: s.MaxSteps, Horizon: s.Horizon}
}

func (c *TextAttackConfig) flip() attack.FlipOptions {
	s := c.Settings
	o := attack.DefaultFlip()
	o.Evals, o.Eps, o.Beam, o.Swaps, o.MaxSteps, o.Horizon, o.Loop = s.Budget, s.Clip, s.Beam, s.Swaps, s.MaxSteps, s.Horizon, s.Loop
	return o
}

func (c *TextAttackConfig) base() TextAttackRecord {
	return TextAttackRecord{SchemaVersion: SchemaVersion, Model: c.Model.Dir, ModelSHA256: c.Model.Digest, Data: c.Data.Ref, Method: c.Method, Settings: c.Settings}
}

// Match reports whether r is a record of this run's experiment (model,
// data, method and settings), for summaries of a file with several.
func (c *TextAttackConfig) Match(r TextAttackRecord) bool {
	return r.ModelSHA256 == c.Model.Digest && r.Data == c.Data.Ref && r.Method == c.Method && r.Settings == c.Settings
}

// RunTextAttack runs every unit of c not yet in its results file, as
// RunAttack does for images: records appended as units finish, failures
// recorded, an interrupted run resumed where it stopped.
func RunTextAttack(ctx context.Context, c TextAttackConfig, emit func(TextAttackRecord) error) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("attack: %w", err)
	}
	if len(c.Data.Sources) == 0 || len(c.Samples) == 0 {
		return errors.New("attack: no data or no samples")
	}
	for _, s := range c.Samples {
		if s < 0 || s >= len(c.Data.Sources) {
			return fmt.Errorf("attack: sample %d outside the %d sentences", s, len(c.Data.Sources))
		}
	}
	f, err := openOut(c.Out, c.Shard, textAttackKey)
	if err != nil {
		return err
	}
	defer f.Close()
	logf(c.Logf, f)
	units := shardUnits(c.Eps, c.Samples, c.Shard, func(sample int, eps float64) string {
		r := c.base()
		r.Sample, r.Eps = sample, eps
		return TextAttackKey(r)
	})
	run := &textRun{c: &c, f: f, emit: emit}
	batch := 1
	if c.Method == MethodGumbel || c.Method == MethodEmbedding {
		batch = c.Batch
	}
	for i := 0; i < len(units); {
		j := i
		var todo []unit
		for ; j < len(units) && units[j].eps == units[i].eps && len(todo) < batch; j++ {
			if f.Done(units[j].key) {
				continue
			}
			if f.Attempts(units[j].key) >= crashLimit {
				if err := run.fail(units[j], crashed(f, units[j].key)); err != nil {
					return err
				}
				continue
			}
			todo = append(todo, units[j])
		}
		i = j
		if len(todo) > 0 {
			if err := run.run(ctx, todo); err != nil {
				return err
			}
		}
	}
	return nil
}

type textRun struct {
	c    *TextAttackConfig
	f    *results.File
	emit func(TextAttackRecord) error
}

// run attacks units of one δ (see batchOrAlone).
func (r *textRun) run(ctx context.Context, us []unit) error {
	return batchOrAlone(ctx, r.f, us, r.attack, r.fail)
}

func (r *textRun) fail(u unit, cause error) error {
	rec := r.c.base()
	rec.Sample, rec.Eps, rec.Error, rec.Crashed = u.sample, u.eps, oneline.Fold(cause.Error()), isCrash(cause)
	rec.SrcText, rec.SrcIDs = r.c.Data.Pairs[u.sample].Src, nonNil(r.c.Data.Sources[u.sample])
	rec.SrcLen = len(rec.SrcIDs)
	if r.c.Data.Redact {
		rec.redact()
	}
	return r.finish(u.key, rec)
}

func (r *textRun) finish(key string, rec TextAttackRecord) error {
	return record(r.f, r.emit, key, rec)
}

func (r *textRun) attack(ctx context.Context, us []unit) error {
	c, m := r.c, r.c.Model
	s := c.Settings
	targets := make([]attack.TextTarget, len(us))
	for i, u := range us {
		var err error
		if targets[i], err = attack.NewTextTarget(ctx, m.D64, c.Data.Sources[u.sample], u.eps, s.MaxLen, s.MaxSteps, s.Seed, uint64(u.sample)); err != nil {
			return fmt.Errorf("sentence %d: %w", u.sample, err)
		}
	}
	progress := func(stage string) func(done, best int) {
		return func(done, best int) {
			if c.Progress != nil {
				c.Progress(stage, done, s.Budget, fmt.Sprintf("longest %d", best))
			}
		}
	}
	var outs []attack.TextOutcome
	var secs []float64
	switch c.Method {
	case MethodRandom, MethodFlip:
		for i, tg := range targets {
			stage := fmt.Sprintf("%s δ=%g sentence %d", c.Method, us[i].eps, us[i].sample)
			start := time.Now()
			var o attack.TextOutcome
			var err error
			if c.Method == MethodRandom {
				o, err = attack.RandomSubstitution(ctx, m.D32, m.D64, tg, attack.RandomOptions{Samples: s.Budget, Batch: c.Batch * 8, MaxSteps: s.MaxSteps, Progress: progress(stage)})
			} else {
				opt := c.flip()
				opt.Progress = progress(stage)
				o, err = attack.Flip(ctx, m.D32, m.D64, tg, opt)
			}
			if err != nil {
				return err
			}
			outs, secs = append(outs, o), append(secs, time.Since(start).Seconds())
		}
	default:
		opt := c.relaxed()
		opt.Progress = func(step, n int) {
			if c.Progress != nil {
				c.Progress(fmt.Sprintf("%s δ=%g, %d sentences", c.Method, us[0].eps, len(us)), step, opt.Steps, fmt.Sprintf("lengthened %d/%d", n, len(us)))
			}
		}
		start := time.Now()
		var err error
		if c.Method == MethodGumbel {
			outs, err = attack.GumbelPGD(ctx, m.D32, m.D64, targets, opt)
		} else {
			outs, err = attack.EmbeddingPGD(ctx, m.D32, m.D64, targets, opt)
		}
		if err != nil {
			return err
		}
		per := time.Since(start).Seconds() / float64(len(us))
		for range us {
			secs = append(secs, per)
		}
	}
	tok := m.D64.Config().Tokenizer
	text := func(ids []int) string {
		t, err := model.DecodeText(tok, ids)
		if err != nil {
			return fmt.Sprintf("(%v)", err)
		}
		return t
	}
	for i, u := range us {
		tg, o := targets[i], outs[i]
		rec := c.base()
		rec.Sample, rec.Eps, rec.K, rec.Budget = u.sample, u.eps, tg.K, tg.Set.Budget
		rec.SrcText, rec.SrcIDs, rec.RefText = c.Data.Pairs[u.sample].Src, nonNil(tg.Set.X), c.Data.Pairs[u.sample].Tgt
		rec.OrigLength, rec.OrigText, rec.OrigNonFinite = len(tg.Original.Tokens), text(tg.Original.Tokens), tg.Original.NonFinite
		rec.AdvLength, rec.AdvOutput, rec.Stopped, rec.NonFinite = len(o.Result.Tokens), text(o.Result.Tokens), o.Result.Stopped, o.Result.NonFinite
		rec.Success, rec.MinRelMargin, rec.Found32 = o.Success, margin(o.Result.MinRelMargin), o.Found32
		rec.Evals, rec.Steps, rec.Pick, rec.Seconds, rec.LengthCounts = o.Evals, o.Steps, o.Pick, secs[i], o.LengthCounts
		rec.SrcLen = len(tg.Set.X)
		if o.Input != nil {
			rec.AdvIDs, rec.AdvText = o.Input, text(o.Input)
		}
		if c.Data.Redact {
			rec.redact()
		}
		if o.Embedded != nil {
			name := witnessName(c.Data.Ref, u.sample, u.eps, c.Method, u.key)
			if err := os.MkdirAll(c.WitnessDir, 0o755); err != nil {
				return recordError{err}
			}
			path := filepath.Join(c.WitnessDir, name+".safetensors")
			e := len(o.Embedded) / len(tg.Set.X)
			f := &safetensors.File{Metadata: map[string]string{"key": u.key, "model_sha256": m.Digest, "src_text": rec.SrcText},
				Tensors: []safetensors.Tensor{safetensors.F64("embedded", []int{len(tg.Set.X), e}, o.Embedded),
					safetensors.I32("src_ids", []int{len(tg.Set.X)}, int32s(tg.Set.X))}}
			if c.Data.Redact { // the sentence is the corpus's: point into it
				f.Metadata["src_text"] = ""
				f.Metadata["sample"] = fmt.Sprint(u.sample)
				f.Tensors = f.Tensors[:1]
			}
			if err := safetensors.WriteFile(path, f); err != nil {
				return recordError{err}
			}
			rec.Witness = path
		}
		if err := r.finish(u.key, rec); err != nil {
			return err
		}
	}
	return nil
}

// redact leaves the corpus's text out of r: the source and reference,
// their ids, and the adversarial source, which becomes its substitutions
// into the source.
func (r *TextAttackRecord) redact() {
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
func (r TextAttackRecord) RedactedSource() string {
	return fmt.Sprintf("%s sentence %d with %d of its %d tokens substituted", r.Data.Split, r.Sample, len(r.AdvSubs), r.SrcLen)
}

// ApplySubs restores a redacted record's adversarial source ids from the
// corpus's source ids of its sentence (model.EncodeText of the pair's
// source), checking they are the ones the record was made from.
func ApplySubs(r TextAttackRecord, src []int) ([]int, error) {
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
