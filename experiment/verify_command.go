package experiment

import (
	"context"
	"fmt"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/train"
	"github.com/lenspec/lenspec/verify"
	"github.com/spf13/pflag"
)

// VerifyFlags are lenspec verify's and bound's settings as their flags
// give them, so that a library user registers the same flags (or fills
// the fields) and gets the same checked VerifyConfig from Verification.
type VerifyFlags struct {
	RunSettings
	// Settings are the verifier's (VerifySettings.RegisterFlags); K̂, the
	// step cap and the seed come from RunSettings.
	Settings VerifySettings
	// NoMIP runs without a MIP solver (SolverNone).
	NoMIP    bool
	WriteMPS string
	// SpecPath, if set, is a spec file naming the model, input, set and
	// K̂ instead of RunSettings (LoadSpec).
	SpecPath string
	// Sentences, Texts and TextFile pick a translator's sentences
	// (RegisterTextFlags), as lenspec attack's flags do.
	Sentences int
	Texts     []string
	TextFile  string
}

// RegisterFlags adds the settings to fs as lenspec verify's flags,
// starting at DefaultVerifySettings; samples adds those picking the
// inputs, radii and output, which the experiment defines its own way.
func (f *VerifyFlags) RegisterFlags(fs *pflag.FlagSet, samples bool) {
	f.RunSettings.RegisterFlags(fs, samples)
	f.Settings = DefaultVerifySettings()
	fs.IntVar(&f.MaxLen, "max-len", -1, fmt.Sprintf("K̂, 0..%d: prove no output is longer than this (default: the length of the image's ground-truth label)", verify.MaxK))
	fs.Lookup("max-len").DefValue = "0" // −1 is a sentinel the usage explains; "0" hides it from the help
	f.Settings.RegisterFlags(fs)
	fs.BoolVar(&f.NoMIP, "no-mip", false, "no MIP solver: after the warm start and the bounds, branch and bound alternating with rounds of the wide falsifier takes all the time (with --bab=false: one falsifier round); --tokens, --abstract, --relax-gap, --optimize and --threads then do nothing")
	fs.StringVar(&f.WriteMPS, "write-mps", "", "write each sample's MIP to this directory (MPS, for SCIP, Gurobi, HiGHS…)")
	if samples {
		fs.StringVar(&f.SpecPath, "spec", "", `a spec file (JSON: "model", "input" file or "values", "eps" or "lower"/"upper", "max_len") instead of --model and the data flags`)
	}
}

// Config is the verification of model m on shard, checked (Validate) as
// a SettingsError; the data and samples come later (RunSettings.Data).
// Branch and bound's own flags given with --bab=false are refused: they
// would do nothing.
func (f *VerifyFlags) Config(env Env, shard Shard, m *Model) (VerifyConfig, error) {
	if err := train.SwitchedBy(env.Changed, "bab", f.Settings.BaB, "cuts", "cut-multipliers", "clip-input"); err != nil {
		return VerifyConfig{}, SettingsError{err}
	}
	k, err := f.K(env.Changed)
	if err != nil {
		return VerifyConfig{}, err
	}
	s := f.Settings
	s.MaxLen, s.MaxSteps, s.Seed = k, f.MaxSteps, f.Seed
	if f.NoMIP {
		s.Solver = SolverNone
	}
	cfg := VerifyConfig{Model: m, Eps: f.Eps, Settings: s, WriteMPS: f.WriteMPS, Out: f.Out, Shard: shard, Logf: env.Logf}
	return cfg, settingsErr(cfg.Validate())
}

// Verification is lenspec verify's (or bound's) run: the settings
// checked, the model loaded, the configuration built and its samples
// picked, ready for RunVerify; settings errors come before any data is
// built.
func (f *VerifyFlags) Verification(ctx context.Context, env Env) (VerifyConfig, error) {
	if err := checkVerifiable(f.Model); err != nil {
		return VerifyConfig{}, err
	}
	shard, m, err := f.Load(env)
	if err != nil {
		return VerifyConfig{}, err
	}
	cfg, err := f.Config(env, shard, m)
	if err != nil {
		return VerifyConfig{}, err
	}
	cfg.Data, cfg.Samples, err = f.Data(ctx, env, m)
	return cfg, err
}

// Spec verifies (or bounds) the problem of the spec file SpecPath with
// the settings (RunSpec).
func (f *VerifyFlags) Spec(ctx context.Context, env Env) (VerifyRecord, error) {
	sp, m, err := LoadSpec(f.SpecPath, env.Changed)
	if err != nil {
		return VerifyRecord{}, err
	}
	f.Eps = []float64{0}
	cfg, err := f.Config(env, Whole, m)
	if err != nil {
		return VerifyRecord{}, err
	}
	return RunSpec(ctx, cfg, sp)
}

// checkVerifiable refuses, as a SettingsError, the model in dir when it
// reads tokens (a translator): the verifier takes image
// (continuous-input) models, so it says so from config.json alone rather
// than fail later on the input range a token model does not have (a
// translator's verdict and bound are RunExhaust's, which lenspec verify
// and bound call instead). A directory whose config cannot be read is
// left for loading the model to report.
func checkVerifiable(dir string) error {
	cfg, err := model.ReadConfig(dir)
	if err != nil || cfg.InputKind() != model.Tokens {
		return nil
	}
	return SettingsError{fmt.Errorf("%s is a %s, which reads text: verification takes image (continuous-input) models only", dir, cfg.Architecture)}
}
