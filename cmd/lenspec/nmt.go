package main

import (
	"errors"
	"fmt"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/nmt"
	"github.com/lenspec/lenspec/train"
	"github.com/spf13/cobra"
)

// trainNMTHelp is the command's long help.
const trainNMTHelp = `Train the paper's third model, an attention sequence-to-sequence translator,
on the Ding German-English dictionary that Debian ships (trans-de-en; its
sentences and multi-word phrases, split into train/dev/test by a seeded hash
of the source) or on --corpus FILE.tsv, and write config.json,
model.safetensors, vocab.json and merges.txt (the BPE tokenizer learnt on the
training split) to --out. The defaults build models/nmt-de-en.

Training targets longer than --max-target tokens are left out (the paper caps
them at 50). A checkpoint is written every --checkpoint-every and after every
epoch; rerunning the same command resumes from it, also after kill -9. At the
end the model is evaluated: BLEU on the test split against a word-by-word
dictionary baseline, and the greedy output lengths on the dev split. A model
trained on the Ding dictionary is GPL-2.0-or-later: --out receives a LICENSE
notice saying so.`

// vocabUsage is err, or the usage error it is when the corpus has more
// characters than --vocab leaves room for (known only once the corpus is
// read).
func vocabUsage(err error, vocab int, path string) error {
	var small *bpe.VocabSizeError
	if errors.As(err, &small) {
		return usagef("--vocab %d is below the %d tokens %s needs (4 special, 256 byte and %d character tokens): give --vocab %d or more",
			vocab, small.Need(), path, small.Alphabet, small.Need())
	}
	return err
}

func newTrainNMTCmd(a *app) *cobra.Command {
	o := nmt.DefaultOptions()
	var cf nmt.CorpusChoice
	c := &cobra.Command{
		Use:   "nmt",
		Short: "Train the German→English attention translator (BPE, bidirectional LSTM, Bahdanau attention)",
		Long:  trainNMTHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.ValidateFlags(c.Flags().Changed); err != nil {
				return usage(err)
			}
			a.logf("reading the corpus...")
			sp, err := cf.Load()
			if err != nil {
				return err
			}
			a.logf("%s: %d training, %d dev, %d test pairs", sp.Path, len(sp.Train), len(sp.Dev), len(sp.Test))
			progress, finish := a.bars()
			var rate train.TokenRate
			o.Train.Progress = func(p train.Progress) {
				progress("train nmt", p.Step, p.Steps, fmt.Sprintf("epoch %d/%d loss %.3f, %.0f target tokens/s", p.Epoch, p.Epochs, p.Loss, rate.Add(p)))
			}
			o.Corpus, o.SplitSeed, o.Command, o.Logf = sp, cf.SplitSeed, nmt.RebuildCommand(c.Flags()), a.logf
			res, err := nmt.Train(c.Context(), o)
			finish()
			if err != nil {
				return vocabUsage(err, o.Vocab, sp.Path)
			}
			s := res.Summary(o.Out)
			return a.emit(s, s.WriteText)
		},
	}
	o.RegisterFlags(c.Flags())
	cf.RegisterFlags(c.Flags())
	return c
}
