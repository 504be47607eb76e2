package train

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lenspec/lenspec/model"
	"github.com/spf13/pflag"
)

// RegisterOptimiserFlags adds the optimiser's settings every training
// command shares (the learning-rate schedule, gradient clipping, shards)
// to fs, each starting at o's value: each command sets its own defaults
// first.
func (o *Options) RegisterOptimiserFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&o.LR, "lr", o.LR, "Adam learning rate")
	fs.Float64Var(&o.FinalLR, "final-lr", o.FinalLR, "learning rate at the end of the cosine schedule (0: constant)")
	fs.Float64Var(&o.ClipNorm, "clip-norm", o.ClipNorm, "clip the gradient's global L2 norm (0: off)")
	fs.IntVar(&o.Shards, "shards", o.Shards, "split each batch into this many shards computed concurrently (the result depends on it, not on the cores)")
}

// RegisterRobustnessFlags adds the settings of verification-friendly
// (ReLU stability) and certified (IBP) training to fs, each starting at
// o's value; ValidateFlags refuses those given while their feature is
// off.
func (o *Options) RegisterRobustnessFlags(fs *pflag.FlagSet) {
	if o.IBPBound == "" {
		o.IBPBound = model.BoundInterval
	}
	fs.Float64Var(&o.Stability, "stability", o.Stability, "weight of the ReLU-stability regulariser (verification-friendly training; 0: off)")
	fs.Float64Var(&o.StabilityEps, "stability-eps", o.StabilityEps, "L∞ radius of the regulariser's interval bounds, at most the input range's width (with --stability only)")
	fs.Float64Var(&o.StabilityRamp, "stability-ramp", o.StabilityRamp, "fraction of the steps over which the radius ramps up from 0 (with --stability only)")
	fs.Float64Var(&o.IBP, "ibp", o.IBP, "weight of the interval-bound (certified) loss at the end of its ramp, in [0, 1] (0: off)")
	fs.Float64Var(&o.IBPEps, "ibp-eps", o.IBPEps, "L∞ radius the certified loss trains for, at most the input range's width (with --ibp only; required with it)")
	fs.Float64Var(&o.IBPRamp, "ibp-ramp", o.IBPRamp, "fraction of the steps over which the certified loss's weight and radius ramp up from 0 (with --ibp only)")
	fs.StringVar((*string)(&o.IBPBound), "ibp-bound", string(o.IBPBound), "the certified loss's bound: interval (IBP) or crown-ibp (tighter: linear bounds above fc1; with --ibp only)")
	fs.BoolVar(&o.IBPAttack, "ibp-attack", o.IBPAttack, "take the cross-entropy term at a one-step attack inside the ball (MTL-IBP) instead of at the image (with --ibp only)")
	fs.Float64Var(&o.SABR, "ibp-sabr", o.SABR, "SABR: take the certified loss over a box of this fraction of --ibp-eps, around a one-step attack point inside the ball, instead of over the whole ball; in [0, 1) (0: off; with --ibp only)")
}

// ValidateFlags is Validate for options set by RegisterRobustnessFlags:
// first it refuses a flag of the certified loss given (changed reports
// which flags were) while --ibp is off, then Validate, then a flag of the
// stability regulariser given while --stability is off. Such a flag would
// be ignored, so a run could look as if it used a setting it did not.
func (o Options) ValidateFlags(changed func(flag string) bool) error {
	if err := SwitchedBy(changed, "ibp", o.IBP > 0, "ibp-eps", "ibp-ramp", "ibp-bound", "ibp-attack", "ibp-sabr"); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	return SwitchedBy(changed, "stability", o.Stability > 0, "stability-eps", "stability-ramp")
}

// SwitchedBy refuses flags that only mean something when the flag on
// turns their feature on (enabled), given while it is off: they would be
// ignored. changed reports the flags given. Every command's settings
// that hang on a switch refuse with it, so the message is one.
func SwitchedBy(changed func(string) bool, on string, enabled bool, flags ...string) error {
	if enabled {
		return nil
	}
	for _, f := range flags {
		if changed(f) {
			return fmt.Errorf("--%s is read only with --%s, which is off: set --%s, or drop --%s", f, on, on, f)
		}
	}
	return nil
}

// registerCaptionerFlags adds the settings every image captioner's
// training shares: the seed (seedHelp says what it seeds), the epochs and
// batch, the optimiser, weight decay and dropout.
func (o *Options) registerCaptionerFlags(fs *pflag.FlagSet, seedHelp string) {
	fs.Uint64Var(&o.Seed, "seed", o.Seed, seedHelp)
	fs.IntVar(&o.Epochs, "epochs", o.Epochs, "passes over the 50,000 training canvases")
	fs.IntVar(&o.BatchSize, "batch", o.BatchSize, "batch size")
	o.RegisterOptimiserFlags(fs)
	fs.Float64Var(&o.WeightDecay, "weight-decay", o.WeightDecay, "AdamW decoupled weight decay on weight matrices")
	fs.Float64Var(&o.Dropout, "dropout", o.Dropout, "dropout probability in the encoder's fully connected layers, in [0, 1)")
}

// RegisterFlags adds the run's settings to fs as lenspec train
// captioner's flags, each starting at r's value (DefaultOptions for the
// CLI's: the recipe of models/mmnist-rnn): the output, fine-tuning, the
// optimisation, and verification-friendly and certified training.
func (r *CaptionerRun) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&r.Out, "out", r.Out, "output model directory")
	fs.StringVar(&r.Init, "init", r.Init, "start from this model's weights and architecture (fine-tuning)")
	r.registerCaptionerFlags(fs, "seed for initialisation, shuffling, augmentation and dropout")
	r.RegisterRobustnessFlags(fs)
	fs.StringVar(&r.DistillFrom, "distill-from", r.DistillFrom, "distil this model (same inputs and vocabulary) into the one trained: its distributions become part of the teacher-forced term's targets")
	fs.Float64Var(&r.Distill, "distill", r.Distill, "weight of the teacher's distributions in the teacher-forced term, in [0, 1] (with --distill-from only)")
	fs.Float64Var(&r.DistillTemp, "distill-temp", r.DistillTemp, "temperature the teacher's and the model's distributions are compared at, positive (with --distill-from only)")
	fs.BoolVar(&r.DistillHardEOS, "distill-hard-eos", r.DistillHardEOS, "keep the label alone where it is eos: the teacher's softer eos decision narrows the margins the verifier proves (with --distill-from only)")
}

// ValidateFlags checks a run set by RegisterFlags before any work: an
// output directory, then Options.ValidateFlags.
func (r CaptionerRun) ValidateFlags(changed func(flag string) bool) error {
	if r.Out == "" {
		return errors.New("--out is required")
	}
	if err := SwitchedBy(changed, "distill-from", r.DistillFrom != "", "distill", "distill-temp", "distill-hard-eos"); err != nil {
		return err
	}
	return r.Options.ValidateFlags(changed)
}

// LoadTeacher loads the model DistillFrom names into Options.Teacher and
// its digest into Options.TeacherID (nothing without DistillFrom), and
// refuses it (CheckTeacher) as a teacher of d.
func (r *CaptionerRun) LoadTeacher(d model.Decoder[float32]) error {
	if r.DistillFrom == "" {
		return nil
	}
	t, err := model.Load[float32](r.DistillFrom)
	if err != nil {
		return fmt.Errorf("--distill-from: %w", err)
	}
	if err := CheckTeacher(t, d); err != nil {
		return fmt.Errorf("--distill-from %s: %w", r.DistillFrom, err)
	}
	id, err := model.Digest(r.DistillFrom)
	if err != nil {
		return fmt.Errorf("--distill-from: %w", err)
	}
	r.Teacher, r.TeacherID = t, id
	return nil
}

// DefaultShowTellOptions are lenspec train showtell's defaults, the recipe
// of models/showtell-lstm: 3 epochs of encoder pretraining, then 10 of 64
// canvases with AdamW (a cosine schedule from 10⁻³ to 5·10⁻⁵, weight decay
// 0.01, gradient norm clipped at 5), dropout 0.1, and a checkpoint every
// 2 minutes.
func DefaultShowTellOptions() ShowTellOptions {
	opt := Options{Seed: 1, Epochs: 10, BatchSize: 64, LR: 1e-3, FinalLR: 5e-5, WeightDecay: 0.01, Dropout: 0.1, ClipNorm: 5,
		Shards: DefaultOptions().Shards, CheckpointEvery: 2 * time.Minute}
	return ShowTellOptions{Options: opt, PretrainEpochs: 3}
}

// RegisterFlags adds the options to fs as lenspec train showtell's flags,
// each starting at o's value (DefaultShowTellOptions for the CLI's).
func (o *ShowTellOptions) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Out, "out", o.Out, "output model directory")
	o.registerCaptionerFlags(fs, "seed for initialisation, shuffling and dropout")
	fs.DurationVar(&o.CheckpointEvery, "checkpoint-every", o.CheckpointEvery, "also checkpoint within an epoch this often (0: after every epoch only)")
	fs.IntVar(&o.PretrainEpochs, "pretrain-epochs", o.PretrainEpochs, "epochs of encoder pretraining under a ReLU RNN decoder first (0: none)")
}

// ValidateFlags checks options set by RegisterFlags before any work: an
// output directory, Options.Validate, and a checkpoint interval that is
// not negative.
func (o ShowTellOptions) ValidateFlags() error {
	if o.Out == "" {
		return errors.New("--out is required")
	}
	if err := o.Validate(); err != nil {
		return err
	}
	if o.CheckpointEvery < 0 {
		return fmt.Errorf("--checkpoint-every %v must not be negative", o.CheckpointEvery)
	}
	return nil
}

// RegisterCaptionerArchFlags adds the captioner's size and cell flags to
// fs, each starting at arch's value (model.DefaultCaptionerConfig for
// lenspec train captioner's).
func RegisterCaptionerArchFlags(fs *pflag.FlagSet, arch *model.CaptionerConfig) {
	fs.IntVar(&arch.Conv[0].OutChannels, "conv1", arch.Conv[0].OutChannels, "channels of the first convolution")
	fs.IntVar(&arch.Conv[1].OutChannels, "conv2", arch.Conv[1].OutChannels, "channels of the second convolution")
	fs.IntVar(&arch.FCHidden, "fc", arch.FCHidden, "width of the first fully connected layer")
	fs.StringVar(&arch.Cell, "cell", arch.Cell, "decoder cell: rnn_relu, lstm or gru (PyTorch nn.RNNCell, nn.LSTMCell, nn.GRUCell; all verifiable)")
}

// RegisterShowTellArchFlags adds the Show-and-Tell model's sizes to fs,
// each starting at arch's value (model.DefaultShowTellConfig for lenspec
// train showtell's).
func RegisterShowTellArchFlags(fs *pflag.FlagSet, arch *model.ShowTellConfig) {
	fs.IntVar(&arch.Hidden, "hidden", arch.Hidden, "LSTM hidden size")
	fs.IntVar(&arch.Embedding, "embedding", arch.Embedding, "image and word embedding size")
	fs.IntVar(&arch.FCHidden, "fc", arch.FCHidden, "width of the encoder's first fully connected layer")
}

// ValidateModel checks, before any work, the model the run is to train:
// trained from scratch, cfg (set by RegisterCaptionerArchFlags) must be
// valid; fine-tuning (Init set), no architecture flag may be given
// (changed reports which were), as the architecture comes from Init.
func (r CaptionerRun) ValidateModel(cfg *model.Config, changed func(flag string) bool) error {
	if r.Init == "" {
		return cfg.Validate()
	}
	for _, name := range append([]string{"arch", "conv1", "conv2", "fc", "cell"}, TransformerCaptionerFlags...) {
		if changed(name) {
			return fmt.Errorf("--%s conflicts with --init (the architecture comes from %s)", name, r.Init)
		}
	}
	return nil
}

// Model is the model the run trains: a new one of cfg initialised from
// the run's seed or, fine-tuning, the one in Init without its training
// record (Captioner writes the new one). ValidateModel checks cfg first.
func (r CaptionerRun) Model(cfg *model.Config) (model.Decoder[float32], error) {
	if r.Init == "" {
		return model.New[float32](cfg, rand.New(rand.NewPCG(r.Seed, 0)))
	}
	d, err := model.Load[float32](r.Init)
	if err != nil {
		return nil, err
	}
	d.Config().Training = nil
	return d, nil
}

// notRecorded are the flags that say where a run's output goes, where
// the data are read from or how the run is reported, not what it trains:
// RebuildCommand leaves them out.
var notRecorded = map[string]bool{"out": true, "json": true, "quiet": true, "blas-threads": true, "cpuprofile": true,
	"checkpoint-every": true, "mnist-dir": true, "fashion-dir": true}

// RebuildCommand is the command line (command, e.g. "lenspec train
// captioner", then --out DIR) that fs was parsed from, with every flag
// given on it but those of where the output goes and how it is reported:
// what a model's training record keeps so that it says how to rebuild the
// model. It is built from the flags given, not from a list of settings, so
// that no setting, a new one neither, can be left out; a flag given at its
// default is kept too, and each value is quoted for a POSIX shell where it
// needs to be.
func RebuildCommand(command string, fs *pflag.FlagSet) string {
	var b strings.Builder
	b.WriteString(command + " --out DIR")
	fs.Visit(func(f *pflag.Flag) {
		if notRecorded[f.Name] {
			return
		}
		switch v := f.Value.String(); {
		case f.Value.Type() == "bool" && v == "true":
			fmt.Fprintf(&b, " --%s", f.Name)
		case f.Value.Type() == "bool":
			fmt.Fprintf(&b, " --%s=%s", f.Name, v)
		default:
			if s, ok := f.Value.(pflag.SliceValue); ok {
				v = strings.Join(s.GetSlice(), ",")
			}
			fmt.Fprintf(&b, " --%s %s", f.Name, ShellWord(v))
		}
	})
	return b.String()
}

// ShellWord is s as one word of a POSIX shell's command line: as it is
// when it holds no character the shell treats specially, else in single
// quotes. Recorded and printed commands use it so that they can be pasted.
func ShellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_+=.,:/@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
