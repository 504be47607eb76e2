package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lenspec/lenspec/attack"
)

// SettingsError marks a failure caused by the settings an experiment was
// given (not by its data, models or files), which a command reports as a
// usage error.
type SettingsError struct{ Err error }

func (e SettingsError) Error() string { return e.Err.Error() }
func (e SettingsError) Unwrap() error { return e.Err }

// settingsErr wraps err, if not nil, as a SettingsError.
func settingsErr(err error) error {
	if err == nil {
		return nil
	}
	return SettingsError{err}
}

// CaptionExperiment is the paper's Show-and-Tell experiment (§5.2) over
// several image captioners: random search and PGD with each loss at every
// radius on the same random test images, then per model the length figure
// and table, and one table comparing the models.
type CaptionExperiment struct {
	// Models are model directories; each model's records, witnesses and
	// summary go to Out/NAME, NAME its directory's base name.
	Models []string
	Out    string
	// Images are drawn at random from the test split with Seed; only the
	// first First of them (0: all) are attacked, so a run grows by rerunning
	// with a larger First, and the summary covers every record of the draw.
	Images, First int
	Eps           []float64
	// Samples is random search's budget per image.
	Samples int
	// Steps, LR, Clip and Restarts are PGD's, one run per loss of Losses.
	Steps, Restarts int
	LR, Clip        float64
	Losses          []attack.Loss
	MaxSteps        int
	// Cap is the training cap on output length the table counts outputs
	// past.
	Cap int
	// Batch is images per batched PGD run (speed only).
	Batch int
	Seed  uint64
	// SummaryOnly skips the attacks and summarises the records there are.
	SummaryOnly bool
	// Data is the data set a model runs on.
	Data     func(ctx context.Context, m *Model) (Data, error)
	Progress Progress
	Logf     func(format string, args ...any)

	// lossesErr is --losses' parse error (RegisterFlags), reported by
	// Validate.
	lossesErr error
}

// configs are the runs of one model: random search, then PGD with each
// loss.
func (e CaptionExperiment) configs(m *Model, dir string) ([]AttackConfig, error) {
	base := AttackConfig{Model: m, Eps: e.Eps, Batch: e.Batch, Out: filepath.Join(dir, "attacks.jsonl"),
		WitnessDir: filepath.Join(dir, "witnesses"), Logf: e.Logf}
	base.Settings = AttackSettings{MaxLen: -1, MaxSteps: e.MaxSteps, Seed: e.Seed}
	rs := base
	rs.Method, rs.Settings.Budget = MethodRandom, e.Samples
	cfgs := []AttackConfig{rs}
	for _, loss := range e.Losses {
		p := base
		p.Method = MethodPGD
		p.Settings.Budget, p.Settings.Loss, p.Settings.LR, p.Settings.Clip, p.Settings.Restarts, p.Settings.EarlyStop = e.Steps, string(loss), e.LR, e.Clip, e.Restarts, true
		cfgs = append(cfgs, p)
	}
	for i := range cfgs {
		if err := cfgs[i].Validate(); err != nil {
			return nil, SettingsError{fmt.Errorf("%s: %w", m.Dir, err)}
		}
	}
	return cfgs, nil
}

// Run checks the settings (Validate), runs the experiment (unless
// SummaryOnly), writes each model's summary and Out/comparison.md, and
// returns every model's rows and the comparison table. A model with no
// records yet is left out of the summaries. Units recorded as crashed do
// not stop it: the rows and table come with a *CrashedError per results
// file naming them (errors.Join'ed).
func (e CaptionExperiment) Run(ctx context.Context) ([]CaptionRow, string, error) {
	if err := e.Validate(); err != nil {
		return nil, "", err
	}
	var rows []CaptionRow
	var crashed []*CrashedError
	for _, dir := range e.Models {
		r, err := e.model(ctx, dir, &crashed)
		if err != nil {
			return nil, "", err
		}
		rows = append(rows, r...)
	}
	if len(rows) == 0 {
		return nil, "", fmt.Errorf("%s: no records to summarise", e.Out)
	}
	table := CaptionTable(rows, e.Cap)
	if err := os.WriteFile(filepath.Join(e.Out, "comparison.md"), []byte(table), 0o644); err != nil {
		return nil, "", err
	}
	return rows, table, crashedErr(crashed)
}

// model attacks and summarises the model in dir, adding the units of its
// runs recorded as crashed to crashed.
func (e CaptionExperiment) model(ctx context.Context, dir string, crashed *[]*CrashedError) ([]CaptionRow, error) {
	name := filepath.Base(filepath.Clean(dir))
	m, err := LoadModel(dir)
	if err != nil {
		return nil, err
	}
	cfgs, err := e.configs(m, filepath.Join(e.Out, name))
	if err != nil {
		return nil, err
	}
	if e.Data == nil {
		return nil, errors.New("caption experiment: no data")
	}
	data, err := e.Data(ctx, m)
	if err != nil {
		return nil, err
	}
	picked, err := PickSamples(e.Images, nil, data.Source.Len(), e.Seed)
	if err != nil {
		return nil, settingsErr(err)
	}
	for i := range cfgs {
		cfgs[i].Data, cfgs[i].Samples = data, picked
	}
	if !e.SummaryOnly {
		for _, eps := range e.Eps {
			for _, cfg := range cfgs {
				cfg.Eps, cfg.Progress = []float64{eps}, e.Progress
				if e.First > 0 && e.First < len(picked) {
					cfg.Samples = picked[:e.First]
				}
				if err := RunAttack(ctx, cfg, nil); !joinCrashed(crashed, err) {
					return nil, err
				}
			}
		}
	}
	// One file holds the model's runs; each is an experiment of its own
	// (Join refuses to mix them), read apart.
	var recs []AttackRecord
	for _, cfg := range cfgs {
		r, err := ReadRun(cfg.Out, cfg.Match)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r...)
	}
	if len(recs) == 0 {
		if e.Logf != nil {
			e.Logf("%s: no records yet", name)
		}
		return nil, nil
	}
	sum, err := SummariseCaptionAttacks(ctx, recs, m, name, filepath.Join(e.Out, name), name+": output length under attack", e.Cap)
	if err != nil {
		return nil, err
	}
	return sum.Rows, nil
}
