// Package testmodels builds the small models tests in several packages
// share, so that each builds them the same way.
package testmodels

import (
	"math/rand/v2"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/model"
)

// Translator is a small translator with random weights large enough that
// outputs vary with the input, and a tokenizer learnt on a few German
// and English phrases; it reads at most maxSource source tokens and
// decodes at most 10.
func Translator(maxSource int) (model.Decoder[float32], error) {
	var texts []string
	for _, s := range []string{"das haus ist klein", "die katze ist alt", "the house is small", "der hund"} {
		texts = append(texts, model.TokenizerText(s))
	}
	tok, err := bpe.Train(texts, bpe.TrainOptions{VocabSize: 300, MinFrequency: 1})
	if err != nil {
		return nil, err
	}
	cfg := model.DefaultTranslatorConfig(tok.Size(), bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID)
	a := cfg.Arch.(*model.TranslatorConfig)
	a.Embedding, a.EncoderHidden, a.DecoderHidden, a.Attention, a.Combine, a.MaxSourceLen = 8, 8, 8, 8, 8, maxSource
	cfg.MaxSteps, cfg.Tokenizer = 10, tok
	m, err := model.New[float32](&cfg, rand.New(rand.NewPCG(7, 1)))
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(7, 2))
	for _, p := range m.Params() {
		for i := range p.W.Data {
			p.W.Data[i] = float32(rng.NormFloat64())
		}
	}
	return m, nil
}
