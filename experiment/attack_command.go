package experiment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nmt"
	"github.com/spf13/pflag"
)

// Env is what a run built from flags needs from the program around it:
// which flags were given (Changed: a setting left alone takes its
// method's or model's default), the environment (Getenv: a batch
// system's shard), where log lines go (Logf), and where the image data
// sets are (Sources, asked only once the settings are checked).
type Env struct {
	Changed func(flag string) bool
	Getenv  func(string) string
	Logf    func(format string, args ...any)
	Sources func() (Sources, error)
}

// AttackFlags are lenspec attack's settings as its flags give them, so
// that a library user registers the same flags (or fills the fields) and
// gets the same checked AttackConfig from ImageAttack or TextAttacks.
type AttackFlags struct {
	RunSettings
	Method        string
	Budget, Batch int
	// Settings are the PGD and text settings (AttackSettings.RegisterFlags,
	// RegisterTextFlags); K̂, the step cap, the budget and the seed come
	// from the fields above.
	Settings   AttackSettings
	WitnessDir string
	// Sentences, Texts, TextFile and Corpus pick a text model's sentences
	// (TextSelection).
	Sentences int
	Texts     []string
	TextFile  string
	Corpus    nmt.CorpusChoice
}

// RegisterFlags adds the settings to fs as lenspec attack's flags;
// samples adds those picking the inputs, radii, method and output, which
// the experiments define their own way.
func (f *AttackFlags) RegisterFlags(fs *pflag.FlagSet, samples bool) {
	f.RunSettings.RegisterFlags(fs, samples)
	if samples {
		fs.StringVar(&f.Method, "method", MethodPGD, "images: "+orList(MethodNames(false))+"; text: "+orList(TextMethods))
		fs.StringVar(&f.WitnessDir, "witness-dir", "", "where witnesses go (default: next to --out, in OUT.witnesses/)")
		fs.IntVar(&f.Budget, "budget", 10000, "samples per input (random), PGD iterations (pgd, gumbel, embedding) or model evaluations (flip)")
		fs.IntVar(&f.Sentences, "sentences", 0, "text: this many sentences of --split, drawn at random with --seed")
		fs.StringArrayVar(&f.Texts, "text", nil, "text: a source sentence of your own (repeatable) instead of the corpus's")
		fs.StringVar(&f.TextFile, "text-file", "", "text: a file of your own source sentences, one per line (blank lines skipped), instead of the corpus's")
		f.Settings.RegisterTextFlags(fs, true)
		f.Corpus.RegisterFlags(fs)
	}
	fs.IntVar(&f.MaxLen, "max-len", -1, "K̂: success means an output longer than this (default: the original output's length)")
	fs.Lookup("max-len").DefValue = "0" // −1 is a sentinel the usage explains; "0" hides it from the help
	fs.IntVar(&f.Batch, "batch", 50, "images per batched PGD run, or samples per decode batch ÷ 20 for random search; text: sentences run side by side (at most 25), random search decoding 8 draws per sentence at a time (speed only: results do not depend on it)")
	f.Settings.RegisterFlags(fs)
}

// orList lists names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Load checks an image run's settings (ValidateFlags), resolves its shard
// and loads its model: every settings error comes before any data is
// built.
func (r RunSettings) Load(env Env) (Shard, *Model, error) {
	if err := r.ValidateFlags(env.Changed); err != nil {
		return Shard{}, nil, err
	}
	shard, err := r.ResolveShard(env.Getenv)
	if err != nil {
		return Shard{}, nil, err
	}
	m, err := LoadModel(r.Model)
	return shard, m, err
}

// Data loads the image data of model m from env's sources and picks the
// samples the settings name.
func (r RunSettings) Data(ctx context.Context, env Env, m *Model) (Data, []int, error) {
	src, err := env.Sources()
	if err != nil {
		return Data{}, nil, err
	}
	return src.Select(ctx, m, r.Selection(), r.MaxSteps)
}

// Config is the image attack of model m on shard with the settings'
// method and budget, checked (Validate) as a SettingsError; the data and
// samples come later (RunSettings.Data).
func (f *AttackFlags) Config(env Env, shard Shard, m *Model) (AttackConfig, error) {
	k, err := f.K(env.Changed)
	if err != nil {
		return AttackConfig{}, err
	}
	s := f.Settings
	cfg := AttackConfig{
		Model: m, Eps: f.Eps, Method: f.Method, Batch: f.Batch,
		Settings: AttackSettings{MaxLen: k, MaxSteps: f.MaxSteps, Budget: f.Budget, Seed: f.Seed,
			Loss: s.Loss, LR: s.LR, Clip: s.Clip, Restarts: s.Restarts, EarlyStop: s.EarlyStop},
		Out: f.Out, WitnessDir: f.WitnessDir, Shard: shard, Logf: env.Logf,
	}
	return cfg, settingsErr(cfg.Validate())
}

// Attack is lenspec attack: the attack of a text model (by its
// config.json) with Method (TextAttacks), of an image model otherwise
// (ImageAttack).
func (f *AttackFlags) Attack(ctx context.Context, env Env) (AttackConfig, error) {
	if f.Model == "" {
		return AttackConfig{}, SettingsError{errors.New("--model is required")}
	}
	if cfg, err := model.ReadConfig(f.Model); err != nil || cfg.InputKind() != model.Tokens {
		return f.ImageAttack(ctx, env)
	}
	cfgs, err := f.TextAttacks(env, []string{f.Method}, nil)
	if err != nil {
		return AttackConfig{}, err
	}
	return cfgs[0], nil
}

// ImageAttack is lenspec attack on an image model: the method and the
// settings checked, the model loaded, the configuration built and its
// samples picked, ready for RunAttack.
func (f *AttackFlags) ImageAttack(ctx context.Context, env Env) (AttackConfig, error) {
	if !slices.Contains(MethodNames(false), f.Method) {
		return AttackConfig{}, SettingsError{fmt.Errorf("--method %q: want %s", f.Method, strings.Join(MethodNames(false), " or "))}
	}
	if err := CheckKindFlags(model.Continuous, f.Model, env.Changed); err != nil {
		return AttackConfig{}, err
	}
	if err := CheckRead(env.Changed, []string{f.Method}, MethodNames(false)); err != nil {
		return AttackConfig{}, err
	}
	shard, m, err := f.Load(env)
	if err != nil {
		return AttackConfig{}, err
	}
	cfg, err := f.Config(env, shard, m)
	if err != nil {
		return AttackConfig{}, err
	}
	cfg.Data, cfg.Samples, err = f.Data(ctx, env, m)
	return cfg, err
}

// textConfig is a text attack's configuration by method, with the
// method's defaults for the settings not given (Method.TextDefaults);
// the model, shard and data come later.
func (f *AttackFlags) textConfig(env Env, method string) (AttackConfig, error) {
	def, ok := LookupMethod(method)
	if !ok || !def.Text {
		return AttackConfig{}, SettingsError{fmt.Errorf("--method %q: a text model takes %s", method, orList(TextMethods))}
	}
	if err := CheckKindFlags(model.Tokens, f.Model, env.Changed); err != nil {
		return AttackConfig{}, err
	}
	if _, err := attack.ParseLoss(f.Settings.Loss); err != nil {
		return AttackConfig{}, SettingsError{fmt.Errorf("--loss: %v", err)}
	}
	k, err := f.K(env.Changed)
	if err != nil {
		return AttackConfig{}, err
	}
	s := f.Settings
	s.MaxLen, s.MaxSteps, s.Budget, s.Seed, s.Restarts, s.EarlyStop = k, f.MaxSteps, f.Budget, f.Seed, 0, false
	s = def.TextDefaults(s, func(setting string) bool { return env.Changed(strings.ReplaceAll(setting, "_", "-")) })
	return AttackConfig{Eps: f.Eps, Method: method, Batch: min(f.Batch, MaxTextBatch), Settings: s,
		Out: f.Out, WitnessDir: f.WitnessDir, Logf: env.Logf}, nil
}

// TextAttacks are the attacks of a text model by each of methods, with
// the budgets given in budgets (nil: the Budget field) over the same
// model, shard and sentences, every setting checked before the model is
// loaded and the model before the sentences.
func (f *AttackFlags) TextAttacks(env Env, methods []string, budgets Budgets) ([]AttackConfig, error) {
	var cfgs []AttackConfig
	for _, method := range methods {
		cfg, err := f.textConfig(env, method)
		if err != nil {
			return nil, err
		}
		cfgs = append(cfgs, cfg)
	}
	if err := CheckRead(env.Changed, methods, TextMethods); err != nil {
		return nil, err
	}
	if err := budgets.Apply(cfgs, env.Changed); err != nil {
		return nil, err
	}
	shard, m, err := f.loadText(env)
	if err != nil {
		return nil, err
	}
	for i := range cfgs {
		cfgs[i].Model, cfgs[i].Shard = m, shard
		if err := cfgs[i].Validate(); err != nil {
			return nil, SettingsError{err}
		}
	}
	sel := TextSelection{Sentences: f.Sentences, Indices: f.Indices, Split: f.Split, Seed: f.Seed, Corpus: f.Corpus,
		SplitSeedGiven: env.Changed("split-seed"), Texts: f.Texts, File: f.TextFile}
	if err := sel.ValidateFlags(env.Changed); err != nil {
		return nil, err
	}
	data, samples, err := sel.Select(m)
	if err != nil {
		return nil, err
	}
	for i := range cfgs {
		cfgs[i].Data, cfgs[i].Samples = data, samples
	}
	return cfgs, nil
}

// loadText checks a text run's output and step cap, resolves its shard
// and loads its model.
func (f *AttackFlags) loadText(env Env) (Shard, *Model, error) {
	if err := f.ValidateText(); err != nil {
		return Shard{}, nil, err
	}
	shard, err := f.ResolveShard(env.Getenv)
	if err != nil {
		return Shard{}, nil, err
	}
	if err := CheckMaxSteps(f.MaxSteps, env.Changed("max-steps")); err != nil {
		return Shard{}, nil, err
	}
	m, err := LoadModel(f.Model)
	return shard, m, err
}
