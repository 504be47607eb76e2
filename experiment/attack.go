package experiment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/internal/oneline"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/results"
	"github.com/lenspec/lenspec/spec"
)

// AttackConfig is one attack run: a method over samples × radii, of
// images or of sentences.
type AttackConfig struct {
	Model *Model
	// Data are the images (Data) or sentences (TextData) the samples
	// index.
	Data     AttackData
	Samples  []int
	Eps      []float64
	Method   string
	Settings AttackSettings
	// Batch is how many samples a batched method (PGD) runs side by side,
	// and random search decodes Batch·20 images or Batch·8 sentences at a
	// time; it changes speed, not results.
	Batch int
	// Out is the results file (JSONL); WitnessDir (default: Out without
	// its extension, plus ".witnesses") receives the witnesses.
	Out, WitnessDir string
	Shard           Shard
	Progress        Progress
	Logf            func(format string, args ...any)
}

// AttackData are the samples of an attack: images (Data) or sentences
// (TextData). Each builds its samples' perturbation sets and its kind's
// part of their records.
type AttackData interface {
	// Reference identifies the data in records.
	Reference() DataRef
	// targets builds the targets of units us for method m.
	targets(ctx context.Context, c *AttackConfig, m Method, us []unit) (batch, error)
	// failed starts the record of a unit that failed.
	failed(rec *AttackRecord, sample int)
	// checkSamples refuses samples outside the data.
	checkSamples(samples []int) error
}

// batch is a batch of targets of one point type, run by a method
// (runBatch).
type batch interface {
	run(ctx context.Context, r *attackRun, m Method, us []unit) error
}

// text reports whether c attacks a text model (by its input kind; the
// data may not be loaded yet).
func (c *AttackConfig) text() bool { return c.Model.D32.Input().Kind == model.Tokens }

// Validate checks the settings before any work (the data and samples may
// not be loaded yet), resolving the step cap (0: the model's).
func (c *AttackConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Model == nil {
		return errors.New("no model")
	}
	text := c.text()
	m, ok := LookupMethod(c.Method)
	if !ok || (text && !m.Text) || (!text && !m.Images) {
		if text {
			bad("method %q: want one of %v", c.Method, MethodNames(true))
		} else {
			bad("method %q: want %s", c.Method, strings.Join(MethodNames(false), " or "))
		}
		m = Method{}
	}
	s := &c.Settings
	if text {
		checkTextEps(bad, c.Eps)
	} else if err := CheckRadii("eps", c.Eps); err != nil {
		errs = append(errs, err)
	} else if err := checkEps(c.Eps, c.Model.D64.Input()); err != nil {
		errs = append(errs, err)
	}
	checkRun(bad, c.Model.D32, &s.MaxSteps, s.MaxLen, c.Batch)
	if err := CheckBudget("budget", s.Budget); err != nil {
		errs = append(errs, err)
	}
	if text {
		checkTextSettings(bad, s)
	}
	if slices.Contains(m.Reads, "restarts") {
		if err := CheckRestarts("restarts", s.Restarts); err != nil {
			errs = append(errs, err)
		}
	}
	if m.Validate != nil {
		if err := m.Validate(*s); err != nil {
			errs = append(errs, err)
		}
	}
	*s = s.Normalize(c.Method)
	c.Shard, c.WitnessDir = outputs(c.Shard, c.Out, c.WitnessDir)
	return errors.Join(errs...)
}

// base is the record every unit of the run starts from.
func (c *AttackConfig) base() AttackRecord {
	return AttackRecord{SchemaVersion: SchemaVersion, Model: c.Model.Dir, ModelSHA256: c.Model.Digest, Data: c.Data.Reference(), Method: c.Method, Settings: c.Settings}
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
// an interrupted run returns ctx's error and resumes where it stopped. A
// run that ends with units of it recorded as crashed, now or by an
// earlier run, returns a *CrashedError naming them.
func RunAttack(ctx context.Context, c AttackConfig, emit func(AttackRecord) error) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("attack: %w", err)
	}
	if c.Data == nil || len(c.Samples) == 0 {
		return errors.New("attack: no data or no samples")
	}
	if err := c.Data.checkSamples(c.Samples); err != nil {
		return fmt.Errorf("attack: %w", err)
	}
	m, _ := LookupMethod(c.Method)
	f, err := openOut(c.Out, c.Shard, attackKey)
	if err != nil {
		return err
	}
	defer f.Close()
	units, label := c.units(), methodLabel(c.base())
	crashes, err := resume(c.Logf, f, attackKey, units, label)
	if err != nil {
		return err
	}
	r := &attackRun{c: &c, f: f, emit: emit, m: m, crashes: crashes}
	size := 1
	if m.Batched {
		size = c.Batch
	}
	for i := 0; i < len(units); {
		// One radius at a time, a batch of samples at a time.
		j := i
		var todo []unit
		for ; j < len(units) && units[j].eps == units[i].eps && len(todo) < size; j++ {
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
		if err := batchOrAlone(ctx, r.f, todo, r.attack, r.fail); err != nil {
			return err
		}
	}
	return crashes.err(f, units, label)
}

// attackRun is the state of one RunAttack.
type attackRun struct {
	c       *AttackConfig
	f       *results.File
	emit    func(AttackRecord) error
	m       Method
	crashes crashLog // the units recorded as crashed, by this run or an earlier one
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

// fail records a failed unit.
func (r *attackRun) fail(u unit, cause error) error {
	rec := r.c.base()
	rec.Sample, rec.Eps, rec.Error, rec.Crashed = u.sample, u.eps, oneline.Fold(cause.Error()), isCrash(cause)
	r.c.Data.failed(&rec, u.sample)
	if rec.Crashed {
		r.crashes[u.key] = true
	}
	return record(r.f, r.emit, u.key, rec)
}

// attack runs one batch of units.
func (r *attackRun) attack(ctx context.Context, us []unit) error {
	b, err := r.c.Data.targets(ctx, r.c, r.m, us)
	if err != nil {
		return err
	}
	return b.run(ctx, r, r.m, us)
}

// targetBatch is a batch of targets whose points are of type E, and what
// the data's records need of each besides its outcome.
type targetBatch[E any] struct {
	targets []attack.Target[E]
	// record fills in unit i's record from its outcome (the kind's part,
	// its witness).
	record func(i int, rec *AttackRecord, o attack.Outcome[E]) error
}

// run attacks the batch with method m and records each unit.
func (b targetBatch[E]) run(ctx context.Context, r *attackRun, m Method, us []unit) error {
	c := r.c
	search := run[E](m)
	if search == nil {
		return fmt.Errorf("method %s does not attack this kind of input", m.Name)
	}
	noun := "sample"
	if c.text() {
		noun = "sentence"
	}
	stage := fmt.Sprintf("%s δ=%g %s %d", m.Name, us[0].eps, noun, us[0].sample)
	if m.Batched {
		stage = fmt.Sprintf("%s δ=%g, %d %ss", m.Name, us[0].eps, len(us), noun)
	}
	draws := 20
	if c.text() {
		draws = 8
	}
	job := Job[E]{D32: c.Model.D32, D64: c.Model.D64, Targets: b.targets, Settings: c.Settings, Draws: c.Batch * draws,
		Progress: func(done, total int, status string) {
			if c.Progress != nil {
				c.Progress(stage, done, total, status)
			}
		}}
	start := time.Now()
	outs, err := search(ctx, job)
	if err != nil {
		return err
	}
	if len(outs) != len(us) {
		return fmt.Errorf("method %s returned %d outcomes for %d targets", m.Name, len(outs), len(us))
	}
	secs := time.Since(start).Seconds() / float64(len(us))
	for i, u := range us {
		rec := c.base()
		tg, o := b.targets[i], outs[i]
		rec.Sample, rec.Eps, rec.K = u.sample, u.eps, tg.K
		rec.OrigLength, rec.OrigNonFinite = len(tg.Original.Tokens), tg.Original.NonFinite
		rec.AdvLength, rec.Stopped, rec.NonFinite = len(o.Result.Tokens), o.Result.Stopped, o.Result.NonFinite
		rec.Success, rec.MinRelMargin, rec.Found32 = o.Success, margin(o.Result.MinRelMargin), o.Found32
		rec.Evals, rec.Seconds, rec.LengthCounts, rec.Arithmetic = o.Evals, secs, o.LengthCounts, Arithmetic()
		if err := b.record(i, &rec, o); err != nil {
			return recordError{err}
		}
		if err := record(r.f, r.emit, u.key, rec); err != nil {
			return err
		}
	}
	return nil
}

// targets builds the images' targets: the L∞ ball of each sample.
func (d Data) targets(ctx context.Context, c *AttackConfig, _ Method, us []unit) (batch, error) {
	m := c.Model
	in := m.D64.Input()
	b := targetBatch[[]float64]{targets: make([]attack.Target[[]float64], len(us))}
	labels := make([][]int, len(us))
	for i, u := range us {
		x0, label := d.sample(u.sample)
		labels[i] = label
		ball, err := spec.NewBall(x0, u.eps, in.Min, in.Max)
		if err != nil {
			return nil, fmt.Errorf("sample %d: %w", u.sample, err)
		}
		if b.targets[i], err = attack.NewTarget[[]float64](ctx, m.D64, attack.NewContinuous(ball), c.Settings.MaxLen, c.Settings.MaxSteps, c.Settings.Seed, uint64(u.sample)); err != nil {
			return nil, err
		}
	}
	b.record = func(i int, rec *AttackRecord, o attack.Outcome[[]float64]) error {
		orig := b.targets[i].Original
		rec.AttackImage = &AttackImage{Label: nonNil(labels[i]), OrigTokens: nonNil(orig.Tokens), AdvTokens: nonNil(o.Result.Tokens), Steps: o.Steps}
		if !o.Success {
			return nil
		}
		key := us[i].key
		meta := map[string]string{"key": key, "model": m.Dir, "model_sha256": m.Digest, "length": fmt.Sprint(rec.AdvLength),
			"stopped": fmt.Sprint(rec.Stopped), "tokens": fmt.Sprint(rec.AdvTokens)}
		var err error
		rec.Witness, rec.WitnessPNG, err = saveWitness(c.WitnessDir, witnessName(d.Ref, us[i].sample, us[i].eps, c.Method, key), meta, o.Input, in)
		return err
	}
	return b, nil
}

// failed gives a failed image unit its label.
func (d Data) failed(rec *AttackRecord, sample int) {
	rec.AttackImage = &AttackImage{Label: nonNil(d.label(sample))}
}

// Reference identifies the images in records.
func (d Data) Reference() DataRef { return d.Ref }

// checkSamples accepts any sample: one outside the data fails alone.
func (d Data) checkSamples([]int) error {
	if d.Source == nil {
		return errors.New("no data or no samples")
	}
	return nil
}
