package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nmt"
	"github.com/lenspec/lenspec/train"
	"github.com/spf13/cobra"
)

type nmtSummary struct {
	Out          string  `json:"out"`
	Seconds      float64 `json:"seconds"`
	FinalLoss    float64 `json:"final_loss"`
	BLEU         float64 `json:"bleu"`
	BaselineBLEU float64 `json:"baseline_bleu"`
	MaxLenDev    int     `json:"max_len_dev"`
	UnstoppedDev int     `json:"unstopped_dev"`
}

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
			s := nmtSummary{o.Out, res.Seconds, res.FinalLoss, res.BLEU, res.BaselineBLEU, res.MaxLenDev, res.UnstoppedDev}
			return a.emit(s, func(w io.Writer) {
				fmt.Fprintf(w, "trained %s in %.0fs: test BLEU %.2f (dictionary baseline %.2f); dev: longest output %d tokens, %d unstopped\n",
					o.Out, s.Seconds, s.BLEU, s.BaselineBLEU, s.MaxLenDev, s.UnstoppedDev)
			})
		},
	}
	o.RegisterFlags(c.Flags())
	cf.RegisterFlags(c.Flags())
	return c
}

// evalTranslator is lenspec eval for a translator: BLEU on a split of its
// corpus against the dictionary baseline, and the clean output lengths on
// the dev split.
func evalTranslator(c *cobra.Command, a *app, modelDir string, d model.Decoder[float32], split string, cf nmt.CorpusChoice, maxSteps, examples int) error {
	if examples < 0 {
		return usagef("--examples %d must be non-negative", examples)
	}
	cf, err := cf.ForModel(modelDir, d.Config(), c.Flags().Changed("split-seed"))
	if err != nil {
		return usage(err)
	}
	sp, err := cf.Load()
	if err != nil {
		return err
	}
	if split != "test" && split != "dev" {
		return usagef("--split %q: a translator is evaluated on test or dev", split)
	}
	ev, err := nmt.Evaluate(c.Context(), modelDir, d, sp, split, maxSteps, examples)
	if err != nil {
		return err
	}
	return a.emit(ev, func(w io.Writer) {
		fmt.Fprintf(w, "%s on %s (%d sentences): %s; dictionary baseline BLEU %.2f\n", modelDir, split, ev.Samples, ev.Score, ev.BaselineBLEU)
		fmt.Fprintf(w, "%s: longest greedy output %d tokens, %d unstopped, largest output/source ratio %.2f, %d outputs over 3× their source\n", split, ev.MaxLen, ev.Unstopped, ev.MaxRatio, ev.OverRatio3)
		fmt.Fprintf(w, "dev: longest greedy output %d tokens, %d of %d unstopped\n", ev.MaxLenDev, ev.UnstoppedDev, ev.DevSamples)
		if len(ev.Examples) > 0 {
			// A Markdown table: it pastes into a report as it is.
			fmt.Fprintf(w, "\n| # | source | reference | output |\n|---|---|---|---|\n")
			cell := strings.NewReplacer("|", "\\|", "\n", " ")
			for i, e := range ev.Examples {
				fmt.Fprintf(w, "| %d | %s | %s | %s |\n", i+1, cell.Replace(e.Source), cell.Replace(e.Reference), cell.Replace(e.Output))
			}
		}
	})
}
