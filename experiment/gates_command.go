package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/lenspec/lenspec/model"
	"github.com/spf13/pflag"
)

// GateSettings are lenspec gates' settings: the model (an LSTM decoder),
// its clean and attacked inputs, the |pre-activation| past which a gate
// counts as saturated, and the step cap (0: the model's).
type GateSettings struct {
	Model     string
	MaxSteps  int
	Inputs    GateInputs
	Threshold float64
}

// RegisterFlags adds the settings to fs as lenspec gates' flags.
func (s *GateSettings) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Model, "model", "", "model directory (an LSTM decoder)")
	s.Inputs.RegisterFlags(fs)
	fs.Float64Var(&s.Threshold, "threshold", model.DefaultSaturation, "a gate counts as saturated where |pre-activation| exceeds this")
	RegisterMaxSteps(fs, &s.MaxSteps)
}

// GateReport is what Measure found, a set per kind of path, with the
// threshold it was measured at. Its JSON is the list of sets.
type GateReport struct {
	Sets      []GateSet
	Threshold float64
}

// MarshalJSON writes the report as its list of sets.
func (r GateReport) MarshalJSON() ([]byte, error) { return json.Marshal(r.Sets) }

// WriteText writes each set's Text.
func (r GateReport) WriteText(w io.Writer) {
	for _, s := range r.Sets {
		fmt.Fprint(w, s.Text(r.Threshold))
	}
}

// Measure checks the settings (as SettingsErrors; env.Changed reports the
// flags given), loads the model, reads the inputs (env's sources for
// test images) and measures the gates along their paths (Gates).
func (s *GateSettings) Measure(ctx context.Context, env Env) (GateReport, error) {
	if s.Model == "" {
		return GateReport{}, SettingsError{errors.New("--model is required")}
	}
	if !(s.Threshold > 0) || math.IsInf(s.Threshold, 0) {
		return GateReport{}, SettingsError{fmt.Errorf("--threshold %v: want a positive number", s.Threshold)}
	}
	if err := CheckMaxSteps(s.MaxSteps, env.Changed("max-steps")); err != nil {
		return GateReport{}, err
	}
	m, err := LoadModel(s.Model)
	if err != nil {
		return GateReport{}, err
	}
	if _, ok := m.D64.(model.GateStepper[float64]); !ok {
		return GateReport{}, fmt.Errorf("%s: a %s has no LSTM gates to measure", s.Model, m.D64.Config().Architecture)
	}
	clean, attacked, err := s.Inputs.Read(ctx, m, env.Sources, env.Logf)
	if err != nil {
		return GateReport{}, err
	}
	sets, err := Gates(ctx, m, clean, attacked, s.MaxSteps, s.Threshold)
	return GateReport{sets, s.Threshold}, err
}
