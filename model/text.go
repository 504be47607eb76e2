package model

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/bpe"
	"golang.org/x/text/unicode/norm"
)

// Translation is one text decoded by a model with a tokenizer.
type Translation struct {
	// Text is the output decoded to text (end of sequence excluded).
	Text string `json:"text"`
	// Source are the input's token ids, IDs the output's (end of sequence
	// excluded), Tokens the output's token strings. None is nil, so that
	// JSON shows an empty output as [] rather than null.
	Source []int    `json:"source_ids"`
	IDs    []int    `json:"ids"`
	Tokens []string `json:"tokens"`
	// Length is the output length ℓ (len(IDs)); Stopped says whether the
	// output ended with end of sequence within the step cap.
	Length  int  `json:"length"`
	Stopped bool `json:"stopped"`
	// MinRelMargin is the smallest relative top-2 logit margin along the
	// greedy path (model.Result).
	MinRelMargin float64 `json:"min_rel_margin"`
	// InvalidUTF8 is set when the text is not valid UTF-8: it was
	// translated, its invalid bytes read as the tokenizer's byte tokens,
	// but what it says is unknown, so the caller should say so
	// (translate warns on stderr).
	InvalidUTF8 bool `json:"invalid_utf8,omitempty"`
	// ControlChars is set when the text holds control characters other
	// than white space (NUL, ESC, DEL, the C1 controls…): no text is
	// written with them, and the corpora the models learn from read them
	// as spaces, so Translate reads each as a space (a text of nothing
	// else is then blank), and the caller should say so (translate warns
	// on stderr).
	ControlChars bool `json:"control_chars,omitempty"`
	// Err, if not nil, is why this text was not translated (a
	// *SourceTooLongError); only Source is then set. One text the model
	// cannot read must not cost the others their translations, so
	// Translate reports it here rather than failing the call.
	Err error `json:"-"`
}

// SourceTooLongError is a Translation's Err when the text's source has
// more tokens than the model reads (the translator's max_source_len).
type SourceTooLongError struct {
	Tokens, Max int
}

func (e *SourceTooLongError) Error() string {
	return fmt.Sprintf("%d source tokens, over the model's max_source_len %d", e.Tokens, e.Max)
}

// Translate decodes texts greedily with d, which must have a tokenizer
// (Config.Tokenizer): each text is encoded (EncodeText), the batch is
// decoded on all cores in order of source length (so that batches pad
// little; Decode bounds each chunk's rows and padded source tokens, so
// memory does not grow with the number of texts) and every output is
// decoded back to text (DecodeText). The result has one Translation per
// text, in order. A blank text (empty, or white space alone: Blank) has
// an empty translation (Stopped, Length 0, no source ids) and is not run:
// a model given only spaces invents a sentence. A text that is not valid
// UTF-8 is translated, with InvalidUTF8 set; one holding control
// characters other than white space is translated with each read as a
// space, with ControlChars set. A text whose
// source is longer than the model reads (InputSpec.MaxLen) is not run
// either: its Translation's Err says so, and the other texts are
// translated exactly as they would be alone. The error is for what fails
// the whole call (no tokenizer, a step cap out of range, ctx's end).
// maxSteps ≤ 0 means the model's cap.
//
// When ctx ends, Translate stops within a decoding step and returns ctx's
// error with the translations: those finished (blank or too long texts,
// and those decoded to their end) as they would be otherwise, the others
// with ctx's error as their Err (Unfinished), so that a caller can keep
// what was done.
func Translate[T ad.Float](ctx context.Context, d Decoder[T], texts []string, maxSteps int) ([]Translation, error) {
	tok := d.Config().Tokenizer
	if tok == nil {
		return nil, fmt.Errorf("translate: the %s model has no tokenizer", d.Config().Architecture)
	}
	in := d.Input()
	if in.Kind != Tokens {
		return nil, fmt.Errorf("translate: the %s model reads %v inputs, not text", d.Config().Architecture, in.Kind)
	}
	if maxSteps <= 0 {
		maxSteps = d.MaxSteps()
	}
	out := make([]Translation, len(texts))
	var order []int // texts to run, shortest source first
	for i, s := range texts {
		t := &out[i]
		t.IDs, t.Tokens, t.InvalidUTF8 = []int{}, []string{}, !utf8.ValidString(s)
		s, t.ControlChars = controlsAsSpaces(s)
		if Blank(s) {
			t.Source, t.Stopped = []int{}, true
			continue
		}
		t.Source = EncodeText(tok, s)
		switch {
		case len(t.Source) == 0:
			t.Source, t.Stopped = []int{}, true
		case in.MaxLen > 0 && len(t.Source) > in.MaxLen:
			t.Err = &SourceTooLongError{Tokens: len(t.Source), Max: in.MaxLen}
		default:
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		return out, nil
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(out[a].Source) - len(out[b].Source) })
	batch := make([][]int, len(order))
	for k, i := range order {
		batch[k] = out[i].Source
	}
	res, done, stop := decode(ctx, d, Batch[T]{Tokens: batch}, maxSteps)
	if res == nil {
		return nil, fmt.Errorf("translate: %w", stop)
	}
	for k, i := range order {
		r := res[k]
		t := &out[i]
		if !done[k] {
			t.Err = stop
			continue
		}
		t.IDs, t.Length, t.Stopped, t.MinRelMargin = append(t.IDs, r.Tokens...), len(r.Tokens), r.Stopped, r.MinRelMargin
		for _, id := range r.Tokens {
			t.Tokens = append(t.Tokens, tok.Token(id))
		}
		var err error
		if t.Text, err = DecodeText(tok, r.Tokens); err != nil {
			return nil, fmt.Errorf("translate: text %d: %w", i, err)
		}
	}
	if stop != nil {
		return out, fmt.Errorf("translate: %w", stop)
	}
	return out, nil
}

// Unfinished reports whether t is a translation Translate did not finish
// because its context ended.
func Unfinished(t Translation) bool {
	return errors.Is(t.Err, context.Canceled) || errors.Is(t.Err, context.DeadlineExceeded)
}

// IsControl reports whether r is a control character that is not white
// space (unicode.IsControl, not unicode.IsSpace: NUL, ESC, DEL, the C1
// controls…): what Translate reads as a space and a sentence to attack
// may not hold.
func IsControl(r rune) bool { return unicode.IsControl(r) && !unicode.IsSpace(r) }

// controlsAsSpaces returns s with each control character that is not
// white space (unicode.IsControl, not unicode.IsSpace: NUL, ESC, DEL, the
// C1 controls…) replaced by a space, and whether there was any. Invalid
// UTF-8 bytes pass through, for the tokenizer's byte tokens.
func controlsAsSpaces(s string) (string, bool) {
	var b []byte // nil until the first control character
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case IsControl(r): // utf8.RuneError is not one
			if b == nil {
				b = append(make([]byte, 0, len(s)), s[:i]...)
			}
			b = append(b, ' ')
		case b != nil:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	if b == nil {
		return s, false
	}
	return string(b), true
}

// Blank reports whether s holds nothing to translate: it is empty or
// white space alone (unicode.IsSpace: spaces, tabs, no-break spaces…).
// Translate gives a blank text an empty translation without running the
// model.
func Blank(s string) bool { return strings.TrimSpace(s) == "" }

// TokenizerText is the string a text model's tokenizer reads for s: s in
// Unicode NFC, with a space put in front; "" stays "". EncodeText encodes
// it and training learns the tokenizer from it, so that inference,
// evaluation, attacks and training see one text the same way.
//
// The normalisation is norm.NFC's, which is NFC in the Stream-Safe Text
// Format (Unicode UAX #15): where more than 30 non-starters (combining
// marks, counted in canonical decompositions in the text's own order, and
// Hangul conjoining vowels and final consonants) follow each other, U+034F
// COMBINING GRAPHEME JOINER goes before the 31st, and counting starts
// again. Plain NFC does not do this; docs/models.md gives the rule in
// Python for other implementations. Invalid UTF-8 bytes pass through.
//
// NFC because one text has several code point spellings ("ä" is U+00E4,
// or "a" and U+0308 in NFD, as macOS file names and some input methods
// give it), and merges learnt on one never apply to another: unnormalised,
// they are different token sequences and different translations. NFC, not
// NFKC (SentencePiece's default), because it unifies only canonically
// equivalent spellings and leaves compatibility characters (ligatures,
// superscripts) as written; most text, the Ding dictionary all of it, is
// NFC already.
//
// The space makes a word the same token at the start of a text as after
// a space ("▁Haus" either way; the tokenizer marks a space by "▁" on the
// word after it).
func TokenizerText(s string) string {
	if s == "" {
		return ""
	}
	return " " + norm.NFC.String(s)
}

// EncodeText encodes a text as lenspec's text models see it: the token ids
// of TokenizerText(s). An empty text stays empty.
func EncodeText(tok *bpe.Tokenizer, s string) []int {
	if s == "" {
		return nil
	}
	return tok.Encode(TokenizerText(s))
}

// DecodeText is EncodeText's inverse: the decoded text without the space
// in front. DecodeText(EncodeText(s)) is s in NFC.
func DecodeText(tok *bpe.Tokenizer, ids []int) (string, error) {
	s, err := tok.Decode(ids)
	return strings.TrimPrefix(s, " "), err
}
