package train

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/model"
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

// TestEvaluateTranslationLengths: the evaluation's length figures are
// those of its own outputs — the longest, the unstopped, the largest
// output/source ratio and the outputs over 3× their source — on a random
// translator whose outputs run from empty to the step cap.
func TestEvaluateTranslationLengths(t *testing.T) {
	var pairs []corpus.Pair
	for _, s := range []string{"das haus ist klein", "ein kleines haus", "haus", "das ist ein haus und ein haus", "klein"} {
		pairs = append(pairs, corpus.Pair{Src: s, Tgt: "the house"})
	}
	tok, err := LearnTokenizer(context.Background(), pairs, 300)
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.DefaultTranslatorConfig(tok.Size(), bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID)
	a := cfg.Arch.(*model.TranslatorConfig)
	a.Embedding, a.EncoderHidden, a.DecoderHidden, a.Attention, a.Combine = 8, 6, 10, 8, 8
	cfg.Tokenizer, cfg.MaxSteps = tok, 20
	checked := 0
	for seed := uint64(1); seed <= 6; seed++ {
		m, err := model.NewTranslator[float32](&cfg, rand.New(rand.NewPCG(seed, 1)))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := EvaluateTranslation(context.Background(), m, pairs, 0)
		if err != nil {
			t.Fatal(err)
		}
		var maxLen, unstopped, over int
		var ratio float64
		for _, o := range ev.Outputs {
			maxLen = max(maxLen, len(o.IDs))
			if !o.Stopped {
				unstopped++
			}
			ratio = max(ratio, float64(len(o.IDs))/float64(len(o.Source)))
			if len(o.IDs) > 3*len(o.Source) {
				over++
			}
		}
		if ev.MaxLen != maxLen || ev.Unstopped != unstopped || ev.MaxRatio != ratio || ev.OverRatio3 != over {
			t.Fatalf("seed %d: evaluation %d/%d/%v/%d, outputs %d/%d/%v/%d", seed, ev.MaxLen, ev.Unstopped, ev.MaxRatio, ev.OverRatio3, maxLen, unstopped, ratio, over)
		}
		if over > 0 {
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no output over 3× its source: the test tests nothing")
	}
}
