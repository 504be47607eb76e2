package experiment

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/internal/oneline"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/results"
	"github.com/spf13/pflag"
)

// ExhaustRecord is one sentence's exact search over its one-substitution
// neighbours (attack.ExhaustSubstitutions), as lenspec bound and verify
// write it for a translator.
type ExhaustRecord struct {
	SchemaVersion int `json:"schema_version"`
	// Kind is "exhaust": it tells these records from the others
	// (FileKind), whose fields they partly share.
	Kind        string  `json:"kind"`
	Model       string  `json:"model"`
	ModelSHA256 string  `json:"model_sha256"`
	Data        DataRef `json:"data"`
	Sample      int     `json:"sample"`
	// Mode is "bound" (the longest output) or "verify" (ℓ ≤ MaxLen?).
	Mode   string `json:"mode"`
	MaxLen *int   `json:"max_len"` // null in bound mode: part of the key

	// MaxSteps is the decoding cap: the model's or --max-steps in bound
	// mode, MaxLen+1 in verify mode.
	MaxSteps int `json:"max_steps"`
	// Source is the sentence (omitted for a corpus whose text may not be
	// copied), SourceIDs its tokens and CleanLength its own output's length.
	Source      string `json:"source,omitempty"`
	SourceIDs   []int  `json:"source_ids"`
	CleanLength int    `json:"clean_length"`
	// Verdict is verify's: robust, vulnerable or unknown.
	Verdict string `json:"verdict,omitempty"`
	// Length is the witness's output length (bound: the longest over all
	// candidates); Stopped whether it ended with eos within the cap.
	Length  int  `json:"length"`
	Stopped bool `json:"stopped"`
	// Substitution is the witness (nil: none).
	Substitution *Substitution `json:"substitution,omitempty"`
	// Replay is the witness decoded in float64: its length and smallest
	// relative top-2 margin; Tie is set below model.RelTieMargin.
	ReplayLength    *int     `json:"replay_length,omitempty"`
	ReplayRelMargin *float64 `json:"replay_rel_margin,omitempty"`
	Tie             bool     `json:"tie,omitempty"`
	Candidates      int      `json:"candidates"`
	Decoded         int      `json:"decoded"`
	Pruned          int      `json:"pruned"`
	NonFinite       int      `json:"nonfinite,omitempty"`
	Seconds         float64  `json:"seconds"`
	// Error is why the sentence has no result (Crashed: its process died
	// crashLimit times in it); the run goes on with the next sentence.
	Error   string `json:"error,omitempty"`
	Crashed bool   `json:"crashed,omitempty"`
}

// exhaustKind is ExhaustRecord.Kind.
const exhaustKind = "exhaust"

// exhaustKey is what an ExhaustRecord answers: the model, the sentence and
// every setting of the search, so that a rerun into the same file skips it
// and a changed setting does the new work.
var exhaustKey = results.KeyFields("kind", "model_sha256", "data", "sample", "mode", "max_len", "max_steps")

// Substitution is one source token replaced, by position and by id and
// string, and the substituted source (its text omitted where the source's
// is, or where the ids are not a text: attack.Textual).
type Substitution struct {
	Position int    `json:"position"`
	From     int    `json:"from_id"`
	To       int    `json:"to_id"`
	FromText string `json:"from"`
	ToText   string `json:"to"`
	IDs      []int  `json:"source_ids"`
	Text     string `json:"source,omitempty"`
}

// exhaustFlags are the flags of lenspec verify and bound a translator
// reads; any other given is refused (an image verifier's setting would
// otherwise look used).
var exhaustFlags = []string{"model", "sentences", "index", "split", "seed", "text", "text-file", "out", "max-len", "max-steps"}

// RegisterTextFlags adds the sentence selection of a translator's exact
// search (--sentences, --text, --text-file) to verify's or bound's flags.
func (f *VerifyFlags) RegisterTextFlags(fs *pflag.FlagSet) {
	fs.IntVar(&f.Sentences, "sentences", 0, "a translator: this many sentences of --split, drawn at random with --seed")
	fs.StringArrayVar(&f.Texts, "text", nil, "a translator: a source sentence of your own (repeatable)")
	fs.StringVar(&f.TextFile, "text-file", "", "a translator: a file of your own source sentences, one per line")
}

// Translator reports whether f's model reads text, from its config.json
// (false when it cannot be read: loading the model reports that).
func (f *VerifyFlags) Translator() bool { return checkVerifiable(f.Model) != nil }

// RunExhaust is lenspec bound (verdict false) or verify (true) on a
// translator: for each sentence picked, the exact search over every
// source with one token substituted, each record appended to --out (if
// given; a sentence with the same settings already there is skipped) and
// passed to emit. Flags of the image verifier are refused.
func (f *VerifyFlags) RunExhaust(ctx context.Context, env Env, verdict bool, emit func(ExhaustRecord) error) error {
	for _, name := range []string{"eps", "images", "image", "input", "data-seed", "spec", "shard"} {
		if env.Changed(name) {
			if name == "eps" {
				return SettingsError{fmt.Errorf("--eps: a translator's search is over one substitution; it takes no radius")}
			}
			return SettingsError{fmt.Errorf("--%s is for image models; %s is a translator", name, f.Model)}
		}
	}
	if name, ok := firstChangedExcept(env, exhaustFlags); ok {
		return SettingsError{fmt.Errorf("--%s is the image verifier's; %s is a translator (its flags: --%s)", name, f.Model, strings.Join(exhaustFlags, ", --"))}
	}
	if !verdict && env.Changed("max-len") {
		return SettingsError{fmt.Errorf("--max-len: a translator's bound is exact, up to --max-steps; it tries no K̂")}
	}
	if f.MaxSteps < 0 || f.MaxSteps > model.MaxStepCap || f.MaxLen > model.MaxStepCap-1 {
		return SettingsError{fmt.Errorf("--max-steps and --max-len: 0..%d", model.MaxStepCap)}
	}
	m, err := LoadModel(f.Model)
	if err != nil {
		return err
	}
	sel := TextSelection{Sentences: f.Sentences, Indices: f.Indices, Split: f.Split, Seed: f.Seed, Texts: f.Texts, File: f.TextFile}
	if err := sel.ValidateFlags(env.Changed); err != nil {
		return err
	}
	data, samples, err := sel.Select(m)
	if err != nil {
		return err
	}
	var out *results.File
	if f.Out != "" {
		if out, err = openOut(f.Out, Shard{}, exhaustKey); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		defer out.Close()
	}
	cfg := m.D32.Config()
	for _, i := range samples {
		x := data.Sources[i]
		cleanLength := func() (int, error) {
			clean, err := model.Decode(ctx, m.D64, model.Batch[float64]{Tokens: [][]int{x}}, f.MaxSteps)
			if err != nil {
				return 0, err
			}
			return len(clean[0].Tokens), nil
		}
		rec := ExhaustRecord{SchemaVersion: SchemaVersion, Kind: exhaustKind, Model: f.Model, ModelSHA256: m.Digest, Data: data.Ref, Sample: i, Mode: "bound",
			SourceIDs: x, CleanLength: -1, MaxSteps: stepCap(f.MaxSteps, m)}
		if !data.Redact {
			rec.Source = data.Pairs[i].Src
		}
		opt := attack.ExhaustOptions{MaxLen: -1, MaxSteps: f.MaxSteps}
		if verdict {
			k := f.MaxLen
			if k < 0 { // K̂ defaults to the sentence's own output's length
				if rec.CleanLength, err = cleanLength(); err != nil {
					return err
				}
				k = rec.CleanLength
			}
			opt.MaxLen, rec.Mode, rec.MaxLen, rec.MaxSteps = k, "verify", &k, k+1
		}
		key := ""
		if out != nil {
			// The key does not read the clean length: a sentence already
			// recorded is skipped before its clean decode in bound mode.
			if key = mustKey(exhaustKey, rec); out.Done(key) {
				continue // recorded by an earlier run into --out
			}
		}
		if rec.CleanLength < 0 {
			if rec.CleanLength, err = cleanLength(); err != nil {
				return err
			}
		}
		var e attack.Exhaustion
		switch {
		case out != nil && out.Attempts(key) >= crashLimit:
			err = crashed(out, key)
		case out != nil:
			err = guard(ctx, out, []string{key}, func() error {
				var err error
				e, err = attack.ExhaustSubstitutions(ctx, m.D32, x, opt)
				return err
			})
		default:
			e, err = attack.ExhaustSubstitutions(ctx, m.D32, x, opt)
		}
		if ctx.Err() != nil {
			return ctx.Err() // interrupted: nothing to record
		}
		if err != nil {
			// A failing sentence is recorded, and the run goes on.
			rec.Error, rec.Crashed = oneline.Fold(fmt.Sprintf("sentence %d: %v", i, err)), isCrash(err)
			if err := appendExhaust(out, key, rec, emit); err != nil {
				return err
			}
			continue
		}
		rec.Length, rec.Stopped = e.Length, e.Stopped
		rec.Candidates, rec.Decoded, rec.Pruned, rec.NonFinite, rec.Seconds = e.Candidates, e.Decoded, e.Pruned, e.NonFinite, e.Seconds
		if e.Position >= 0 {
			s := &Substitution{Position: e.Position, From: x[e.Position], To: e.Token,
				FromText: cfg.Token(x[e.Position]), ToText: cfg.Token(e.Token), IDs: slices.Clone(e.Witness)}
			// The set holds every token sequence, texts or not (a byte token
			// may make a control character): the text is given only when it
			// encodes back to the same ids, so that translate replays it.
			if textual := attack.Textual(cfg); !data.Redact && textual != nil && textual(e.Witness) {
				s.Text, _ = model.DecodeText(cfg.Tokenizer, e.Witness)
			}
			rec.Substitution = s
			r, err := model.Decode(ctx, m.D64, model.Batch[float64]{Tokens: [][]int{e.Witness}}, rec.MaxSteps)
			if err != nil {
				return err
			}
			l, margin := len(r[0].Tokens), r[0].MinRelMargin
			rec.ReplayLength, rec.ReplayRelMargin, rec.Tie = &l, &margin, r[0].Tie()
		}
		if verdict {
			rec.Verdict = "unknown"
			switch {
			case e.Robust:
				rec.Verdict = "robust"
			case e.Vulnerable && !rec.Tie && *rec.ReplayLength > opt.MaxLen:
				rec.Verdict = "vulnerable"
			}
		}
		if err := appendExhaust(out, key, rec, emit); err != nil {
			return err
		}
	}
	return nil
}

// appendExhaust appends rec to out under key (if out is set) and passes
// it to emit.
func appendExhaust(out *results.File, key string, rec ExhaustRecord, emit func(ExhaustRecord) error) error {
	if out != nil {
		if err := out.Append(key, rec); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	return emit(rec)
}

// firstChangedExcept is the first flag given (env.Changed) that is not
// in keep, among the flags a Changed function can name: those of
// lenspec verify and bound.
func firstChangedExcept(env Env, keep []string) (string, bool) {
	fs := pflag.NewFlagSet("verify", pflag.ContinueOnError)
	var f VerifyFlags
	f.RegisterFlags(fs, true)
	name := ""
	fs.VisitAll(func(fl *pflag.Flag) {
		if name == "" && !slices.Contains(keep, fl.Name) && env.Changed(fl.Name) {
			name = fl.Name
		}
	})
	return name, name != ""
}
