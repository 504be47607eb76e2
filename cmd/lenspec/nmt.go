package main

import (
	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/train"
	"github.com/spf13/cobra"
)

// trainNMTHelp is the command's long help.
const trainNMTHelp = `Train the paper's third model, an attention sequence-to-sequence translator,
on the Ding German-English dictionary that Debian ships (trans-de-en; its
sentences and multi-word phrases, split into train/dev/test by a seeded hash
of the source) or on --corpus FILE.tsv, and write config.json,
model.safetensors, vocab.json and merges.txt (the BPE tokenizer learnt on the
training split) to --out. The defaults build models/nmt-de-en. --arch
transformer trains a torch.nn.Transformer encoder-decoder instead
(transformer-translator, sized by --d-model, --nhead, --encoder-layers,
--decoder-layers, --dim-feedforward, --activation and --norm-first; see
docs/models.md), with its own optimisation defaults.

Training targets longer than --max-target tokens are left out (the paper caps
them at 50). A checkpoint is written every --checkpoint-every and after every
epoch; rerunning the same command resumes from it, also after kill -9. At the
end the model is evaluated: BLEU on the test split against a word-by-word
dictionary baseline, and the greedy output lengths on the dev split. A model
trained on the Ding dictionary is GPL-2.0-or-later: --out receives a LICENSE
notice saying so.`

func newTrainNMTCmd(a *app) *cobra.Command {
	t := experiment.NewNMTTraining()
	c := &cobra.Command{
		Use:   "nmt",
		Short: "Train the German→English attention translator (BPE, bidirectional LSTM, Bahdanau attention)",
		Long:  trainNMTHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			progress, finish := a.bars()
			sum, err := t.Train(c.Context(), a.env(c), train.RebuildCommand("lenspec train nmt", c.Flags()), progress)
			finish()
			return a.report(sum, err)
		},
	}
	t.RegisterFlags(c.Flags())
	return c
}
