package bench

import (
	"math/rand/v2"
	"slices"

	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/train"
)

// CaptionerPeerData are the peer benchmark's inputs for an image
// captioner: the first 1,000 test inputs to decode, a training batch of the
// first 64 training examples, and the next 50 test inputs to attack by PGD.
func CaptionerPeerData(test, training train.Source[float32]) PeerData {
	var data PeerData
	data.Decode, _, _ = test.Batch(seq(0, 1000), nil)
	data.Train, _, data.TrainLabels = training.Batch(seq(0, 64), nil)
	data.PGD, _, _ = test.Batch(seq(1000, 50), nil)
	return data
}

// seq is lo, lo+1, …, lo+n−1.
func seq(lo, n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = lo + i
	}
	return idx
}

// trainingPairs are a translator's training pairs of sp, tokenised, its
// sources cut to what the model reads and its targets to 50 tokens, for
// bucketed batches.
func trainingPairs(d model.Decoder[float32], sp *corpus.Splits) *train.TokenPairs {
	src, tgt, _ := train.EncodePairs(d.Config().Tokenizer, sp.Train, d.Input().MaxLen, 50)
	return train.NewTokenPairs(src, tgt)
}

// TranslatorPeerData are the peer benchmark's inputs for the translator d
// on its corpus: the dev sources sorted by length, so that both sides'
// batches pad alike, and one bucketed training batch of batch pairs
// (drawn by PCG(seed, 5)).
func TranslatorPeerData(d model.Decoder[float32], sp *corpus.Splits, batch int, seed uint64) PeerData {
	devSrc, _, _ := train.EncodePairs(d.Config().Tokenizer, sp.Dev, d.Input().MaxLen, model.MaxStepCap)
	slices.SortStableFunc(devSrc, func(x, y []int) int { return len(x) - len(y) })
	pairs := trainingPairs(d, sp)
	b := pairs.Batches(batch, rand.New(rand.NewPCG(seed, 5)))[0]
	_, ts, tl := pairs.Batch(b, nil)
	return PeerData{Sources: devSrc, TrainSources: ts, TrainLabels: tl}
}

// TranslatorBenchData are the translator benchmark's inputs for d on its
// corpus: the dev split's sources to translate, the training split's pairs
// to train on.
func TranslatorBenchData(d model.Decoder[float32], sp *corpus.Splits) TranslatorData {
	srcs := make([]string, len(sp.Dev))
	for i, p := range sp.Dev {
		srcs[i] = p.Src
	}
	return TranslatorData{Sources: srcs, Train: trainingPairs(d, sp)}
}
