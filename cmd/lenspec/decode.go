package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/safetensors"
	"github.com/spf13/cobra"
)

// decodeRecord is the JSON form of one decoded image.
type decodeRecord struct {
	Source       string   `json:"source"`
	Label        []int    `json:"label,omitempty"`
	Tokens       []int    `json:"tokens"`
	Text         []string `json:"text"`
	Length       *int     `json:"length"` // null when the output did not stop
	Stopped      bool     `json:"stopped"`
	MinMargin    float64  `json:"min_margin"`
	MinRelMargin float64  `json:"min_rel_margin"`
}

func newRecord(m *model.Captioner[float64], src string, label []int, r model.Result) decodeRecord {
	rec := decodeRecord{Source: src, Label: label, Tokens: r.Tokens, Stopped: r.Stopped, MinMargin: r.MinMargin, MinRelMargin: r.MinRelMargin}
	if rec.Tokens == nil {
		rec.Tokens = []int{}
	}
	for _, t := range r.Tokens {
		rec.Text = append(rec.Text, m.Cfg.Vocab[t])
	}
	if r.Stopped {
		l := len(r.Tokens)
		rec.Length = &l
	}
	return rec
}

func (r decodeRecord) line() string {
	out := strings.Join(r.Text, " ")
	if r.Stopped {
		out += " <eos>"
	} else {
		out += " … (no eos within the step cap)"
	}
	s := fmt.Sprintf("%s: %s", r.Source, strings.TrimSpace(out))
	if r.Label != nil {
		s += fmt.Sprintf("   [label %v]", r.Label)
	}
	if r.MinRelMargin < model.RelTieMargin {
		s += "   (tie: a top-2 logit margin below 1e-6)"
	}
	return s
}

func newDecodeCmd(a *app) *cobra.Command {
	var modelDir, image, input, splitName string
	var indices []int
	var maxSteps int
	var dataSeed uint64
	c := &cobra.Command{
		Use:   "decode",
		Short: "Greedily decode images (PNG files or Multi-MNIST canvases) and print the tokens",
		Long: `Greedily decode with the float64 replay path (ties go to the lowest token
index). Each output shows its tokens, whether it stopped within the step cap,
and its smallest top-2 logit margin.`,
		Args: noArgs,
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
			m, err := model.Load[float64](modelDir)
			if err != nil {
				return err
			}
			var x []float64
			var srcs []string
			var labels [][]int
			if input != "" {
				if x, err = readInput(input, m.Cfg.InputSize()); err != nil {
					return err
				}
				srcs, labels = []string{input}, [][]int{nil}
			} else if image != "" {
				if m.Cfg.Input.Height != multimnist.Height || m.Cfg.Input.Width != multimnist.Width || m.Cfg.Input.Channels != 1 {
					return fmt.Errorf("%s: model input is %dx%dx%d, PNG decoding supports 1x28x112", modelDir, m.Cfg.Input.Channels, m.Cfg.Input.Height, m.Cfg.Input.Width)
				}
				if x, err = multimnist.ReadPNG(image); err != nil {
					return err
				}
				srcs, labels = []string{image}, [][]int{nil}
			} else {
				_, ds, err := a.dataset(c.Context(), dataSeed, splitName)
				if err != nil {
					return err
				}
				for _, i := range indices {
					if i < 0 || i >= ds.N {
						return usagef("--index %d outside the %s split of %d", i, splitName, ds.N)
					}
				}
				x = make([]float64, len(indices)*m.Cfg.InputSize())
				multimnist.Normalize(x, ds, indices)
				for _, i := range indices {
					srcs = append(srcs, fmt.Sprintf("%s[%d]", splitName, i))
					labels = append(labels, ds.Labels[i])
				}
			}
			res, err := m.Decode(c.Context(), x, len(srcs), maxSteps)
			if err != nil {
				return err
			}
			for i, r := range res {
				rec := newRecord(m, srcs[i], labels[i], r)
				if err := a.emit(rec, func(w io.Writer) { fmt.Fprintln(w, rec.line()) }); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&modelDir, "model", "", "model directory (config.json + model.safetensors)")
	f.StringVar(&image, "image", "", "PNG image (112x28 grayscale; 0..255 maps to [-1, 1])")
	f.StringVar(&input, "input", "", "exact input: a safetensors file with a tensor \"input\" (attack witnesses are saved this way)")
	f.IntSliceVar(&indices, "index", nil, "Multi-MNIST canvas index (repeatable, or comma-separated)")
	f.StringVar(&splitName, "split", "test", "train or test, with --index")
	f.IntVar(&maxSteps, "max-steps", 0, "decoding step cap (default: the model's max_steps)")
	f.Uint64Var(&dataSeed, "data-seed", defaultDataSeed, "Multi-MNIST generation seed")
	return c
}

// readInput reads the exact input values of a witness file.
func readInput(path string, size int) ([]float64, error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, ok := f.Tensor("input")
	if !ok {
		return nil, fmt.Errorf("%s: no tensor named \"input\"", path)
	}
	x, err := t.Float64s()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(x) != size {
		return nil, fmt.Errorf("%s: input has %d values, the model reads %d", path, len(x), size)
	}
	if err := t.CheckFinite(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return x, nil
}
