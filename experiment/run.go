package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/results"
	"github.com/lenspec/lenspec/safetensors"
	"github.com/lenspec/lenspec/spec"
	"github.com/lenspec/lenspec/train"
)

// Model is a model directory loaded for an experiment: both precisions
// and its content digest, which keys the results.
type Model struct {
	Dir    string
	Digest string
	D32    model.Decoder[float32]
	D64    model.Decoder[float64]
}

// LoadModel loads the model in dir. The float64 model is the float32 one
// converted exactly (model.Load refuses weights for which they differ).
func LoadModel(dir string) (*Model, error) {
	d32, err := model.Load[float32](dir)
	if err != nil {
		return nil, err
	}
	d64, err := model.Cast[float64](d32)
	if err != nil {
		return nil, err
	}
	digest, err := model.Digest(dir)
	if err != nil {
		return nil, err
	}
	return &Model{Dir: dir, Digest: digest, D32: d32, D64: d64}, nil
}

// Data is the data set an experiment draws samples from: what identifies
// it in records, and the examples, as values in the model's input range
// (Source.Batch with a nil random source: no augmentation).
type Data struct {
	Ref    DataRef
	Source train.Source[float64]
}

// sample returns sample i's input and label.
func (d Data) sample(i int) ([]float64, []int) {
	x, _, labels := d.Source.Batch([]int{i}, nil)
	return x, labels[0]
}

// label returns sample i's label, or nil if reading the sample fails: the
// record of a failed unit names the failure, not a second one.
func (d Data) label(i int) (label []int) {
	defer func() {
		if recover() != nil {
			label = nil
		}
	}()
	_, label = d.sample(i)
	return label
}

// imageStream tags the PCG stream that picks random samples (the ASCII
// bytes of "img"), so the picks differ from every per-sample stream
// PCG(seed, index) for small indices.
const imageStream = 0x696d67

// PickSamples returns the sample indices to run: explicit ones (checked
// against total), or n drawn without replacement from PCG(seed, "img") —
// the paper's "100 random inputs". Exactly one of n > 0 and indices must be
// given.
func PickSamples(n int, indices []int, total int, seed uint64) ([]int, error) {
	switch {
	case n < 0:
		return nil, fmt.Errorf("number of samples %d is negative", n)
	case (n > 0) == (len(indices) > 0):
		return nil, errors.New("give exactly one of a number of random samples and explicit sample indices")
	case len(indices) > 0:
		for _, i := range indices {
			if i < 0 || i >= total {
				return nil, fmt.Errorf("sample index %d outside the data set of %d", i, total)
			}
		}
		return indices, nil
	case n > total:
		return nil, fmt.Errorf("%d samples asked for: the data set has only %d", n, total)
	}
	return rand.New(rand.NewPCG(seed, imageStream)).Perm(total)[:n], nil
}

// Progress receives a long run's progress: what is running, how far it got
// of how much, and a short status.
type Progress func(stage string, done, total int, status string)

// unit is one unit of work: a sample at a radius.
type unit struct {
	sample int
	eps    float64
	key    string
}

// shardUnits lists the units of a run that shard takes, radius by radius,
// samples in the order given, each keyed by key.
func shardUnits(eps []float64, samples []int, shard Shard, key func(sample int, eps float64) string) []unit {
	var us []unit
	ord := 0
	for _, e := range eps {
		for _, s := range samples {
			if shard.Takes(ord) {
				us = append(us, unit{sample: s, eps: e, key: key(s, e)})
			}
			ord++
		}
	}
	return us
}

// checkEps validates a radius grid for a model's inputs (spec.CheckRadius:
// the same check a spec file's radius gets).
func checkEps(eps []float64, in model.InputSpec) error {
	if len(eps) == 0 {
		return errors.New("no radius given")
	}
	for _, e := range eps {
		if err := spec.CheckRadius(e, in.Min, in.Max); err != nil {
			return fmt.Errorf("eps: %w", err)
		}
	}
	return nil
}

// openOut opens (creating its directory) the results file a shard writes.
func openOut(out string, shard Shard, key func(json.RawMessage) (string, error)) (*results.File, error) {
	if out == "" {
		return nil, errors.New("no results file given")
	}
	path := shard.Path(out)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	return results.Open(path, key)
}

// crashLimit is how many attempts of a unit may end with no record (the
// process died inside it) before the unit is recorded as crashed.
const crashLimit = 2

// guard runs work for the units keyed keys, recording an attempt for each
// first. It returns whether to skip (every unit already crashed crashLimit
// times: record them instead), and turns a panic into an error. If the run
// is interrupted, the attempts end cleanly so they do not count as crashes.
func guard(ctx context.Context, f *results.File, keys []string, work func() error) (err error) {
	for _, k := range keys {
		if _, err := f.BeginAttempt(k); err != nil {
			return err
		}
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v [%s]", p, firstFrames(debug.Stack()))
		}
		if ctx.Err() != nil {
			for _, k := range keys {
				if !f.Done(k) {
					f.EndAttempt(k)
				}
			}
		}
	}()
	return work()
}

// firstFrames keeps the panic's origin from a stack trace, on one line.
func firstFrames(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	var keep []string
	for i := 0; i+1 < len(lines) && len(keep) < 2; i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "panic(") || strings.Contains(l, "runtime/debug.Stack") || strings.Contains(l, "experiment.guard") {
			i++
			continue
		}
		if strings.HasSuffix(l, ")") && i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "/") {
			keep = append(keep, l+" "+strings.TrimSpace(lines[i+1]))
			i++
		}
	}
	return strings.Join(keep, " ← ")
}

// CrashError is the failure recorded for a unit that killed its process
// crashLimit times: the unit is recorded (with crashed set) instead of
// being tried again, so that one poison sample cannot stop a run.
type CrashError struct {
	Attempts int    // attempts that ended with no record
	Results  string // the results file whose .attempts file counts them
}

func (e *CrashError) Error() string {
	return fmt.Sprintf("%s%d times while running this sample (attempts in %s.attempts); recorded instead of retried", crashPrefix, e.Attempts, e.Results)
}

// crashed is the error recorded for a unit that killed the process
// crashLimit times.
func crashed(f *results.File, key string) error {
	return &CrashError{Attempts: f.Attempts(key), Results: f.Path()}
}

// isCrash reports whether a unit's failure was a crash.
func isCrash(err error) bool {
	var c *CrashError
	return errors.As(err, &c)
}

// crashPrefix begins the error of a unit recorded as crashed. Records
// written before the crashed field existed are recognised by it.
const crashPrefix = "the process died "

// failure reads whether a raw record is of a failed unit, and whether
// that unit is recorded as crashed: by its crashed field, or by its
// error's wording for records written before the field existed.
func failure(raw json.RawMessage) (failed, crashed bool) {
	var r struct {
		Error   string `json:"error"`
		Crashed bool   `json:"crashed"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Error == "" {
		return false, false
	}
	return true, r.Crashed || strings.HasPrefix(r.Error, crashPrefix)
}

// Retry removes failed records from the results file at path (of any
// kind: image attack, text attack, verification) so that the next run
// with the same settings redoes those units, and returns how many it
// removed. Without all it removes only units recorded as crashed — what a
// unit that killed its process twice leaves, and also one whose machine
// was killed twice while it ran; with all, every failed unit. It fails
// while a run is writing the file.
func Retry(path string, all bool) (int, error) {
	kind, err := FileKind(path)
	if err != nil || kind == "" {
		return 0, err
	}
	dropped, err := results.Drop(path, kindKeys[kind], func(raw json.RawMessage) bool {
		failed, crashed := failure(raw)
		return crashed || all && failed
	})
	return len(dropped), err
}

// CrashedError is what a run (RunAttack, RunVerify and the experiments
// running them) returns when units of it are recorded as crashed in its
// results file, by this run or an earlier one: a resumed run counts them
// as done and never runs them again, so without this error they would hide
// behind "already done". The run did every other unit; Retry (lenspec
// results retry) and another run redo the crashed ones. The command line
// prints it on stderr and exits 1.
type CrashedError struct {
	Results string        // the results file (a shard's, with --shard)
	Units   []CrashedUnit // this run's units recorded as crashed, in run order
}

// CrashedUnit is a unit recorded as crashed.
type CrashedUnit struct {
	Sample int     `json:"sample"`
	Eps    float64 `json:"eps"`
	Method string  `json:"method,omitempty"` // an attack's, with its loss; empty for verification
}

// String names the unit as the error lists it.
func (u CrashedUnit) String() string {
	s := fmt.Sprintf("sample %d at δ %g", u.Sample, u.Eps)
	if u.Method != "" {
		s += " (" + u.Method + ")"
	}
	return s
}

// namedCrashes is how many crashed units an error names; the rest are
// counted.
const namedCrashes = 10

// Error names the file, the units (the first namedCrashes) and the
// command that retries them, on one line.
func (e *CrashedError) Error() string {
	var names []string
	for i, u := range e.Units {
		if i == namedCrashes {
			names = append(names, fmt.Sprintf("and %d more", len(e.Units)-i))
			break
		}
		names = append(names, u.String())
	}
	units := "units"
	if len(e.Units) == 1 {
		units = "unit"
	}
	return fmt.Sprintf("%s: %d %s recorded as crashed, not run again (%s); `lenspec results retry %s`, then this command again, redoes them",
		e.Results, len(e.Units), units, strings.Join(names, ", "), train.ShellWord(e.Results))
}

// crashLog holds the keys of a results file's units recorded as crashed:
// read once, when a run opens the file (resume), added to as the run
// records crashes, and turned into the run's CrashedError at its end, so
// that the file is not read again for it. The run's lock on the file
// keeps it true.
type crashLog map[string]bool

// resume reads the units recorded as crashed in f, whose records key
// derives the keys of, and, if l is set and f holds records, logs that
// the run resumes, with how many of its units us are recorded as crashed
// (method labels them).
func resume(l func(string, ...any), f *results.File, key func(json.RawMessage) (string, error), us []unit, method string) (crashLog, error) {
	crashed := crashLog{}
	if f.Len() == 0 {
		return crashed, nil
	}
	raws, err := results.Read[json.RawMessage](f.Path())
	if err != nil {
		return nil, err
	}
	for _, raw := range raws {
		if _, c := failure(raw); c {
			k, err := key(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Path(), err)
			}
			crashed[k] = true
		}
	}
	if l == nil {
		return crashed, nil
	}
	if n := len(crashed.units(us, method)); n > 0 {
		l("%s: %d records already done, %d of this run's units recorded as crashed and not run again (`lenspec results retry %s` redoes them); resuming",
			f.Path(), f.Len(), n, train.ShellWord(f.Path()))
	} else {
		l("%s: %d records already done; resuming", f.Path(), f.Len())
	}
	return crashed, nil
}

// units lists the units of us recorded as crashed, in run order; method
// labels them.
func (c crashLog) units(us []unit, method string) []CrashedUnit {
	var out []CrashedUnit
	for _, u := range us {
		if c[u.key] {
			out = append(out, CrashedUnit{Sample: u.sample, Eps: u.eps, Method: method})
		}
	}
	return out
}

// err is the end of a run over us writing f: a CrashedError if units of
// us are recorded as crashed, else nil.
func (c crashLog) err(f *results.File, us []unit, method string) error {
	crashed := c.units(us, method)
	if len(crashed) == 0 {
		return nil
	}
	return &CrashedError{Results: f.Path(), Units: crashed}
}

// joinCrashed adds err to crashed if it is a CrashedError and reports
// whether it was one (or nil); units of one file join into one error.
func joinCrashed(crashed *[]*CrashedError, err error) bool {
	var c *CrashedError
	if !errors.As(err, &c) { // nil too
		return err == nil
	}
	for _, o := range *crashed {
		if o.Results == c.Results {
			o.Units = append(o.Units, c.Units...)
			return true
		}
	}
	*crashed = append(*crashed, &CrashedError{Results: c.Results, Units: slices.Clone(c.Units)})
	return true
}

// crashedErr is the error of the crashed units joined: nil if none.
func crashedErr(crashed []*CrashedError) error {
	var errs []error
	for _, c := range crashed {
		errs = append(errs, c)
	}
	return errors.Join(errs...)
}

// saveWitness writes the exact input (safetensors, float64, named by the
// record's key) and, for one-channel image inputs, a PNG for people.
func saveWitness(dir, name string, meta map[string]string, x []float64, spec model.InputSpec) (st, png string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("witness directory: %w", err)
	}
	st = filepath.Join(dir, name+".safetensors")
	f := &safetensors.File{Metadata: meta, Tensors: []safetensors.Tensor{safetensors.F64("input", spec.Shape, x)}}
	if err := safetensors.WriteFile(st, f); err != nil {
		return "", "", err
	}
	if len(spec.Shape) == 3 && spec.Shape[0] == 1 {
		png = filepath.Join(dir, name+".png")
		if err := multimnist.WriteFloatPNG(png, x, spec.Shape[1], spec.Shape[2], 4, spec.Min, spec.Max); err != nil {
			return "", "", err
		}
	}
	return st, png, nil
}

// witnessName is a witness file's name: readable, and unique per record
// key.
func witnessName(d DataRef, sample int, eps float64, what, key string) string {
	return fmt.Sprintf("%s-%d-eps%g-%s-%s", d.Split, sample, eps, what, keyHash(key))
}

// outputs resolves where a run writes: the zero shard is the whole run,
// and witnesses go beside the shard's results file by default.
func outputs(shard Shard, out, witnessDir string) (Shard, string) {
	if shard.N == 0 {
		shard = Whole
	}
	if witnessDir == "" {
		witnessDir = stem(shard.Path(out)) + ".witnesses"
	}
	return shard, witnessDir
}

// stem is a path without its extension.
func stem(path string) string { return strings.TrimSuffix(path, filepath.Ext(path)) }

// recordError marks a failure to write results (or to emit them), which
// ends a run instead of being recorded as the unit's failure.
type recordError struct{ err error }

func (e recordError) Error() string { return e.err.Error() }
func (e recordError) Unwrap() error { return e.err }

// batchOrAlone runs attack on a batch of units. If the batch fails as a
// whole, each unit not yet done is retried alone, so that one bad sample
// is recorded as failed (fail) without taking the others with it. A
// results file that cannot be written, or a cancelled context, ends the
// run.
func batchOrAlone(ctx context.Context, f *results.File, us []unit, attack func(context.Context, []unit) error, fail func(unit, error) error) error {
	keys := make([]string, len(us))
	for i, u := range us {
		keys[i] = u.key
	}
	err := guard(ctx, f, keys, func() error { return attack(ctx, us) })
	var rec recordError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &rec):
		return err
	case len(us) > 1:
		for _, u := range us {
			if f.Done(u.key) {
				continue
			}
			if err := batchOrAlone(ctx, f, []unit{u}, attack, fail); err != nil {
				return err
			}
		}
		return nil
	}
	return fail(us[0], err)
}

// record appends rec to f and passes it to emit (if set); a failure of
// either is a recordError, which ends the run.
func record[R any](f *results.File, emit func(R) error, key string, rec R) error {
	if err := f.Append(key, rec); err != nil {
		return recordError{err}
	}
	if emit != nil {
		if err := emit(rec); err != nil {
			return recordError{err}
		}
	}
	return nil
}
