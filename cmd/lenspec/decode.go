package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/spf13/cobra"
)

// decodeRecord is the JSON form of one decoded input.
type decodeRecord struct {
	Source       string   `json:"source"`
	Label        []int    `json:"label,omitempty"`
	Tokens       []int    `json:"tokens"`
	Text         []string `json:"text"`
	Length       *int     `json:"length"` // null when the output did not stop
	Stopped      bool     `json:"stopped"`
	MinMargin    float64  `json:"min_margin"`
	MinRelMargin float64  `json:"min_rel_margin"`
	// NonFinite: the logits after Tokens overflowed (model.Result), so
	// decoding stopped there without eos.
	NonFinite bool `json:"non_finite,omitempty"`
}

func newRecord(vocab []string, src string, label []int, r model.Result) decodeRecord {
	rec := decodeRecord{Source: src, Label: label, Tokens: r.Tokens, Stopped: r.Stopped,
		MinMargin: jsonMargin(r.MinMargin), MinRelMargin: jsonMargin(r.MinRelMargin), NonFinite: r.NonFinite}
	if rec.Tokens == nil {
		rec.Tokens = []int{}
	}
	for _, t := range r.Tokens {
		rec.Text = append(rec.Text, vocab[t])
	}
	if r.Stopped {
		l := len(r.Tokens)
		rec.Length = &l
	}
	return rec
}

// jsonMargin makes a margin JSON-safe: +Inf (no finite step decoded,
// when the first step's logits overflowed) is the largest float64.
func jsonMargin(v float64) float64 {
	if math.IsInf(v, 1) {
		return math.MaxFloat64
	}
	return v
}

func (r decodeRecord) line() string {
	out := strings.Join(r.Text, " ")
	switch {
	case r.Stopped:
		out += " <eos>"
	case r.NonFinite:
		out += fmt.Sprintf(" … (non-finite logits after %d tokens: the state overflowed; no eos until then)", len(r.Tokens))
	default:
		out += " … (no eos within the step cap)"
	}
	s := fmt.Sprintf("%s: %s", r.Source, strings.TrimSpace(out))
	if r.Label != nil {
		s += fmt.Sprintf("   [label %v]", r.Label)
	}
	if r.MinRelMargin < model.RelTieMargin {
		s += fmt.Sprintf("   (tie: a top-2 logit margin below %g relative)", model.RelTieMargin)
	}
	return s
}

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

// decodeInputs reads what decode decodes: a witness file, a PNG image,
// or canvases of the data set the model runs on, with their names and
// labels (nil for files).
func (a *app) decodeInputs(ctx context.Context, modelDir string, in model.InputSpec, input, image string, indices []int, splitName string, dataSeed uint64) (x []float64, srcs []string, labels [][]int, err error) {
	switch {
	case input != "":
		if x, err = experiment.ReadWitness(input, in); err != nil {
			return nil, nil, nil, err
		}
		srcs, labels = []string{input}, [][]int{nil}
	case image != "":
		if in.Kind != model.Continuous || len(in.Shape) != 3 || in.Shape[0] != 1 {
			return nil, nil, nil, fmt.Errorf("%s: the model reads %v %v inputs; PNG decoding supports one-channel images", modelDir, in.Kind, in.Shape)
		}
		if x, err = multimnist.ReadPNG(image, in.Shape[1], in.Shape[2], in.Min, in.Max); err != nil {
			return nil, nil, nil, err
		}
		srcs, labels = []string{image}, [][]int{nil}
	default:
		data, err := a.modelData(ctx, in, dataSeed, splitName)
		if err != nil {
			return nil, nil, nil, err
		}
		n := data.Source.Len()
		for _, i := range indices {
			if i < 0 || i >= n {
				return nil, nil, nil, usagef("--index %d outside the %s split of %d", i, splitName, n)
			}
		}
		var lab [][]int
		x, _, lab = data.Source.Batch(indices, nil)
		for k, i := range indices {
			srcs = append(srcs, fmt.Sprintf("%s[%d]", splitName, i))
			labels = append(labels, lab[k])
		}
	}
	return x, srcs, labels, nil
}

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
			x, srcs, labels, err := a.decodeInputs(c.Context(), modelDir, d.Input(), input, image, indices, splitName, dataSeed)
			if err != nil {
				return err
			}
			res, err := model.Decode(c.Context(), d, model.Batch[float64]{X: x}, maxSteps)
			if err != nil {
				return err
			}
			for i, r := range res {
				rec := newRecord(d.Config().Vocab, srcs[i], labels[i], r)
				if err := a.emit(rec, func(w io.Writer) { fmt.Fprintln(w, rec.line()) }); err != nil {
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
	if c.Flags().Changed("max-steps") && (maxSteps < 1 || maxSteps > model.MaxStepCap) {
		return usagef("--max-steps %d: want 1..%d", maxSteps, model.MaxStepCap)
	}
	return nil
}
