package experiment

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/train"
	"github.com/spf13/pflag"
)

// Averaging is lenspec train average: the model directories whose weights
// are averaged (model.Average), the weights (none: equal), and the
// directory the average is written to.
type Averaging struct {
	Out     string
	Models  []string
	Weights []float64
}

// RegisterFlags adds --out and --weights to fs; the models are the
// command's arguments.
func (a *Averaging) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&a.Out, "out", "", "directory to write the averaged model to (new, or empty)")
	fs.Float64SliceVar(&a.Weights, "weights", nil, "one weight per model, finite and non-negative, normalised to sum to 1 (default: equal)")
}

// AveragedModel is one input of an average: its directory, content digest
// (model.Digest) and normalised weight.
type AveragedModel struct {
	Dir    string  `json:"model"`
	Digest string  `json:"model_sha256"`
	Weight float64 `json:"weight"`
}

// AverageSummary is what Average wrote: the new model's directory and
// digest, and its inputs.
type AverageSummary struct {
	Out    string          `json:"out"`
	Digest string          `json:"model_sha256"`
	Models []AveragedModel `json:"models"`
}

// WriteText prints the summary as lenspec train average does.
func (s AverageSummary) WriteText(w io.Writer) {
	parts := make([]string, len(s.Models))
	for i, m := range s.Models {
		parts[i] = fmt.Sprintf("%g × %s", m.Weight, m.Dir)
	}
	fmt.Fprintf(w, "averaged %s into %s (model_sha256 %s)\n", strings.Join(parts, " + "), s.Out, s.Digest)
}

// Validate checks the settings: an output directory that holds no model
// and is none of the inputs, two models or more, and finite,
// non-negative weights, one a model, with a positive sum.
func (a *Averaging) Validate() error {
	if a.Out == "" {
		return SettingsError{errors.New("--out is required")}
	}
	if len(a.Models) < 2 {
		return SettingsError{fmt.Errorf("give two model directories or more to average (got %d)", len(a.Models))}
	}
	if _, _, err := a.weights(); err != nil {
		return err
	}
	out, err := filepath.Abs(a.Out)
	if err != nil {
		return SettingsError{fmt.Errorf("--out %s: %w", a.Out, err)}
	}
	for _, dir := range a.Models {
		if d, err := filepath.Abs(dir); err == nil && d == out {
			return SettingsError{fmt.Errorf("--out %s is one of the models averaged", a.Out)}
		}
	}
	entries, err := os.ReadDir(a.Out)
	switch {
	case err == nil && len(entries) > 0:
		return SettingsError{fmt.Errorf("--out %s is not empty: write the average to a new directory", a.Out)}
	case errors.Is(err, syscall.ENOTDIR):
		// --out, or a directory it would be made in, is a file.
		return SettingsError{fmt.Errorf("--out %s: not a directory (a file is in its path): write the average to a new directory", a.Out)}
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("--out %s: %w", a.Out, err)
	}
	return nil
}

// weights are the weights given, or equal ones, and the same divided by
// their sum (model.AverageWeights), or a SettingsError.
func (a *Averaging) weights() (given, norm []float64, err error) {
	given = a.Weights
	if len(given) == 0 {
		given = make([]float64, len(a.Models))
		for i := range given {
			given[i] = 1
		}
	}
	norm, err = model.AverageWeights(given, len(a.Models))
	if err != nil {
		return nil, nil, SettingsError{fmt.Errorf("--weights: %w", err)}
	}
	return given, norm, nil
}

// Average loads the models, averages them and writes the average to Out,
// with a training record naming each input by directory, digest and
// weight, and the command that reproduces it.
func (a *Averaging) Average() (AverageSummary, error) {
	if err := a.Validate(); err != nil {
		return AverageSummary{}, err
	}
	weights, norm, err := a.weights()
	if err != nil {
		return AverageSummary{}, err
	}
	ds := make([]model.Decoder[float64], len(a.Models))
	s := AverageSummary{Out: a.Out}
	ws := make([]string, len(a.Models))
	for i, dir := range a.Models {
		d, err := model.Load[float64](dir)
		if err != nil {
			return AverageSummary{}, err
		}
		digest, err := model.Digest(dir)
		if err != nil {
			return AverageSummary{}, err
		}
		ds[i] = d
		s.Models = append(s.Models, AveragedModel{Dir: dir, Digest: digest, Weight: norm[i]})
		ws[i] = strconv.FormatFloat(weights[i], 'g', -1, 64)
	}
	avg, err := model.Average(ds, weights)
	if err != nil {
		return AverageSummary{}, fmt.Errorf("%s: %w", strings.Join(a.Models, ", "), err)
	}
	quoted := make([]string, len(a.Models))
	for i, m := range a.Models {
		quoted[i] = train.ShellWord(m)
	}
	avg.Config().Training = map[string]any{
		"average": s.Models,
		"command": fmt.Sprintf("lenspec train average --out DIR --weights %s %s", strings.Join(ws, ","), strings.Join(quoted, " ")),
	}
	if err := model.Save(a.Out, avg); err != nil {
		return AverageSummary{}, err
	}
	digest, err := model.Digest(a.Out)
	if err != nil {
		return AverageSummary{}, err
	}
	s.Digest = digest
	return s, nil
}
