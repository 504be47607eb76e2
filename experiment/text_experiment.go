package experiment

import (
	"context"
	"errors"
)

// RunTextExperiment runs every configuration (one per method, all writing
// one results file, with their data, samples and progress set) at each
// radius of eps in turn, so the smallest radius is done first for every
// method, then summarises all their records, resumed ones included, into
// dir.
func RunTextExperiment(ctx context.Context, cfgs []AttackConfig, eps []float64, dir, title string) (*TextSummary, error) {
	if len(cfgs) == 0 {
		return nil, errors.New("text experiment: no methods")
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
	var match []func(AttackRecord) bool
	for _, e := range eps {
		for _, cfg := range cfgs {
			cfg.Eps = []float64{e}
			if err := RunAttack(ctx, cfg, nil); err != nil {
				return nil, err
			}
		}
	}
	for i := range cfgs {
		match = append(match, cfgs[i].Match)
	}
	recs, err := ReadRun(cfgs[0].Out, match...)
	if err != nil {
		return nil, err
	}
	return SummariseTextAttacks(recs, dir, title)
}
