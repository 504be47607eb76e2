package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/model"
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
linearly onto the input range.`

func newDecodeCmd(a *app) *cobra.Command {
	var modelDir, image, input, splitName string
	var indices []int
	var maxSteps int
	var dataSeed uint64
	c := &cobra.Command{
		Use:   "decode",
		Short: "Greedily decode inputs (a witness file, a PNG image, or Multi-MNIST canvases) and print the tokens",
		Long:  decodeHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if modelDir == "" {
				return usagef("--model is required")
			}
			given := 0
			for _, g := range []bool{image != "", input != "", len(indices) > 0} {
				if g {
					given++
				}
			}
			if given != 1 {
				return usagef("give exactly one of --image, --input or --index")
			}
			if err := checkSteps(c, maxSteps); err != nil {
				return err
			}
			if err := checkSplit(splitName); err != nil {
				return err
			}
			d, err := model.Load[float64](modelDir)
			if err != nil {
				return err
			}
			src, err := a.sources()
			if err != nil {
				return err
			}
			x, srcs, labels, err := src.DecodeInputs(c.Context(), modelDir, d.Input(), input, image, indices, splitName, dataSeed)
			if errors.As(err, new(experiment.SettingsError)) {
				return usagef("--%v", err) // an --index outside the split
			}
			if err != nil {
				return err
			}
			res, err := model.Decode(c.Context(), d, model.Batch[float64]{X: x}, maxSteps)
			if err != nil {
				return err
			}
			for i, r := range res {
				rec := experiment.NewDecoded(d.Config().Vocab, srcs[i], labels[i], r)
				if err := a.emit(rec, func(w io.Writer) { fmt.Fprintln(w, rec.Line()) }); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&modelDir, "model", "", "model directory (config.json + model.safetensors)")
	f.StringVar(&image, "image", "", "PNG image of the model's input size or an integer multiple of it; 0..255 maps to the input range")
	f.StringVar(&input, "input", "", "exact input: a safetensors file with a tensor \"input\" (attack and verification witnesses are saved this way)")
	f.IntSliceVar(&indices, "index", nil, "Multi-MNIST canvas index (repeatable, or comma-separated)")
	f.StringVar(&splitName, "split", "test", "train or test, with --index")
	f.IntVar(&maxSteps, "max-steps", 0, fmt.Sprintf("decoding step cap, 1..%d (default: the model's max_steps)", model.MaxStepCap))
	f.Uint64Var(&dataSeed, "data-seed", defaultDataSeed, "Multi-MNIST generation seed")
	return c
}

// checkSteps validates a --max-steps flag: unset means the model's cap.
func checkSteps(c *cobra.Command, maxSteps int) error {
	return experiment.CheckMaxSteps(maxSteps, c.Flags().Changed("max-steps"))
}
