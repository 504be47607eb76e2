package experiment

import (
	"context"
	"errors"
)

// RunAttackExperiment runs every configuration (one per method, all
// writing one results file, with their data, samples and progress set) at
// each radius of eps in turn, so the smallest radius is done first for
// every method and an interrupted run leaves whole radii, then summarises
// the records of these runs, resumed ones included, into dir: as
// SummariseTextAttacks does for a text model, as SummariseAttacks does
// otherwise. Settings out of range are a SettingsError.
func RunAttackExperiment(ctx context.Context, cfgs []AttackConfig, eps []float64, dir, title string) (Summary, error) {
	if len(cfgs) == 0 {
		return nil, errors.New("attack experiment: no methods")
	}
	// Validated, as RunAttack does, so that their settings are the
	// records' (normalised for the method, the step cap filled in).
	cfgs = append([]AttackConfig(nil), cfgs...)
	for i := range cfgs {
		cfgs[i].Eps = eps
		if err := cfgs[i].Validate(); err != nil {
			return nil, SettingsError{err}
		}
	}
	for _, e := range eps {
		for _, cfg := range cfgs {
			cfg.Eps = []float64{e}
			if err := RunAttack(ctx, cfg, nil); err != nil {
				return nil, err
			}
		}
	}
	var match []func(AttackRecord) bool
	for i := range cfgs {
		match = append(match, cfgs[i].Match)
	}
	recs, err := ReadRun(cfgs[0].Out, match...)
	if err != nil {
		return nil, err
	}
	if cfgs[0].text() {
		return SummariseTextAttacks(recs, dir, title)
	}
	return SummariseAttacks(recs, dir, title)
}
