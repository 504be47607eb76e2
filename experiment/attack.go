package experiment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/internal/oneline"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/results"
	"github.com/lenspec/lenspec/spec"
)

// Attack methods.
const (
	MethodRandom = "random"
	MethodPGD    = "pgd"
)

// AttackConfig is one attack run: a method over samples × radii.
type AttackConfig struct {
	Model    *Model
	Data     Data
	Samples  []int
	Eps      []float64
	Method   string
	Settings AttackSettings
	// Batch is how many samples PGD runs side by side (and random search
	// decodes Batch·20 samples at a time); it changes speed, not results.
	Batch int
	// Out is the results file (JSONL); WitnessDir (default: Out without
	// its extension, plus ".witnesses") receives successful witnesses.
	Out, WitnessDir string
	Shard           Shard
	Progress        Progress
	Logf            func(format string, args ...any)
}

// Validate checks the settings before any work (the data and samples may
// not be loaded yet), resolving the step cap (0: the model's).
func (c *AttackConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Model == nil {
		return errors.New("no model")
	}
	if c.Method != MethodRandom && c.Method != MethodPGD {
		bad("method %q: want %s or %s", c.Method, MethodRandom, MethodPGD)
	}
	if err := checkEps(c.Eps, c.Model.D64.Input()); err != nil {
		errs = append(errs, err)
	}
	s := &c.Settings
	checkRun(bad, c.Model.D32, &s.MaxSteps, s.MaxLen, c.Batch)
	if s.Budget < 0 || s.Budget > 1e9 {
		bad("budget %d must be in 0..1e9", s.Budget)
	}
	if c.Method == MethodPGD {
		if err := c.pgd().Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	*s = s.Normalize(c.Method)
	c.Shard, c.WitnessDir = outputs(c.Shard, c.Out, c.WitnessDir)
	return errors.Join(errs...)
}

func (c *AttackConfig) pgd() attack.PGDOptions {
	s := c.Settings
	return attack.PGDOptions{Steps: s.Budget, LR: s.LR, Eps: s.Clip, Loss: attack.Loss(s.Loss), Restarts: s.Restarts, MaxSteps: s.MaxSteps, EarlyStop: s.EarlyStop}
}

// base is the record every unit of the run starts from.
func (c *AttackConfig) base() AttackRecord {
	return AttackRecord{SchemaVersion: SchemaVersion, Model: c.Model.Dir, ModelSHA256: c.Model.Digest, Data: c.Data.Ref, Method: c.Method, Settings: c.Settings}
}

// units lists this shard's units.
func (c *AttackConfig) units() []unit {
	return shardUnits(c.Eps, c.Samples, c.Shard, func(sample int, eps float64) string {
		r := c.base()
		r.Sample, r.Eps = sample, eps
		return AttackKey(r)
	})
}

// RunAttack runs every unit of c not yet in its results file, appending a
// record per unit as it finishes and passing it to emit (which may be
// nil). A unit that fails is recorded with its error and the run goes on;
// an interrupted run returns ctx's error and resumes where it stopped.
func RunAttack(ctx context.Context, c AttackConfig, emit func(AttackRecord) error) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("attack: %w", err)
	}
	if c.Data.Source == nil || len(c.Samples) == 0 {
		return errors.New("attack: no data or no samples")
	}
	f, err := openOut(c.Out, c.Shard, attackKey)
	if err != nil {
		return err
	}
	defer f.Close()
	logf(c.Logf, f)
	r := &attackRun{c: &c, f: f, emit: emit}
	units := c.units()
	for i := 0; i < len(units); {
		// One radius at a time, Batch samples at a time.
		j := i
		var todo []unit
		for ; j < len(units) && units[j].eps == units[i].eps && len(todo) < c.Batch; j++ {
			if f.Done(units[j].key) {
				continue
			}
			if f.Attempts(units[j].key) >= crashLimit {
				if err := r.fail(units[j], crashed(f, units[j].key)); err != nil {
					return err
				}
				continue
			}
			todo = append(todo, units[j])
		}
		i = j
		if len(todo) == 0 {
			continue
		}
		if err := r.run(ctx, todo); err != nil {
			return err
		}
	}
	return nil
}

// logf reports a resumed file.
func logf(l func(string, ...any), f *results.File) {
	if l != nil && f.Len() > 0 {
		l("%s: %d records already done; resuming", f.Path(), f.Len())
	}
}

// attackRun is the state of one RunAttack.
type attackRun struct {
	c    *AttackConfig
	f    *results.File
	emit func(AttackRecord) error
}

// checkRun checks the settings every attack shares: the step cap (0: the
// model's, filled in), K̂ below it, and the batch size.
func checkRun(bad func(string, ...any), d model.Decoder[float32], maxSteps *int, maxLen, batch int) {
	if *maxSteps == 0 {
		*maxSteps = d.MaxSteps()
	}
	if *maxSteps < 1 || *maxSteps > model.MaxStepCap {
		bad("step cap %d must be in 1..%d", *maxSteps, model.MaxStepCap)
	}
	if maxLen < -1 || maxLen >= *maxSteps {
		bad("K̂ %d must be below the step cap %d (no output can be longer than the cap shows)", maxLen, *maxSteps)
	}
	if batch < 1 {
		bad("batch %d must be positive", batch)
	}
}

// run attacks a batch of units of one radius (see batchOrAlone).
func (r *attackRun) run(ctx context.Context, us []unit) error {
	return batchOrAlone(ctx, r.f, us, r.attack, r.fail)
}

// fail records a failed unit.
func (r *attackRun) fail(u unit, cause error) error {
	rec := r.c.base()
	rec.Sample, rec.Eps, rec.Error, rec.Crashed = u.sample, u.eps, oneline.Fold(cause.Error()), isCrash(cause)
	rec.Label = nonNil(r.c.Data.label(u.sample))
	return r.finish(u.key, rec)
}

func (r *attackRun) finish(key string, rec AttackRecord) error { return record(r.f, r.emit, key, rec) }

// attack runs one batch of units.
func (r *attackRun) attack(ctx context.Context, us []unit) error {
	c, m := r.c, r.c.Model
	spec0 := m.D64.Input()
	targets := make([]attack.Target, len(us))
	labels := make([][]int, len(us))
	for i, u := range us {
		x0, label := c.Data.sample(u.sample)
		labels[i] = label
		ball, err := spec.NewBall(x0, u.eps, spec0.Min, spec0.Max)
		if err != nil {
			return fmt.Errorf("sample %d: %w", u.sample, err)
		}
		if targets[i], err = attack.NewTarget(ctx, m.D64, ball, c.Settings.MaxLen, c.Settings.MaxSteps, c.Settings.Seed, uint64(u.sample)); err != nil {
			return err
		}
	}
	var outs []attack.Outcome
	var secs []float64
	switch c.Method {
	case MethodRandom:
		for i, tg := range targets {
			start := time.Now()
			o, err := attack.RandomSearch(ctx, m.D32, m.D64, tg, attack.RandomOptions{
				Samples: c.Settings.Budget, Batch: c.Batch * 20, MaxSteps: c.Settings.MaxSteps,
				Progress: func(done, best int) {
					if c.Progress != nil {
						c.Progress(fmt.Sprintf("random δ=%g sample %d", us[i].eps, us[i].sample), done, c.Settings.Budget, fmt.Sprintf("longest %d", best))
					}
				},
			})
			if err != nil {
				return err
			}
			outs, secs = append(outs, o), append(secs, time.Since(start).Seconds())
		}
	case MethodPGD:
		opt := c.pgd()
		opt.Progress = func(step, n int) {
			if c.Progress != nil {
				c.Progress(fmt.Sprintf("pgd δ=%g, %d samples", us[0].eps, len(us)), step, opt.Steps, fmt.Sprintf("lengthened %d/%d", n, len(us)))
			}
		}
		start := time.Now()
		var err error
		if outs, err = attack.PGD(ctx, m.D32, m.D64, targets, opt); err != nil {
			return err
		}
		per := time.Since(start).Seconds() / float64(len(us))
		for range us {
			secs = append(secs, per)
		}
	}
	for i, u := range us {
		rec := c.base()
		tg, o := targets[i], outs[i]
		rec.Sample, rec.Eps, rec.Label, rec.K = u.sample, u.eps, nonNil(labels[i]), tg.K
		rec.OrigLength, rec.OrigTokens, rec.OrigNonFinite = len(tg.Original.Tokens), nonNil(tg.Original.Tokens), tg.Original.NonFinite
		rec.AdvLength, rec.AdvTokens, rec.Stopped, rec.NonFinite = len(o.Result.Tokens), nonNil(o.Result.Tokens), o.Result.Stopped, o.Result.NonFinite
		rec.Success, rec.MinRelMargin, rec.Found32 = o.Success, margin(o.Result.MinRelMargin), o.Found32
		rec.Evals, rec.Steps, rec.Seconds, rec.LengthCounts = o.Evals, o.Steps, secs[i], o.LengthCounts
		if o.Success {
			meta := map[string]string{"key": u.key, "model": c.Model.Dir, "model_sha256": c.Model.Digest, "length": fmt.Sprint(rec.AdvLength),
				"stopped": fmt.Sprint(rec.Stopped), "tokens": fmt.Sprint(rec.AdvTokens)}
			var err error
			if rec.Witness, rec.WitnessPNG, err = saveWitness(c.WitnessDir, witnessName(c.Data.Ref, u.sample, u.eps, c.Method, u.key), meta, o.Input, m.D64.Input()); err != nil {
				return recordError{err}
			}
		}
		if err := r.finish(u.key, rec); err != nil {
			return err
		}
	}
	return nil
}
