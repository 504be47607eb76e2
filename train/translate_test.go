package train

import (
	"context"
	"reflect"
	"testing"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/corpus"
	"golang.org/x/text/unicode/norm"
)

// TestTrainingSeesNFC: a corpus spelt in NFD gives the tokenizer and the
// training ids that the same corpus in NFC gives, as inference
// (model.EncodeText) sees them; the tokenizer alone would not.
func TestTrainingSeesNFC(t *testing.T) {
	var nfc, nfd []corpus.Pair
	for range 3 {
		for _, p := range []corpus.Pair{{Src: "Das Haus ist schön.", Tgt: "The house is nice."}, {Src: "Größer für mich.", Tgt: "Bigger for me."}, {Src: "Süße Äpfel.", Tgt: "Sweet apples."}} {
			nfc = append(nfc, p)
			nfd = append(nfd, corpus.Pair{Src: norm.NFD.String(p.Src), Tgt: norm.NFD.String(p.Tgt)})
		}
	}
	vocab := func(tok *bpe.Tokenizer) []string {
		v := make([]string, tok.Size())
		for i := range v {
			v[i] = tok.Token(i)
		}
		return v
	}
	learn := func(pairs []corpus.Pair) *bpe.Tokenizer {
		tok, err := LearnTokenizer(context.Background(), pairs, 320)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	tok := learn(nfc)
	if a, b := vocab(tok), vocab(learn(nfd)); !reflect.DeepEqual(a, b) {
		t.Fatalf("NFC corpus: %d tokens %q…; NFD corpus: %d tokens %q…", len(a), a[260:270], len(b), b[260:270])
	}
	s1, t1, _ := EncodePairs(tok, nfc, 200, 50)
	s2, t2, _ := EncodePairs(tok, nfd, 200, 50)
	if len(s1) != len(nfc) || !reflect.DeepEqual(s1, s2) || !reflect.DeepEqual(t1, t2) {
		t.Fatalf("NFC pairs encode to %v / %v, NFD pairs to %v / %v", s1, t1, s2, t2)
	}
	raw := func(pairs []corpus.Pair) []string {
		var texts []string
		for _, p := range pairs {
			texts = append(texts, " "+p.Src, " "+p.Tgt)
		}
		tok, err := bpe.Train(texts, bpe.TrainOptions{VocabSize: 320})
		if err != nil {
			t.Fatal(err)
		}
		return vocab(tok)
	}
	if reflect.DeepEqual(raw(nfc), raw(nfd)) {
		t.Fatal("unnormalised, the two corpora give one tokenizer: the test tests nothing")
	}
}
