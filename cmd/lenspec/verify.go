package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/verify"
	"github.com/spf13/cobra"
)

// verifyFlags are the verify command's own.
type verifyFlags struct {
	runFlags
	s        experiment.VerifySettings
	noMIP    bool
	writeMPS string
	specPath string
}

func (f *verifyFlags) register(c *cobra.Command, samples bool) {
	f.RegisterFlags(c.Flags(), samples)
	f.s = experiment.DefaultVerifySettings()
	fl := c.Flags()
	fl.IntVar(&f.MaxLen, "max-len", -1, fmt.Sprintf("K̂, 0..%d: prove no output is longer than this (default: the length of the image's ground-truth label)", verify.MaxK))
	fl.Lookup("max-len").DefValue = "0" // −1 is a sentinel the usage explains; "0" hides it from the help
	f.s.RegisterFlags(fl)
	fl.BoolVar(&f.noMIP, "no-mip", false, "no MIP solver: after the warm start and the bounds, branch and bound alternating with rounds of the wide falsifier takes all the time (with --bab=false: one falsifier round); --tokens, --abstract, --relax-gap, --optimize and --threads then do nothing")
	fl.StringVar(&f.writeMPS, "write-mps", "", "write each sample's MIP to this directory (MPS, for SCIP, Gurobi, HiGHS…)")
	if samples {
		fl.StringVar(&f.specPath, "spec", "", `a spec file (JSON: "model", "input" file or "values", "eps" or "lower"/"upper", "max_len") instead of --model and the data flags`)
	}
}

// run verifies (or bounds) the samples the flags name, or a spec file's
// problem, printing line(r) with --json and text otherwise per record.
func (f *verifyFlags) run(c *cobra.Command, a *app, line func(experiment.VerifyRecord) any, text func(io.Writer, experiment.VerifyRecord)) error {
	if f.specPath != "" {
		return f.runSpec(c, a, line, text)
	}
	cfg, err := f.prepare(c, a)
	if err != nil {
		return err
	}
	progress, finish := a.bars()
	defer finish()
	cfg.Progress = progress
	return experiment.RunVerify(c.Context(), cfg, func(r experiment.VerifyRecord) error {
		return a.emit(line(r), func(w io.Writer) { text(w, r) })
	})
}

// runSpec verifies (or bounds) the problem of a spec file: the answer on
// stdout, the JSON record with --json.
func (f *verifyFlags) runSpec(c *cobra.Command, a *app, line func(experiment.VerifyRecord) any, text func(io.Writer, experiment.VerifyRecord)) error {
	sp, m, err := experiment.LoadSpec(f.specPath, c.Flags().Changed)
	if err != nil {
		return err
	}
	f.Eps = []float64{0}
	cfg, err := f.config(c, a, experiment.Whole, m)
	if err != nil {
		return err
	}
	rec, err := experiment.RunSpec(c.Context(), cfg, sp)
	if err != nil {
		return err
	}
	return a.emit(line(rec), func(w io.Writer) { text(w, rec) })
}

// config builds the experiment's configuration from the flags and checks
// it; the data and samples come later.
func (f *verifyFlags) config(c *cobra.Command, a *app, shard experiment.Shard, m *experiment.Model) (experiment.VerifyConfig, error) {
	k, err := f.K(c.Flags().Changed)
	if err != nil {
		return experiment.VerifyConfig{}, err
	}
	s := f.s
	s.MaxLen, s.MaxSteps, s.Seed = k, f.MaxSteps, f.Seed
	if f.noMIP {
		s.Solver = experiment.SolverNone
	}
	cfg := experiment.VerifyConfig{Model: m, Eps: f.Eps, Settings: s, WriteMPS: f.writeMPS, Out: f.Out, Shard: shard, Logf: a.logf}
	return cfg, usage(cfg.Validate())
}

// prepare checks the flags, loads the model, builds and checks the
// configuration, then loads the data: settings errors come before any
// data is built.
func (f *verifyFlags) prepare(c *cobra.Command, a *app) (experiment.VerifyConfig, error) {
	shard, m, err := f.loadModel(c, a)
	if err != nil {
		return experiment.VerifyConfig{}, err
	}
	cfg, err := f.config(c, a, shard, m)
	if err != nil {
		return experiment.VerifyConfig{}, err
	}
	cfg.Data, cfg.Samples, err = f.loadData(c.Context(), a, m)
	return cfg, err
}

func newVerifyCmd(a *app) *cobra.Command {
	f := &verifyFlags{}
	c := &cobra.Command{
		Use:   "verify",
		Short: "Prove that no input within δ makes the output longer than K̂, or find one that does",
		Long: `For each image and radius δ, decide whether some x' in S(x, δ) = {‖x' − x‖∞ ≤ δ} ∩ [min, max]ⁿ
decodes more than K̂ tokens (docs/verification.md). The stages, each given a share of
the time left: a PGD warm start (--attack-steps × --attack-restarts); sound bounds
(--bounds, CROWN by default); where they do not prove, a round of the wide falsifier
(PGD with --search-restarts runs); branch and bound with α,β-CROWN bounds (--bab); the
box MIP around i₀ and the token search; branch and bound resumed, alternating with
further falsifier rounds while the proof is out of reach; the abstracted MIPs; the
exact MIP of the unrolled greedy decoder, solved by CBC in decision mode. --no-mip
keeps the bounds, branch and bound and the falsifier. Every candidate is replayed in
float64. Verdicts: robust (proven, with a margin covering solver tolerances),
vulnerable (a witness that replays in float64 with no tie), unknown (time limit or
doubt). One word per sample on stdout; one JSON line per (image, δ) in --out. A sample
whose solver fails is recorded as unknown with the error, and the run goes on. The
defaults are the library's: experiment.DefaultVerifySettings, that is
experiment.DefaultVerifyOptions (verify.DefaultOptions with CBC and the falsifiers).`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return f.run(c, a, func(r experiment.VerifyRecord) any { return r },
				func(w io.Writer, r experiment.VerifyRecord) { fmt.Fprintln(w, r.Verdict) })
		},
	}
	f.register(c, true)
	return c
}

func newBoundCmd(a *app) *cobra.Command {
	f := &verifyFlags{}
	c := &cobra.Command{
		Use:   "bound",
		Short: "Certify the worst-case output length: no input within δ decodes more than N tokens",
		Long: `For each image and radius δ, search the largest output length any input of
S(x, δ) can produce. Starting from the image's own length, verify K̂ = the longest
length found so far: a witness (replayed in float64) raises the lower bound to its
length, a proof ends the search (upper = K̂), an unknown moves K̂ up by one. The
answer is certified when lower = upper, an interval [lower, upper] otherwise, and
upper is null when no K̂ up to --max-len was proven. --timeout applies to each K̂
tried. One line per sample on stdout ({"lower":…, "upper":…} with --json); with
--out, one JSON record per (image, δ) and the witnesses, resumable like verify's.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			f.s.Bound = true
			if f.Out == "" && f.specPath == "" {
				// Without --out nothing is kept: the records and witnesses
				// go to a directory removed at the end.
				tmp, err := os.MkdirTemp("", "lenspec-bound-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				f.Out = filepath.Join(tmp, "bound.jsonl")
			}
			return f.run(c, a, func(r experiment.VerifyRecord) any { return boundLine(r) }, boundText)
		},
	}
	f.register(c, true)
	c.Flags().Lookup("max-len").Usage = fmt.Sprintf("the largest K̂ the search tries, 0..%d", verify.MaxK)
	c.Flags().Lookup("max-len").DefValue = fmt.Sprint(verify.MaxK) // what −1, not given, stands for
	return c
}

// boundOutput is what bound prints per sample.
type boundOutput struct {
	Sample    int                `json:"sample"`
	Eps       float64            `json:"eps"`
	Lower     int                `json:"lower"`
	Upper     *int               `json:"upper"`
	Certified bool               `json:"certified"`
	Witness   string             `json:"witness,omitempty"`
	Seconds   float64            `json:"seconds"`
	Steps     []verify.BoundStep `json:"steps"`
	Error     string             `json:"error,omitempty"`
}

func boundText(w io.Writer, r experiment.VerifyRecord) {
	b := boundLine(r)
	up := "unproven"
	if b.Upper != nil {
		up = fmt.Sprint(*b.Upper)
	}
	fmt.Fprintf(w, "sample %d eps %g: %s lower %d upper %s\n", b.Sample, b.Eps, r.Verdict, b.Lower, up)
}

func boundLine(r experiment.VerifyRecord) boundOutput {
	out := boundOutput{Sample: r.Sample, Eps: r.Eps, Witness: r.Witness, Seconds: r.Seconds, Error: r.Error}
	if b := r.Bound; b != nil {
		out.Lower, out.Upper, out.Certified, out.Steps = b.Lower, b.Upper, b.Certified, b.Steps
	}
	return out
}
