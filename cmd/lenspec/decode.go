package main

import (
	"github.com/lenspec/lenspec/experiment"
	"github.com/spf13/cobra"
)

// decodeHelp is the command's long help.
const decodeHelp = `Greedily decode with the float64 replay path (ties go to the lowest token
index). Each output shows its tokens, whether it stopped within the step cap,
and its smallest top-2 logit margin. An output whose logits stop being finite
(a state that grows without bound overflows at long step caps) ends at that
step, marked non-finite ("non_finite" with --json): its tokens are those
decided before it, and the exit status is still 0.

--input reads an exact input: a safetensors file with one tensor named "input"
of the model's input shape (for the captioner [1, 28, 112], or with a leading
batch dimension of 1), every value finite and inside the model's input range
(config.json input.min/max). Attack and verification witnesses are saved this
way. --image reads a grayscale PNG of the model's size, or an exact integer
enlargement of it (lenspec data multimnist writes 4x), bytes 0..255 mapped
linearly onto the input range. --index decodes canvases of --split of the data
set the model reads, generated with --data-seed: Multi-MNIST for the
Multi-MNIST captioner, the captions data set (skewed caption lengths) for a
Show-and-Tell model.`

func newDecodeCmd(a *app) *cobra.Command {
	var s experiment.DecodeSettings
	c := &cobra.Command{
		Use:   "decode",
		Short: "Greedily decode inputs (a witness file, a PNG image, or Multi-MNIST canvases) and print the tokens",
		Long:  decodeHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			recs, err := s.Decode(c.Context(), a.env(c))
			for _, rec := range recs {
				if err := a.report(rec, nil); err != nil {
					return err
				}
			}
			return err
		},
	}
	s.RegisterFlags(c.Flags())
	return c
}
