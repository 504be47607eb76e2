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
// otherwise. Settings out of range are a SettingsError. Units recorded as
// crashed do not stop it: it summarises, and returns the summary with a
// *CrashedError naming them.
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
	var crashed []*CrashedError
	for _, e := range eps {
		for _, cfg := range cfgs {
			cfg.Eps = []float64{e}
			if err := RunAttack(ctx, cfg, nil); !joinCrashed(&crashed, err) {
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
	var sum Summary
	if cfgs[0].text() {
		sum, err = SummariseTextAttacks(recs, dir, title)
	} else {
		sum, err = SummariseAttacks(recs, dir, title)
	}
	if err != nil {
		return nil, err
	}
	return sum, crashedErr(crashed)
}

// RunVerifyExperiment runs the verification c (RunVerify, its progress
// and data set), then summarises the records of this run, resumed ones
// and other shards' included, into dir as SummariseVerify does. Settings
// out of range are a SettingsError. Units recorded as crashed do not stop
// it: it summarises, and returns the summary with a *CrashedError naming
// them.
func RunVerifyExperiment(ctx context.Context, c VerifyConfig, dir, title string) (*VerifySummary, error) {
	// Validated, as RunVerify does, so that Match selects the records'
	// settings (the step cap and K̂ filled in).
	if err := c.Validate(); err != nil {
		return nil, SettingsError{err}
	}
	var crashed []*CrashedError
	if err := RunVerify(ctx, c, nil); !joinCrashed(&crashed, err) {
		return nil, err
	}
	recs, err := ReadRun(c.Out, c.Match)
	if err != nil {
		return nil, err
	}
	sum, err := SummariseVerify(recs, dir, title)
	if err != nil {
		return nil, err
	}
	return sum, crashedErr(crashed)
}
