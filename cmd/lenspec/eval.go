package main

import (
	"github.com/lenspec/lenspec/experiment"
	"github.com/spf13/cobra"
)

func newEvalCmd(a *app) *cobra.Command {
	var s experiment.EvalSettings
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
			progress, finish := a.bars()
			r, err := s.Evaluate(c.Context(), a.env(c), progress)
			finish()
			return a.report(r, err)
		},
	}
	s.RegisterFlags(c.Flags())
	return c
}
