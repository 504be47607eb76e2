package train

import (
	"context"
	"fmt"

	"github.com/lenspec/lenspec/bleu"
	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/model"
)

// LearnTokenizer learns a translator's BPE tokenizer, shared by source and
// target, from both sides of the pairs, each as the model will read it
// (model.TokenizerText: NFC, a space in front), so that training, the
// tokenizer and inference see every text the same way.
func LearnTokenizer(ctx context.Context, pairs []corpus.Pair, vocab int) (*bpe.Tokenizer, error) {
	texts := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		texts = append(texts, model.TokenizerText(p.Src), model.TokenizerText(p.Tgt))
	}
	return bpe.TrainContext(ctx, texts, bpe.TrainOptions{VocabSize: vocab})
}

// EncodePairs encodes sentence pairs for training a translator with tok
// (model.EncodeText on both sides). Pairs whose source is longer than
// maxSource tokens or whose target is longer than maxTarget are left out
// and counted: the paper caps training targets at 50 tokens, and a target
// cut short would teach the model to stop mid-sentence.
func EncodePairs(tok *bpe.Tokenizer, pairs []corpus.Pair, maxSource, maxTarget int) (src, tgt [][]int, dropped int) {
	for _, p := range pairs {
		s, t := model.EncodeText(tok, p.Src), model.EncodeText(tok, p.Tgt)
		if len(s) == 0 || len(s) > maxSource || len(t) > maxTarget {
			dropped++
			continue
		}
		src, tgt = append(src, s), append(tgt, t)
	}
	return src, tgt, dropped
}

// TranslationEval is a translator measured on a set of pairs.
type TranslationEval struct {
	// BLEU is corpus BLEU-4 of the detokenised outputs against the
	// references, both tokenised by bleu.Tokenize (sacreBLEU's 13a).
	BLEU    bleu.Score `json:"-"`
	Samples int        `json:"samples"`
	// MaxLen is the longest output in tokens, Unstopped the outputs that
	// reached the step cap without end of sequence; Lengths counts outputs
	// by length.
	MaxLen    int   `json:"max_len"`
	Unstopped int   `json:"unstopped"`
	Lengths   []int `json:"length_histogram"`
	// MaxRatio is the largest output length over its source's length, in
	// tokens (the paper's output/input ratio, here of clean inputs);
	// OverRatio3 counts the outputs longer than 3× their source.
	MaxRatio   float64 `json:"max_length_ratio"`
	OverRatio3 int     `json:"over_3x_source"`
	// Outputs are the translations, in the pairs' order.
	Outputs []model.Translation `json:"-"`
}

// EvaluateTranslation translates the pairs' sources greedily (maxSteps ≤ 0:
// the model's cap) and scores the outputs against their targets. A source
// longer than the model reads is an error naming its pair (1-based).
func EvaluateTranslation(ctx context.Context, d model.Decoder[float32], pairs []corpus.Pair, maxSteps int) (*TranslationEval, error) {
	if len(pairs) == 0 {
		return nil, fmt.Errorf("evaluate: no pairs")
	}
	srcs, refs := make([]string, len(pairs)), make([]string, len(pairs))
	for i, p := range pairs {
		srcs[i], refs[i] = p.Src, p.Tgt
	}
	out, err := model.Translate(ctx, d, srcs, maxSteps)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	ev := &TranslationEval{Samples: len(pairs), Outputs: out}
	hyps := make([]string, len(out))
	for i, t := range out {
		if t.Err != nil {
			// BLEU over the pairs the model can read would not be the
			// split's BLEU: refuse rather than score a subset.
			return nil, fmt.Errorf("evaluate: pair %d: %w", i+1, t.Err)
		}
		hyps[i] = t.Text
		ev.MaxLen = max(ev.MaxLen, t.Length)
		if n := len(t.Source); n > 0 {
			ev.MaxRatio = max(ev.MaxRatio, float64(t.Length)/float64(n))
			if t.Length > 3*n {
				ev.OverRatio3++
			}
		}
		if !t.Stopped {
			ev.Unstopped++
		}
		for len(ev.Lengths) <= t.Length {
			ev.Lengths = append(ev.Lengths, 0)
		}
		ev.Lengths[t.Length]++
	}
	if ev.BLEU, err = bleu.Corpus(hyps, refs); err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	return ev, nil
}

// BaselineBLEU is the word-by-word dictionary lookup baseline's BLEU on
// test: corpus.Lexicon (IBM Model 1) trained on the training split.
func BaselineBLEU(trainPairs, test []corpus.Pair) (bleu.Score, error) {
	lex := corpus.TrainLexicon(trainPairs, corpus.LexiconOptions{})
	hyps, refs := make([]string, len(test)), make([]string, len(test))
	for i, p := range test {
		hyps[i], refs[i] = lex.Translate(p.Src), p.Tgt
	}
	return bleu.Corpus(hyps, refs)
}
