package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/spf13/pflag"
)

// Decoded is one greedily decoded input as lenspec decode reports it.
type Decoded struct {
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

// NewDecoded is the report of r, the decoding of the input named src
// with label (nil for none), its tokens spelt from vocab. Margins of +Inf
// (no finite step decoded) are the largest float64, which JSON can hold.
func NewDecoded(vocab []string, src string, label []int, r model.Result) Decoded {
	rec := Decoded{Source: src, Label: label, Tokens: nonNil(r.Tokens), Stopped: r.Stopped,
		MinMargin: margin(r.MinMargin), MinRelMargin: margin(r.MinRelMargin), NonFinite: r.NonFinite}
	for _, t := range r.Tokens {
		rec.Text = append(rec.Text, vocab[t])
	}
	if r.Stopped {
		l := len(r.Tokens)
		rec.Length = &l
	}
	return rec
}

// Line is the decoding on one line: the source, the tokens and how the
// output ended, the label, and whether the path has a tie.
func (r Decoded) Line() string {
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

// DecodeSettings are lenspec decode's: the model, the inputs (a witness
// file Input, a PNG Image, or canvases Indices of Split of the data set
// DataSeed generates: DecodeInputs) and the step cap (0: the model's).
type DecodeSettings struct {
	Model, Image, Input, Split string
	Indices                    []int
	MaxSteps                   int
	DataSeed                   uint64
}

// RegisterFlags adds the settings to fs as lenspec decode's flags.
func (s *DecodeSettings) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Model, "model", "", "model directory (config.json + model.safetensors)")
	fs.StringVar(&s.Image, "image", "", "PNG image of the model's input size or an integer multiple of it; 0..255 maps to the input range")
	fs.StringVar(&s.Input, "input", "", "exact input: a safetensors file with a tensor \"input\" (attack and verification witnesses are saved this way)")
	fs.IntSliceVar(&s.Indices, "index", nil, "canvas index in the data set the model reads: Multi-MNIST, or the captions data set for a Show-and-Tell model (repeatable, or comma-separated)")
	fs.StringVar(&s.Split, "split", "test", "train or test, with --index")
	RegisterMaxSteps(fs, &s.MaxSteps)
	fs.Uint64Var(&s.DataSeed, "data-seed", DefaultDataSeed, "generation seed of the data set --index reads (Multi-MNIST or the captions data set)")
}

// ValidateFlags checks the settings before any work, as SettingsErrors
// naming the flags (changed reports which were given): a model, exactly
// one kind of input, the step cap (CheckMaxSteps) and the split.
func (s DecodeSettings) ValidateFlags(changed func(flag string) bool) error {
	if s.Model == "" {
		return SettingsError{errors.New("--model is required")}
	}
	given := 0
	for _, g := range []bool{s.Image != "", s.Input != "", len(s.Indices) > 0} {
		if g {
			given++
		}
	}
	if given != 1 {
		return SettingsError{errors.New("give exactly one of --image, --input or --index")}
	}
	if err := CheckMaxSteps(s.MaxSteps, changed("max-steps")); err != nil {
		return err
	}
	return CheckSplit(s.Split)
}

// DecodeInputs reads the inputs lenspec decode decodes for the model in
// modelDir, which reads in: a witness file (input), a PNG image (image),
// or else canvases indices of split of the data set the model runs on
// (generated with seed). It returns them one after the other with their
// names and labels (nil for files). An index outside the split is a
// SettingsError.
func (s Sources) DecodeInputs(ctx context.Context, modelDir string, in model.InputSpec, input, image string, indices []int, split string, seed uint64) (x []float64, names []string, labels [][]int, err error) {
	switch {
	case input != "":
		if x, err = ReadWitness(input, in); err != nil {
			return nil, nil, nil, err
		}
		return x, []string{input}, [][]int{nil}, nil
	case image != "":
		if in.Kind != model.Continuous || len(in.Shape) != 3 || in.Shape[0] != 1 {
			return nil, nil, nil, fmt.Errorf("%s: the model reads %v %v inputs; PNG decoding supports one-channel images", modelDir, in.Kind, in.Shape)
		}
		if x, err = multimnist.ReadPNG(image, in.Shape[1], in.Shape[2], in.Min, in.Max); err != nil {
			return nil, nil, nil, err
		}
		return x, []string{image}, [][]int{nil}, nil
	}
	data, err := s.ImageData(ctx, in, seed, split)
	if err != nil {
		return nil, nil, nil, err
	}
	n := data.Source.Len()
	for _, i := range indices {
		if i < 0 || i >= n {
			return nil, nil, nil, SettingsError{fmt.Errorf("index %d outside the %s split of %d", i, split, n)}
		}
	}
	x, _, labels = data.Source.Batch(indices, nil)
	for _, i := range indices {
		names = append(names, fmt.Sprintf("%s[%d]", split, i))
	}
	return x, names, labels, nil
}

// WriteText writes r's Line.
func (r Decoded) WriteText(w io.Writer) { fmt.Fprintln(w, r.Line()) }

// Decode decodes the inputs the settings name greedily in float64, after
// checking the settings (ValidateFlags; changed reports the flags given)
// and reading the inputs (DecodeInputs, from env's sources). An index
// outside the split is a SettingsError naming --index.
func (s DecodeSettings) Decode(ctx context.Context, env Env) ([]Decoded, error) {
	if err := s.ValidateFlags(env.Changed); err != nil {
		return nil, err
	}
	d, err := model.Load[float64](s.Model)
	if err != nil {
		return nil, err
	}
	src, err := env.Sources()
	if err != nil {
		return nil, err
	}
	x, names, labels, err := src.DecodeInputs(ctx, s.Model, d.Input(), s.Input, s.Image, s.Indices, s.Split, s.DataSeed)
	if errors.As(err, new(SettingsError)) {
		return nil, SettingsError{fmt.Errorf("--%v", err)}
	}
	if err != nil {
		return nil, err
	}
	res, err := model.Decode(ctx, d, model.Batch[float64]{X: x}, s.MaxSteps)
	if err != nil {
		return nil, err
	}
	out := make([]Decoded, len(res))
	for i, r := range res {
		out[i] = NewDecoded(d.Config().Vocab, names[i], labels[i], r)
	}
	return out, nil
}
