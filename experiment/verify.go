package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/internal/oneline"
	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/mip/cbc"
	"github.com/lenspec/lenspec/mip/external"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
	"github.com/lenspec/lenspec/verify"
)

// Solvers for VerifySettings.Solver.
const (
	SolverCBC      = "cbc"
	SolverExternal = "external"
	SolverNone     = "none"
)

// DefaultVerifySettings are the CLI's defaults: verify.DefaultOptions (CROWN
// bounds, branch and bound, the abstraction phases, 60 s per sample) with
// what verify leaves to its callers — CBC in process and its LP for the
// token search, a 300-step PGD warm start of 2 runs and the wide falsifier
// of 32 — and K̂ the label's length.
func DefaultVerifySettings() VerifySettings {
	o := verify.DefaultOptions()
	return VerifySettings{MaxLen: -1, Bounds: string(o.Bounds), Timeout: o.TimeLimit.Seconds(), Solver: SolverCBC, Threads: o.Threads,
		Safety: o.Safety, Optimize: !o.Decision, Tokens: true, Abstract: o.Abstract, RelaxGap: o.RelaxGap, BaB: o.BaB,
		AttackSteps: 300, AttackRestarts: 2, SearchRestarts: 32, AttackLR: 0.01, Seed: 1}
}

// DefaultVerifyOptions is the verifier lenspec verify runs on m when given
// no flags: verify.DefaultOptions with the CBC solver, its LP relaxation
// for the token search, the PGD warm start and the wide falsifier wired in
// (DefaultVerifySettings), which verify.DefaultOptions cannot hold since
// verify imports neither mip/cbc nor attack. Its time limit is per sample,
// and its step cap m's.
func DefaultVerifyOptions(m *Model) verify.Options {
	c := VerifyConfig{Model: m, Settings: DefaultVerifySettings()}
	c.Settings.MaxSteps = m.D64.MaxSteps()
	return c.options()
}

// VerifyConfig is one verification run over samples × radii.
type VerifyConfig struct {
	Model    *Model
	Data     Data
	Samples  []int
	Eps      []float64
	Settings VerifySettings
	// WriteMPS, if set, is a directory where each sample's exact MIP is
	// written (for other solvers).
	WriteMPS string
	// Out is the results file; witnesses go to WitnessDir (default: Out
	// without its extension, plus ".witnesses").
	Out, WitnessDir string
	Shard           Shard
	Progress        Progress
	Logf            func(format string, args ...any)

	// solver, if set, replaces the solver the settings name (tests).
	solver mip.Solver
}

// Validate checks the settings before any work (the data and samples may
// not be loaded yet), resolving the step cap (0: the model's).
func (c *VerifyConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Model == nil {
		return errors.New("no model")
	}
	if err := checkEps(c.Eps, c.Model.D64.Input()); err != nil {
		errs = append(errs, err)
	}
	s := &c.Settings
	if s.MaxSteps == 0 {
		s.MaxSteps = c.Model.D64.MaxSteps()
	}
	if s.MaxSteps < 1 || s.MaxSteps > model.MaxStepCap {
		bad("step cap %d must be in 1..%d", s.MaxSteps, model.MaxStepCap)
	}
	if s.MaxLen < -1 || s.MaxLen > verify.MaxK {
		bad("K̂ %d must be in 0..%d (or −1: the label's length)", s.MaxLen, verify.MaxK)
	}
	badTimeout := !(s.Timeout > 0) || s.Timeout > 1e6
	if badTimeout {
		bad("timeout %v s must be positive and at most 1e6", s.Timeout)
	}
	switch s.Solver {
	case SolverCBC, SolverNone:
		s.SolverBinary = ""
	case SolverExternal:
		if s.SolverBinary == "" {
			s.SolverBinary = "cbc"
		}
	default:
		bad("solver %q: want %s, %s or %s", s.Solver, SolverCBC, SolverExternal, SolverNone)
	}
	if s.AttackSteps < 0 || s.AttackSteps > 1e7 {
		bad("attack steps %d must be in 0..1e7", s.AttackSteps)
	}
	if s.AttackSteps > 0 {
		pgd := attack.DefaultPGD()
		pgd.Steps, pgd.Restarts, pgd.LR = s.AttackSteps, s.AttackRestarts, s.AttackLR
		if err := pgd.Validate(); err != nil {
			errs = append(errs, err)
		}
		if s.SearchRestarts < 0 || s.SearchRestarts > 1e5 {
			bad("search restarts %d must be in 0..1e5", s.SearchRestarts)
		}
	} else {
		s.AttackRestarts, s.AttackLR, s.AttackTargeted, s.SearchRestarts = 0, 0, false, 0
	}
	o := c.options()
	if badTimeout {
		o.TimeLimit = 0 // reported above, once
	}
	if err := o.Validate(); err != nil {
		errs = append(errs, err)
	}
	c.Shard, c.WitnessDir = outputs(c.Shard, c.Out, c.WitnessDir)
	return errors.Join(errs...)
}

// options builds the verifier's options from the settings.
func (c *VerifyConfig) options() verify.Options {
	s := c.Settings
	o := verify.DefaultOptions()
	o.Bounds = verify.BoundMethod(s.Bounds)
	o.TimeLimit = time.Duration(s.Timeout * float64(time.Second))
	o.Threads, o.Safety, o.Decision, o.Abstract, o.RelaxGap = s.Threads, s.Safety, !s.Optimize, s.Abstract, s.RelaxGap
	o.Params, o.MaxSteps, o.WriteMPS, o.BaB, o.Cuts, o.CutMultipliers, o.Clip = s.SolverParams, s.MaxSteps, c.WriteMPS, s.BaB, s.Cuts, s.CutMultipliers, s.Clip
	switch s.Solver {
	case SolverCBC:
		o.Solver = cbc.Solver{}
	case SolverExternal:
		o.Solver = &external.Solver{Binary: s.SolverBinary}
	}
	if c.solver != nil {
		o.Solver = c.solver
	}
	if s.Tokens && o.Solver != nil {
		o.NewLP = func(m *mip.Model) (verify.LPRelaxation, error) {
			lp, err := cbc.NewLP(m)
			if err != nil {
				return nil, err
			}
			return lp, nil
		}
	}
	if s.AttackSteps > 0 && c.Model != nil {
		pgd := attack.DefaultPGD()
		pgd.Steps, pgd.Restarts, pgd.LR = s.AttackSteps, s.AttackRestarts, s.AttackLR
		o.Falsifier = attack.Falsifier{D32: c.Model.D32, D64: c.Model.D64, PGD: pgd, Seed: s.Seed, Targeted: s.AttackTargeted}
		if s.SearchRestarts > 0 {
			pgd.Restarts = s.SearchRestarts
			o.Search = attack.Falsifier{D32: c.Model.D32, D64: c.Model.D64, PGD: pgd, Seed: s.Seed}
		}
	}
	return o
}

func (c *VerifyConfig) base() VerifyRecord {
	return VerifyRecord{SchemaVersion: SchemaVersion, Model: c.Model.Dir, ModelSHA256: c.Model.Digest, Data: c.Data.Ref, Settings: c.Settings}
}

// Verdicts of a worst-case length search.
const (
	VerdictCertified = "certified" // lower = upper
	VerdictOpen      = "open"      // an interval, or no upper bound
)

// bound runs the worst-case length search on one unit.
func (c *VerifyConfig) bound(ctx context.Context, net *verify.Net, opt verify.Options, u unit, ball spec.Region, label []int) (VerifyRecord, error) {
	t0 := time.Now()
	maxK := c.k(label)
	b, err := verify.Bound(ctx, net, c.Model.D64, ball, uint64(u.sample), verify.BoundOptions{Options: opt, MaxK: maxK})
	if err != nil {
		return VerifyRecord{}, err
	}
	r := c.base()
	r.Sample, r.Eps, r.K, r.Label, r.Arithmetic = u.sample, u.eps, maxK, nonNil(label), Arithmetic()
	r.Seconds = time.Since(t0).Seconds()
	br := &BoundResult{Lower: b.Lower, Certified: b.Certified(), Steps: b.Steps}
	if b.Upper >= 0 {
		up := b.Upper
		br.Upper = &up
	}
	r.Bound, r.Verdict = br, VerdictOpen
	if br.Certified {
		r.Verdict = VerdictCertified
	}
	if b.Witness != nil {
		l := len(b.WitnessResult.Tokens)
		r.WitnessLength, r.WitnessTokens, r.WitnessNonFinite = &l, nonNil(b.WitnessResult.Tokens), b.WitnessResult.NonFinite
		meta := map[string]string{"key": u.key, "model": c.Model.Dir, "model_sha256": c.Model.Digest, "length": fmt.Sprint(l),
			"stopped": fmt.Sprint(b.WitnessResult.Stopped), "tokens": fmt.Sprint(r.WitnessTokens), "stage": "bound"}
		in := c.Model.D64.Input()
		if r.Witness, _, err = saveWitness(c.WitnessDir, witnessName(c.Data.Ref, u.sample, u.eps, "bound", u.key), meta, b.Witness, in); err != nil {
			return VerifyRecord{}, recordError{err}
		}
	}
	return r, nil
}

// k is K̂ for a sample.
// In a worst-case length search it is the largest K̂ tried.
func (c *VerifyConfig) k(label []int) int {
	switch {
	case c.Settings.MaxLen >= 0:
		return c.Settings.MaxLen
	case c.Settings.Bound:
		return verify.MaxK
	}
	return len(label)
}

// units lists this shard's units.
func (c *VerifyConfig) units() []unit {
	return shardUnits(c.Eps, c.Samples, c.Shard, func(sample int, eps float64) string {
		r := c.base()
		r.Sample, r.Eps, r.K = sample, eps, c.k(c.Data.label(sample))
		return VerifyKey(r)
	})
}

// RunVerify verifies every unit of c not yet in its results file,
// appending a record per unit as it finishes and passing it to emit
// (which may be nil). A sample whose solve fails or panics is recorded as
// unknown with the error; one that killed the process twice is recorded
// as crashed. An interrupted run returns ctx's error and records nothing
// for the sample it was working on. A run that ends with units of it
// recorded as crashed, now or by an earlier run, returns a *CrashedError
// naming them.
func RunVerify(ctx context.Context, c VerifyConfig, emit func(VerifyRecord) error) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if c.Data.Source == nil || len(c.Samples) == 0 {
		return errors.New("verify: no data or no samples")
	}
	net, err := verify.Lower(c.Model.D64)
	if err != nil {
		return err
	}
	f, err := openOut(c.Out, c.Shard, verifyKey)
	if err != nil {
		return err
	}
	defer f.Close()
	units := c.units()
	crashes, err := resume(c.Logf, f, verifyKey, units, "")
	if err != nil {
		return err
	}
	opt := c.options()
	counts := map[string]int{}
	if c.Progress != nil {
		// Shown before the first sample, which may take its whole time
		// limit: a long run says it has started (and how far a resumed one
		// already is) at once, not a minute later.
		first := 0
		for first < len(units) && f.Done(units[first].key) {
			first++
		}
		c.Progress("verify", first, len(units), "")
	}
	for i, u := range units {
		if f.Done(u.key) {
			continue
		}
		var rec VerifyRecord
		if f.Attempts(u.key) >= crashLimit {
			rec = c.failed(u, crashed(f, u.key))
		} else {
			err := guard(ctx, f, []string{u.key}, func() error {
				var err error
				rec, err = c.verify(ctx, net, opt, u)
				return err
			})
			var re recordError
			switch {
			case ctx.Err() != nil:
				return ctx.Err() // interrupted: do not record a spurious unknown
			case errors.As(err, &re):
				return err
			case err != nil:
				rec = c.failed(u, err)
			}
		}
		if err := f.Append(u.key, rec); err != nil {
			return err
		}
		if rec.Crashed {
			crashes[u.key] = true
		}
		counts[rec.Verdict]++
		if c.Progress != nil {
			detail := fmt.Sprintf("robust %d vulnerable %d unknown %d", counts[string(verify.Robust)], counts[string(verify.Vulnerable)], counts[string(verify.Unknown)])
			if c.Settings.Bound {
				detail = fmt.Sprintf("certified %d open %d", counts[VerdictCertified], counts[VerdictOpen])
			}
			c.Progress("verify", i+1, len(units), detail)
		}
		if emit != nil {
			if err := emit(rec); err != nil {
				return err
			}
		}
	}
	return crashes.err(f, units, "")
}

// failed is the record of a unit that failed.
func (c *VerifyConfig) failed(u unit, cause error) VerifyRecord {
	label := c.Data.label(u.sample)
	r := c.base()
	r.Sample, r.Eps, r.K, r.Label = u.sample, u.eps, c.k(label), nonNil(label)
	r.Verdict, r.Error = string(verify.Unknown), oneline.Fold(cause.Error())
	r.Reason = "failed: " + r.Error
	r.Crashed = isCrash(cause)
	return r
}

// verify runs one unit.
func (c *VerifyConfig) verify(ctx context.Context, net *verify.Net, opt verify.Options, u unit) (VerifyRecord, error) {
	x0, label := c.Data.sample(u.sample)
	in := c.Model.D64.Input()
	ball, err := spec.NewBall(x0, u.eps, in.Min, in.Max)
	if err != nil {
		return VerifyRecord{}, err
	}
	return c.verifyIn(ctx, net, opt, u, ball, label)
}

// verifyIn verifies (or bounds) one unit over set.
func (c *VerifyConfig) verifyIn(ctx context.Context, net *verify.Net, opt verify.Options, u unit, ball spec.Region, label []int) (VerifyRecord, error) {
	in := c.Model.D64.Input()
	k := c.k(label)
	if c.Settings.Bound {
		return c.bound(ctx, net, opt, u, ball, label)
	}
	name := fmt.Sprintf("%s-%d-eps%g-k%d-%s", c.Data.Ref.Split, u.sample, u.eps, k, keyHash(u.key))
	res, err := verify.Verify(ctx, net, c.Model.D64, verify.Sample{Name: name, Set: ball, K: k, Stream: uint64(u.sample)}, opt)
	if err != nil {
		return VerifyRecord{}, err
	}
	r := c.base()
	r.Sample, r.Eps, r.K, r.Label, r.Arithmetic = u.sample, u.eps, res.K, nonNil(label), Arithmetic()
	r.Verdict, r.Stage, r.Seconds, r.BoundSeconds = string(res.Verdict), res.Stage, res.Seconds, res.BoundSeconds
	r.ProvenBound, r.Incumbent = finite(res.Bound), finite(res.Incumbent)
	r.Nodes, r.Binaries, r.ReLUBinaries, r.Reason, r.MPS, r.Phases = res.Nodes, res.Binaries, res.ReLUBinaries, res.Reason, res.MPS, res.Phases
	r.UnstableInterval, r.Unstable = res.UnstableInterval, res.Unstable
	for i := range r.Phases {
		if b := r.Phases[i].Bound; b != nil && (math.IsInf(*b, 0) || math.IsNaN(*b)) {
			r.Phases[i].Bound = nil
		}
	}
	if res.Verdict == verify.Vulnerable {
		l := len(res.WitnessResult.Tokens)
		r.WitnessLength, r.WitnessTokens, r.WitnessNonFinite = &l, nonNil(res.WitnessResult.Tokens), res.WitnessResult.NonFinite
		meta := map[string]string{"key": u.key, "model": c.Model.Dir, "model_sha256": c.Model.Digest, "length": fmt.Sprint(l),
			"stopped": fmt.Sprint(res.WitnessResult.Stopped), "tokens": fmt.Sprint(r.WitnessTokens), "stage": res.Stage}
		if r.Witness, _, err = saveWitness(c.WitnessDir, witnessName(c.Data.Ref, u.sample, u.eps, "verify-"+res.Stage, u.key), meta, res.Witness, in); err != nil {
			return VerifyRecord{}, recordError{err}
		}
	}
	return r, nil
}
