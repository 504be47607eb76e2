package main

import (
	"fmt"

	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nmt"
	"github.com/spf13/cobra"
)

func newEvalCmd(a *app) *cobra.Command {
	var modelDir, splitName string
	var maxSteps, examples int
	var dataSeed uint64
	var cf nmt.CorpusChoice
	c := &cobra.Command{
		Use:   "eval",
		Short: "Evaluate a model: a captioner's exact-sequence accuracy, a translator's BLEU, and greedy output lengths",
		Long: `Evaluate a model on a split of its data. A captioner: exact-sequence
accuracy on a Multi-MNIST split and the longest greedy output on the training
set. A translator: BLEU on the test (or dev) split of its corpus — the split
recorded in its config.json — next to a word-by-word dictionary baseline
trained on the training split, and the greedy output lengths on the dev
split.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if modelDir == "" {
				return usagef("--model is required")
			}
			if err := checkSteps(c, maxSteps); err != nil {
				return err
			}
			d, err := model.Load[float32](modelDir)
			if err != nil {
				return err
			}
			if d.Input().Kind == model.Tokens {
				return evalTranslator(c, a, modelDir, d, splitName, cf, maxSteps, examples)
			}
			if err := experiment.CheckSplit(splitName); err != nil {
				return err
			}
			src, err := a.sources()
			if err != nil {
				return err
			}
			progress, finish := a.bars()
			out, err := src.EvalCaptioner(c.Context(), modelDir, d, splitName, dataSeed, maxSteps, progress)
			finish()
			if err != nil {
				return err
			}
			return a.emit(out, out.WriteText)
		},
	}
	f := c.Flags()
	f.StringVar(&modelDir, "model", "", "model directory")
	f.StringVar(&splitName, "split", "test", "train or test (a translator: test or dev)")
	f.IntVar(&maxSteps, "max-steps", 0, fmt.Sprintf("decoding step cap, 1..%d (default: the model's max_steps)", model.MaxStepCap))
	f.Uint64Var(&dataSeed, "data-seed", defaultDataSeed, "Multi-MNIST generation seed")
	f.IntVar(&examples, "examples", 0, "a translator: also show the first N translations of the split (source, reference, output)")
	cf.RegisterFlags(c.Flags())
	return c
}
