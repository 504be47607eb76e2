package experiment

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/captions"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nmt"
	"github.com/lenspec/lenspec/train"
	"github.com/spf13/pflag"
)

// CaptionerTraining is lenspec train captioner: the training run and the
// model's architecture, the Multi-MNIST data it trains on (their seed,
// and whether training canvases are shifted), and the verifier's count
// after each epoch (Probe).
type CaptionerTraining struct {
	Run      train.CaptionerRun
	Config   model.Config
	DataSeed uint64
	Shift    bool
	Probe    ProbeSettings

	// Arch selects the decoder: "rnn" (Config's cell decoder) or
	// "transformer" (Transformer's, on Config's convolutions).
	Arch        string
	Transformer model.Config
}

// NewCaptionerTraining is the training lenspec train captioner runs
// given no flags, the recipe of models/mmnist-rnn.
func NewCaptionerTraining() *CaptionerTraining {
	return &CaptionerTraining{Run: train.CaptionerRun{Options: train.DefaultOptions()}, Config: model.DefaultCaptionerConfig(),
		Arch: ArchRNN, Transformer: model.DefaultTransformerCaptionerConfig(),
		DataSeed: DefaultDataSeed, Shift: true, Probe: DefaultProbeSettings()}
}

// RegisterFlags adds the settings to fs as lenspec train captioner's
// flags, each starting at t's value.
func (t *CaptionerTraining) RegisterFlags(fs *pflag.FlagSet) {
	t.Run.RegisterFlags(fs)
	fs.Uint64Var(&t.DataSeed, "data-seed", t.DataSeed, "Multi-MNIST generation seed")
	fs.BoolVar(&t.Shift, "shift", t.Shift, "shift training canvases horizontally (digits stay inside; labels unchanged)")
	t.Probe.RegisterFlags(fs)
	train.RegisterCaptionerArchFlags(fs, t.Config.Arch.(*model.CaptionerConfig))
	fs.StringVar(&t.Arch, "arch", t.Arch, "decoder: rnn (the --cell decoder) or transformer (cnn-transformer-captioner)")
	train.RegisterTransformerCaptionerFlags(fs, t.Transformer.Arch.(*model.TransformerCaptionerConfig))
}

// Train checks the settings (as SettingsErrors, before any data are
// built), builds the model, trains it on Multi-MNIST from env's sources
// with the probe attached, following the training and the probe with
// progress, and writes it to Run.Out recording command, the command line
// that rebuilds it (train.RebuildCommand).
func (t *CaptionerTraining) Train(ctx context.Context, env Env, command string, progress Progress) (CaptionerSummary, error) {
	run, changed := &t.Run, env.Changed
	if err := run.ValidateFlags(changed); err != nil {
		return CaptionerSummary{}, SettingsError{err}
	}
	cfg, err := t.modelConfig(changed)
	if err != nil {
		return CaptionerSummary{}, SettingsError{err}
	}
	if err := run.ValidateModel(cfg, changed); err != nil {
		return CaptionerSummary{}, SettingsError{err}
	}
	d, err := run.Model(cfg)
	if err != nil {
		return CaptionerSummary{}, err
	}
	if err := run.LoadTeacher(d); err != nil {
		return CaptionerSummary{}, err
	}
	in := d.Input()
	if err := CheckMultiMNIST(in); err != nil {
		return CaptionerSummary{}, err
	}
	if err := run.ValidateFor(d); err != nil {
		return CaptionerSummary{}, SettingsError{err} // the radii against the model's input range
	}
	certEps, err := t.Probe.ValidateFlags(changed, run.Options, in)
	if err != nil {
		return CaptionerSummary{}, err
	}
	sources, err := env.Sources()
	if err != nil {
		return CaptionerSummary{}, err
	}
	tr, te, err := sources.MultiMNIST(ctx, t.DataSeed)
	if err != nil {
		return CaptionerSummary{}, err
	}
	src, trainEval, test, err := CaptionerSources(tr, te, t.Shift, in)
	if err != nil {
		return CaptionerSummary{}, err
	}
	probed := new(string)
	if t.Probe.Images > 0 {
		data, err := MultiMNIST(te, "test", t.DataSeed, in)
		if err != nil {
			return CaptionerSummary{}, err
		}
		if probed, err = t.Probe.Attach(run, data, certEps, progress); err != nil {
			return CaptionerSummary{}, err
		}
	}
	run.Progress = func(p train.Progress) { progress("train", p.Step, p.Steps, run.Options.Status(p)+*probed) }
	run.Record = map[string]any{"data_seed": t.DataSeed, "shift": t.Shift, "command": command}
	res, err := train.Captioner(ctx, d, src, trainEval, test, *run)
	if err != nil {
		return CaptionerSummary{}, err
	}
	return SummariseCaptioner(*run, res), nil
}

// CheckCaptionLengths refuses, as a SettingsError, a caption-length
// distribution CaptionLengths does not know.
func CheckCaptionLengths(name string) error {
	if _, err := CaptionLengths(name); err != nil {
		return SettingsError{fmt.Errorf("--%v", err)}
	}
	return nil
}

// ShowTellTraining is lenspec train showtell: the training options, the
// model's architecture, and the captions data set it trains on (its
// caption-length distribution and seed).
type ShowTellTraining struct {
	Options  train.ShowTellOptions
	Config   model.Config
	Lengths  string
	DataSeed uint64
}

// NewShowTellTraining is the training lenspec train showtell runs given
// no flags, the recipe of models/showtell-lstm.
func NewShowTellTraining() *ShowTellTraining {
	return &ShowTellTraining{Options: train.DefaultShowTellOptions(), Config: model.DefaultShowTellConfig(captions.Vocab),
		Lengths: "skewed", DataSeed: DefaultDataSeed}
}

// RegisterFlags adds the settings to fs as lenspec train showtell's
// flags, each starting at t's value.
func (t *ShowTellTraining) RegisterFlags(fs *pflag.FlagSet) {
	t.Options.RegisterFlags(fs)
	fs.StringVar(&t.Lengths, "lengths", t.Lengths, "training caption-length distribution: skewed (the bias to short captions) or flat")
	fs.Uint64Var(&t.DataSeed, "data-seed", t.DataSeed, "captions data set generation seed")
	train.RegisterShowTellArchFlags(fs, t.Config.Arch.(*model.ShowTellConfig))
}

// Train checks the settings (as SettingsErrors), builds the model,
// trains it on the captions data set from env's sources, following each
// stage with progress, and writes it to Options.Out recording command,
// the command line that rebuilds it (train.RebuildCommand).
func (t *ShowTellTraining) Train(ctx context.Context, env Env, command string, progress Progress) (train.ShowTellSummary, error) {
	o := &t.Options
	if err := o.ValidateFlags(); err != nil {
		return train.ShowTellSummary{}, SettingsError{err}
	}
	if err := CheckCaptionLengths(t.Lengths); err != nil {
		return train.ShowTellSummary{}, err
	}
	if err := t.Config.Validate(); err != nil {
		return train.ShowTellSummary{}, SettingsError{err}
	}
	d, err := model.New[float32](&t.Config, rand.New(rand.NewPCG(o.Seed, 0)))
	if err != nil {
		return train.ShowTellSummary{}, err
	}
	sources, err := env.Sources()
	if err != nil {
		return train.ShowTellSummary{}, err
	}
	src, teSrc, err := sources.CaptionTraining(ctx, t.DataSeed, t.Lengths, d.Input())
	if err != nil {
		return train.ShowTellSummary{}, err
	}
	o.Data = fmt.Sprintf("captions lengths %s data-seed %d", t.Lengths, t.DataSeed)
	o.Record = map[string]any{"data_seed": t.DataSeed, "lengths": t.Lengths, "command": command}
	o.Stage = func(stage string, p train.Progress) {
		progress(stage, p.Step, p.Steps, fmt.Sprintf("epoch %d/%d loss %.3f", p.Epoch, p.Epochs, p.Loss))
	}
	res, err := train.ShowTell(ctx, d, src, teSrc, *o)
	if err != nil {
		return train.ShowTellSummary{}, err
	}
	return res.Summary(o.Out), nil
}

// NMTTraining is lenspec train nmt: the translator's training options
// and the corpus it trains on.
type NMTTraining struct {
	Options nmt.Options
	Corpus  nmt.CorpusChoice
}

// NewNMTTraining is the training lenspec train nmt runs given no flags,
// the recipe of models/nmt-de-en.
func NewNMTTraining() *NMTTraining { return &NMTTraining{Options: nmt.DefaultOptions()} }

// RegisterFlags adds the settings to fs as lenspec train nmt's flags,
// each starting at t's value.
func (t *NMTTraining) RegisterFlags(fs *pflag.FlagSet) {
	t.Options.RegisterFlags(fs)
	t.Corpus.RegisterFlags(fs)
}

// Train checks the options (as SettingsErrors), reads the corpus, trains
// the translator following its steps with progress, and writes it to
// Options.Out recording command, the command line that rebuilds it
// (train.RebuildCommand). A --vocab too small for the corpus's characters,
// known only once the corpus is read, is a SettingsError too.
func (t *NMTTraining) Train(ctx context.Context, env Env, command string, progress Progress) (nmt.Summary, error) {
	o := &t.Options
	if err := o.ValidateFlags(env.Changed); err != nil {
		return nmt.Summary{}, SettingsError{err}
	}
	env.Logf("reading the corpus...")
	sp, err := t.Corpus.Load()
	if err != nil {
		return nmt.Summary{}, err
	}
	env.Logf("%s: %d training, %d dev, %d test pairs", sp.Path, len(sp.Train), len(sp.Dev), len(sp.Test))
	var rate train.TokenRate
	o.Train.Progress = func(p train.Progress) {
		progress("train nmt", p.Step, p.Steps, fmt.Sprintf("epoch %d/%d loss %.3f, %.0f target tokens/s", p.Epoch, p.Epochs, p.Loss, rate.Add(p)))
	}
	o.Corpus, o.SplitSeed, o.Command, o.Logf = sp, t.Corpus.SplitSeed, command, env.Logf
	res, err := nmt.Train(ctx, *o)
	var small *bpe.VocabSizeError
	if errors.As(err, &small) {
		return nmt.Summary{}, SettingsError{fmt.Errorf("--vocab %d is below the %d tokens %s needs (4 special, 256 byte and %d character tokens): give --vocab %d or more",
			o.Vocab, small.Need(), sp.Path, small.Alphabet, small.Need())}
	}
	if err != nil {
		return nmt.Summary{}, err
	}
	return res.Summary(o.Out), nil
}
