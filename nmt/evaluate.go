package nmt

import (
	"context"
	"fmt"

	"github.com/lenspec/lenspec/bleu"
	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/train"
)

// Evaluation is a translator's evaluation on a split of its corpus, as
// lenspec eval reports it: BLEU against the word-by-word dictionary
// baseline, its outputs' lengths on that split and on the dev split, and
// the first few translations.
type Evaluation struct {
	Model string `json:"model"`
	Split string `json:"split"`
	// BLEU is Score's BLEU, Detail its full account.
	BLEU         float64 `json:"bleu"`
	Detail       string  `json:"bleu_detail"`
	BaselineBLEU float64 `json:"baseline_bleu"`
	Samples      int     `json:"samples"`
	Unstopped    int     `json:"unstopped"`
	MaxRatio     float64 `json:"max_length_ratio"`
	OverRatio3   int     `json:"over_3x_source"`
	// MaxLenDev, UnstoppedDev and LengthsDev are the dev split's
	// longest output, outputs without end of sequence and length
	// histogram, out of DevSamples outputs.
	MaxLenDev    int   `json:"max_len_dev"`
	UnstoppedDev int   `json:"unstopped_dev"`
	LengthsDev   []int `json:"length_histogram_dev"`
	MaxLen       int   `json:"max_len"`
	// Examples are the split's first translations.
	Examples []Example `json:"examples,omitempty"`

	Score      bleu.Score `json:"-"`
	DevSamples int        `json:"-"`
}

// Example is a source sentence, its reference and the model's
// translation.
type Example struct {
	Source    string `json:"source"`
	Reference string `json:"reference"`
	Output    string `json:"output"`
	Length    int    `json:"length"`
}

// Evaluate evaluates the translator d (read from modelDir, which names it
// in the evaluation) on split "test" or "dev" of sp, with its first
// examples translations (maxSteps ≤ 0: the model's step cap).
func Evaluate(ctx context.Context, modelDir string, d model.Decoder[float32], sp *corpus.Splits, split string, maxSteps, examples int) (*Evaluation, error) {
	var pairs []corpus.Pair
	switch split {
	case "test":
		pairs = sp.Test
	case "dev":
		pairs = sp.Dev
	default:
		return nil, fmt.Errorf("split %q: a translator is evaluated on test or dev", split)
	}
	ev, err := train.EvaluateTranslation(ctx, d, pairs, maxSteps)
	if err != nil {
		return nil, err
	}
	dev := ev
	if split != "dev" {
		if dev, err = train.EvaluateTranslation(ctx, d, sp.Dev, maxSteps); err != nil {
			return nil, err
		}
	}
	base, err := train.BaselineBLEU(sp.Train, pairs)
	if err != nil {
		return nil, err
	}
	out := &Evaluation{Model: modelDir, Split: split, BLEU: ev.BLEU.BLEU, Detail: ev.BLEU.String(), BaselineBLEU: base.BLEU,
		Samples: ev.Samples, Unstopped: ev.Unstopped, MaxRatio: ev.MaxRatio, OverRatio3: ev.OverRatio3,
		MaxLenDev: dev.MaxLen, UnstoppedDev: dev.Unstopped, LengthsDev: dev.Lengths, MaxLen: ev.MaxLen,
		Score: ev.BLEU, DevSamples: dev.Samples}
	for i := 0; i < min(examples, len(pairs)); i++ {
		o := ev.Outputs[i]
		out.Examples = append(out.Examples, Example{pairs[i].Src, pairs[i].Tgt, o.Text, len(o.IDs)})
	}
	return out, nil
}
