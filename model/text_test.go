package model

import (
	"math/rand/v2"
	"slices"
	"testing"

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
