package experiment

import (
	"context"
	"fmt"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/train"
)

// CaptionerEval is a Multi-MNIST captioner's evaluation as lenspec eval
// reports it: exact-sequence accuracy and output lengths on a split, and
// the longest outputs on the training split.
type CaptionerEval struct {
	Model            string  `json:"model"`
	Split            string  `json:"split"`
	Samples          int     `json:"samples"`
	SequenceAccuracy float64 `json:"sequence_accuracy"`
	MaxLenSplit      int     `json:"max_len"`
	MaxLenTrain      int     `json:"max_len_train"`
	UnstoppedTrain   int     `json:"unstopped_train"`
	LengthHistogram  []int   `json:"length_histogram"`
}

// EvalCaptioner evaluates the captioner d (read from modelDir, which names
// it in the evaluation) on split "train" or "test" of Multi-MNIST
// generated with seed, and on the training split for its longest outputs
// (maxSteps ≤ 0: the model's step cap). progress, if set, follows each
// split's decoding ("eval test", "eval train").
func (s Sources) EvalCaptioner(ctx context.Context, modelDir string, d model.Decoder[float32], split string, seed uint64, maxSteps int, progress Progress) (*CaptionerEval, error) {
	in := d.Input()
	if err := CheckMultiMNIST(in); err != nil {
		return nil, err
	}
	if split != "train" && split != "test" {
		return nil, fmt.Errorf("split %q: want train or test", split)
	}
	tr, te, err := s.MultiMNIST(ctx, seed)
	if err != nil {
		return nil, err
	}
	evaluate := func(name string, set *multimnist.Dataset) (train.Eval, error) {
		src, err := multimnist.NewSource[float32](set, in.Min, in.Max, false)
		if err != nil {
			return train.Eval{}, err
		}
		return train.Evaluate(ctx, d, src, maxSteps, func(n int) {
			if progress != nil {
				progress("eval "+name, n, set.N, "")
			}
		})
	}
	ds := te
	if split == "train" {
		ds = tr
	}
	ev, err := evaluate(split, ds)
	if err != nil {
		return nil, err
	}
	evTrain := ev
	if split != "train" {
		if evTrain, err = evaluate("train", tr); err != nil {
			return nil, err
		}
	}
	return &CaptionerEval{modelDir, split, ev.Samples, ev.SequenceAccuracy, ev.MaxLen, evTrain.MaxLen, evTrain.Unstopped, ev.LengthHistogram}, nil
}
