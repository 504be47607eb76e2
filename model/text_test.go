package model

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/bpe"
	"golang.org/x/text/unicode/norm"
)

// textTranslator is a small translator with a tokenizer learnt on a few
// German and English phrases (as training learns it: TokenizerText of
// each), random weights large enough that outputs differ between sources,
// and a max_source_len of 8 tokens.
func textTranslator(t testing.TB) *Translator[float64] {
	t.Helper()
	var texts []string
	for _, s := range []string{"das haus ist klein", "die straße ist groß", "the house is small", "ein kleines haus", "größer", "für"} {
		texts = append(texts, TokenizerText(s))
	}
	tok, err := bpe.Train(texts, bpe.TrainOptions{VocabSize: 300, MinFrequency: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultTranslatorConfig(tok.Size(), bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID)
	a := cfg.Arch.(*TranslatorConfig)
	a.Embedding, a.EncoderHidden, a.DecoderHidden, a.Attention, a.Combine, a.MaxSourceLen = 4, 3, 5, 4, 6, 8
	cfg.MaxSteps, cfg.Tokenizer = 6, tok
	m, err := NewTranslator[float64](&cfg, rand.New(rand.NewPCG(3, 1)))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 2))
	for _, p := range m.Params() {
		for i := range p.W.Data {
			p.W.Data[i] = rng.NormFloat64()
		}
	}
	return m
}

// TestTranslateSetsAsideLongSources: a text with more source tokens than
// max_source_len gets an Err naming its length and the limit, wherever it
// is in the batch, and every other text's translation is exactly the one
// it gets alone.
func TestTranslateSetsAsideLongSources(t *testing.T) {
	m := textTranslator(t)
	tok := m.Config().Tokenizer
	long := strings.Repeat("haus ", 10) // 11 tokens, over 8
	if n := len(EncodeText(tok, long)); n <= 8 {
		t.Fatalf("the long text has %d tokens, want more than 8", n)
	}
	alone := func(s string) Translation {
		t.Helper()
		ts, err := Translate(context.Background(), Decoder[float64](m), []string{s}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return ts[0]
	}
	for _, c := range []struct {
		name  string
		texts []string
		bad   []int
	}{
		{"none", []string{"das haus", "ist klein", "für"}, nil},
		{"middle", []string{"das haus", "ist klein", long, "die straße", "größer"}, []int{2}},
		{"first", []string{long, "das haus"}, []int{0}},
		{"last", []string{"das haus", "", long}, []int{2}},
		{"two", []string{long, "für", long + "ist", "haus"}, []int{0, 2}},
		{"all", []string{long, long}, []int{0, 1}},
		{"with empty", []string{"", long, ""}, []int{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts, err := Translate(context.Background(), Decoder[float64](m), c.texts, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(ts) != len(c.texts) {
				t.Fatalf("%d translations of %d texts", len(ts), len(c.texts))
			}
			for i, tr := range ts {
				if slices.Contains(c.bad, i) {
					var e *SourceTooLongError
					n := len(EncodeText(tok, c.texts[i]))
					if !errors.As(tr.Err, &e) || e.Tokens != n || e.Max != 8 || !strings.Contains(tr.Err.Error(), "max_source_len 8") {
						t.Fatalf("text %d: Err %v, want %d source tokens over max_source_len 8", i, tr.Err, n)
					}
					if len(tr.IDs) != 0 || tr.Length != 0 || tr.Text != "" || len(tr.Source) != n {
						t.Fatalf("text %d: not translated, yet %+v", i, tr)
					}
					continue
				}
				// The path is the same; the margin is the same up to the
				// summation order a batch's matrix products take (BLAS
				// kernels differ by batch size and CPU).
				want := alone(c.texts[i])
				gotM, wantM := tr.MinRelMargin, want.MinRelMargin
				tr.MinRelMargin, want.MinRelMargin = 0, 0
				if !reflect.DeepEqual(tr, want) || math.Abs(gotM-wantM) > 1e-9*math.Max(1, math.Abs(wantM)) {
					t.Fatalf("text %d %q: in the batch %+v (margin %v), alone %+v (margin %v)", i, c.texts[i], tr, gotM, want, wantM)
				}
			}
		})
	}
}

// TestTranslateEmptyText: an empty text is not run; its translation is
// empty, stopped, with empty (not nil) id and token lists.
func TestTranslateEmptyText(t *testing.T) {
	m := textTranslator(t)
	ts, err := Translate(context.Background(), Decoder[float64](m), []string{""}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := Translation{Source: []int{}, IDs: []int{}, Tokens: []string{}, Stopped: true}
	if !reflect.DeepEqual(ts[0], want) {
		t.Fatalf("empty text: %+v, want %+v", ts[0], want)
	}
}

// TestTranslateBlankAndInvalidUTF8: a text of white space alone (spaces,
// tabs, a no-break space, a line break) is translated as the empty text
// is, without running the model, which given spaces alone invents a
// sentence; a text that is not valid UTF-8 is translated as it would be
// without the flag, and flagged; valid texts are not.
func TestTranslateBlankAndInvalidUTF8(t *testing.T) {
	m := textTranslator(t)
	empty := Translation{Source: []int{}, IDs: []int{}, Tokens: []string{}, Stopped: true}
	blanks := []string{" ", "   ", "\t", " \t \u00a0 ", "\r", "\u3000"}
	// The model does decode something for spaces alone: the case tests
	// that Translate does not ask it.
	spaces, err := Decode(context.Background(), Decoder[float64](m), Batch[float64]{Tokens: [][]int{EncodeText(m.Config().Tokenizer, "   ")}}, 0)
	if err != nil || len(spaces[0].Tokens) == 0 {
		t.Fatalf("the model decodes %+v (%v) for spaces: the case tests nothing", spaces, err)
	}
	texts := append(append([]string{}, blanks...), "das haus\xff", "das haus", "\xc3")
	ts, err := Translate(context.Background(), Decoder[float64](m), texts, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range blanks {
		if !Blank(s) || !reflect.DeepEqual(ts[i], empty) {
			t.Errorf("blank %q: %+v, want %+v", s, ts[i], empty)
		}
	}
	for i, s := range texts[len(blanks):] {
		tr := ts[len(blanks)+i]
		if tr.InvalidUTF8 != !utf8.ValidString(s) || len(tr.Source) == 0 {
			t.Errorf("%q: invalid_utf8 %v, source %v", s, tr.InvalidUTF8, tr.Source)
		}
		alone, err := Decode(context.Background(), Decoder[float64](m), Batch[float64]{Tokens: [][]int{EncodeText(m.Config().Tokenizer, s)}}, 0)
		if err != nil || !slices.Equal(alone[0].Tokens, tr.IDs) {
			t.Errorf("%q: translated to %v, decoded alone %v (%v)", s, tr.IDs, alone, err)
		}
	}
	if Blank("a") || Blank(" \u200b ") {
		t.Error("a letter or a zero-width space is blank")
	}
}

// TestTokenizerTextStreamSafe: the normalisation is NFC plus the
// Stream-Safe Text Format (Unicode UAX #15), as docs/models.md says for
// re-implementers: a run of more than 30 non-starters, counted in
// canonical decompositions, gets U+034F COMBINING GRAPHEME JOINER before
// the 31st; invalid bytes pass through.
func TestTokenizerTextStreamSafe(t *testing.T) {
	marks := func(r string, n int) string { return strings.Repeat(r, n) }
	for _, c := range []struct{ in, want string }{
		{"e\u0301", " \u00e9"},
		{"a" + marks("\u0316", 30), " a" + marks("\u0316", 30)},
		{"a" + marks("\u0316", 31), " a" + marks("\u0316", 30) + "\u034f\u0316"},
		{marks("\u0316", 61), " " + marks("\u0316", 30) + "\u034f" + marks("\u0316", 30) + "\u034f\u0316"},
		// The first acute composes with a, and still counts.
		{"a" + marks("\u0301", 31), " \u00e1" + marks("\u0301", 29) + "\u034f\u0301"},
		{"haus\xff", " haus\xff"},
	} {
		if got := TokenizerText(c.in); got != c.want {
			t.Errorf("%+q: %+q, want %+q", c.in, got, c.want)
		}
	}
}

// TestTranslateRefuses: what fails the whole call still does.
func TestTranslateRefuses(t *testing.T) {
	m := textTranslator(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	noTok := tinyTranslator(t, 1, 1)
	for _, c := range []struct {
		name string
		d    Decoder[float64]
		ctx  context.Context
		max  int
	}{
		{"no tokenizer", noTok, context.Background(), 0},
		{"step cap", m, context.Background(), MaxStepCap + 1},
		{"cancelled", m, ctx, 0},
	} {
		if _, err := Translate(c.ctx, c.d, []string{"das haus"}, c.max); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

// TestTranslateControlCharacters: a text holding control characters
// other than white space is translated as the text with a space for each
// (invalid bytes kept), with ControlChars set; a text of nothing else is
// blank, not run; white space alone is not a control character here.
func TestTranslateControlCharacters(t *testing.T) {
	m := textTranslator(t)
	empty := Translation{Source: []int{}, IDs: []int{}, Tokens: []string{}, Stopped: true}
	for _, c := range []struct {
		text, as string // as: the text it is translated as; "" for blank
		control  bool
	}{
		{"\x00\x00\x00", "", true},
		{"\x00 \x1b\x7f\u0085\u0080\t", "", true},
		{"das\x00haus", "das haus", true},
		{"das haus\x1b[0m", "das haus [0m", true},
		{"das\u009fhaus\xff", "das haus\xff", true},
		{"das\thaus\u0085", "das\thaus\u0085", false},
		{"das haus", "das haus", false},
	} {
		ts, err := Translate(context.Background(), Decoder[float64](m), []string{c.text, c.as}, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, want := ts[0], ts[1]
		if c.as == "" {
			want = empty
		}
		want.InvalidUTF8, want.ControlChars = !utf8.ValidString(c.text), c.control
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %+v, want %+v (%q's)", c.text, got, want, c.as)
		}
	}
}

// stepCounter is a decoder that counts its steps and calls onStep with
// each step's number (from 1) before taking it.
type stepCounter struct {
	Decoder[float64]
	steps  atomic.Int32
	onStep func(n int)
}

func (s *stepCounter) Step(tp *ad.Tape[float64], st State[float64], prev []int) (*ad.Node[float64], State[float64]) {
	s.onStep(int(s.steps.Add(1)))
	return s.Decoder.Step(tp, st, prev)
}

// TestTranslateStopsWithinAStep: when the context ends during decoding,
// Translate stops at the next step, not at the end of the batch, and
// returns the context's error with every text finished by then exactly
// as an uninterrupted call gives it (blank and too long texts included),
// the others Unfinished.
func TestTranslateStopsWithinAStep(t *testing.T) {
	m := textTranslator(t)
	for _, p := range m.Params() {
		if p.Name == "decoder.out.bias" {
			p.W.Data[m.EOS()] += 3.5 // some outputs end at once, others run to the cap
		}
	}
	texts := []string{"das haus", "", "die straße ist groß", strings.Repeat("haus ", 10), "größer", "für", "ein kleines haus", "ist klein", "the house", "klein"}
	full, err := Translate(context.Background(), Decoder[float64](m), texts, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Cancel during the step after the shortest run output's eos: some
	// rows are finished then, and others not.
	var lengths []int
	for _, tr := range full {
		if tr.Err == nil && len(tr.Source) > 0 {
			lengths = append(lengths, tr.Length)
		}
	}
	at := slices.Min(lengths) + 2 // the eos of a Length-L output is step L+1's
	if slices.Max(lengths) < at {
		t.Fatalf("output lengths %v: no row is still decoding at step %d", lengths, at)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &stepCounter{Decoder: m, onStep: func(n int) {
		if n == at {
			cancel()
		}
	}}
	ts, err := Translate(ctx, Decoder[float64](d), texts, 0)
	if !errors.Is(err, context.Canceled) || len(ts) != len(texts) {
		t.Fatalf("cancelled at step %d: %d translations, error %v", at, len(ts), err)
	}
	if n := int(d.steps.Load()); n != at {
		t.Errorf("%d steps taken after the context ended at step %d", n-at, at)
	}
	finished, unfinished := 0, 0
	for i, tr := range ts {
		switch {
		case Unfinished(tr):
			unfinished++
			if full[i].Err != nil || full[i].Length < at-1 {
				t.Errorf("text %d %q: unfinished, yet its output (%d tokens) ends by step %d", i, texts[i], full[i].Length, at-1)
			}
		case !reflect.DeepEqual(tr, full[i]):
			t.Errorf("text %d %q: %+v, uninterrupted %+v", i, texts[i], tr, full[i])
		default:
			finished++
		}
	}
	if finished == 0 || unfinished == 0 {
		t.Errorf("%d texts finished, %d unfinished: want some of each", finished, unfinished)
	}
}

// TestEncodeTextNormalises: the NFC and NFD spellings of a text (and other
// canonically equivalent ones) give identical ids, which the tokenizer
// alone does not; invalid UTF-8 comes back byte for byte; a leading space
// is a token of its own.
func TestEncodeTextNormalises(t *testing.T) {
	tok := textTranslator(t).Config().Tokenizer
	for _, c := range []struct{ name, nfc, other string }{
		{"umlaut", "größer für das haus", "gro\u0308ßer fu\u0308r das haus"},
		{"whole text in NFD", "die straße ist größer", norm.NFD.String("die straße ist größer")},
		{"marks out of canonical order", "\u1ea1\u0308", "a\u0308\u0323"},
		{"Ångström sign", "\u00c5", "\u212b"},
		{"Hangul", "한국", norm.NFD.String("한국")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.nfc == c.other || !norm.NFC.IsNormalString(c.nfc) {
				t.Fatalf("bad case: %q, %q", c.nfc, c.other)
			}
			a, b := EncodeText(tok, c.nfc), EncodeText(tok, c.other)
			if !slices.Equal(a, b) {
				t.Fatalf("NFC %q gives %v, %q gives %v", c.nfc, a, c.other, b)
			}
			if slices.Equal(tok.Encode(" "+c.nfc), tok.Encode(" "+c.other)) {
				t.Fatal("the tokenizer alone already gives equal ids: the case tests nothing")
			}
			if s, err := DecodeText(tok, b); err != nil || s != c.nfc {
				t.Fatalf("decoded %q (%v), want the NFC text %q", s, err, c.nfc)
			}
		})
	}
	for _, s := range []string{"haus\xff", "\xc3", "a\xe2\x96 b", "\xcc\x88"} {
		if got, err := DecodeText(tok, EncodeText(tok, s)); err != nil || got != s {
			t.Errorf("%q: decodes back to %q (%v)", s, got, err)
		}
	}
	if EncodeText(tok, "") != nil {
		t.Error("the empty text has ids")
	}
	if a, b := EncodeText(tok, "haus"), EncodeText(tok, " haus"); len(b) != len(a)+1 || tok.Token(b[0]) != "▁" || !slices.Equal(a, b[1:]) {
		t.Errorf("%q: %v, %q: %v; want one more token, ▁, in front", "haus", a, " haus", b)
	}
}
