package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/spec"
	"github.com/lenspec/lenspec/train"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type trainSummary struct {
	Out              string  `json:"out"`
	Seed             uint64  `json:"seed"`
	Epochs           int     `json:"epochs"`
	Seconds          float64 `json:"seconds"`
	FinalLoss        float64 `json:"final_loss"`
	SequenceAccuracy float64 `json:"sequence_accuracy"`
	MaxLenTrain      int     `json:"max_len_train"`
	UnstoppedTrain   int     `json:"unstopped_train"`
	// Probe is the verifier's count after the last epoch (--certify-images).
	Probe *experiment.CertifyCount `json:"probe,omitempty"`
}

// optimiserFlags adds the optimiser's flags every training command shares,
// defaulting to opt's values.
func optimiserFlags(f *pflag.FlagSet, opt *train.Options) {
	f.Float64Var(&opt.LR, "lr", opt.LR, "Adam learning rate")
	f.Float64Var(&opt.FinalLR, "final-lr", opt.FinalLR, "learning rate at the end of the cosine schedule (0: constant)")
	f.Float64Var(&opt.ClipNorm, "clip-norm", opt.ClipNorm, "clip the gradient's global L2 norm (0: off)")
	f.IntVar(&opt.Shards, "shards", opt.Shards, "split each batch into this many shards computed concurrently (the result depends on it, not on the cores)")
}

func newTrainCmd(a *app) *cobra.Command {
	def := train.DefaultOptions()
	opt := def
	cfg := model.DefaultCaptionerConfig()
	arch := cfg.Arch.(*model.CaptionerConfig)
	var out, init, bound string
	var dataSeed uint64
	shift := true
	cert := certifyFlags{timeout: 5 * time.Second}
	c := &cobra.Command{
		Use:   "captioner",
		Short: "Train the Multi-MNIST CNN-RNN captioner (Adam, teacher-forced cross-entropy)",
		Long:  trainCaptionerHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkCaptionerOptions(c, out, bound, &opt); err != nil {
				return err
			}
			d, err := captionerModel(c, &cfg, init, opt.Seed)
			if err != nil {
				return err
			}
			in := d.Input()
			if err := experiment.CheckMultiMNIST(in); err != nil {
				return err
			}
			if err := opt.ValidateFor(d); err != nil {
				return usage(err) // the radii against the model's input range
			}
			certEps, err := cert.check(c, opt, in)
			if err != nil {
				return err
			}
			tr, te, err := a.loadMultiMNIST(c.Context(), dataSeed)
			if err != nil {
				return err
			}
			var srcs [3]*multimnist.Source[float32] // training (augmented), training, test
			for i, ds := range []*multimnist.Dataset{tr, tr, te} {
				if srcs[i], err = multimnist.NewSource[float32](ds, in.Min, in.Max, shift && i == 0); err != nil {
					return err
				}
			}
			run := train.CaptionerRun{Options: opt, Out: out, Init: init, Record: map[string]any{"data_seed": dataSeed, "shift": shift}}
			progress, finish := a.bars()
			defer finish()
			probed, err := cert.probe(&run, certEps, te, dataSeed, in, progress)
			if err != nil {
				return err
			}
			run.Progress = func(p train.Progress) { progress("train", p.Step, p.Steps, captionerStatus(opt, p)+*probed) }
			res, err := train.Captioner(c.Context(), d, srcs[0], srcs[1], srcs[2], run)
			finish()
			if err != nil {
				return err
			}
			return emitCaptioner(a, out, opt, res)
		},
	}
	f := c.Flags()
	f.StringVar(&out, "out", "", "output model directory")
	f.StringVar(&init, "init", "", "start from this model's weights and architecture (fine-tuning)")
	f.Uint64Var(&opt.Seed, "seed", def.Seed, "seed for initialisation, shuffling, augmentation and dropout")
	f.Uint64Var(&dataSeed, "data-seed", defaultDataSeed, "Multi-MNIST generation seed")
	f.IntVar(&opt.Epochs, "epochs", def.Epochs, "passes over the 50,000 training canvases")
	f.IntVar(&opt.BatchSize, "batch", def.BatchSize, "batch size")
	optimiserFlags(f, &opt)
	f.Float64Var(&opt.WeightDecay, "weight-decay", def.WeightDecay, "AdamW decoupled weight decay on weight matrices")
	f.Float64Var(&opt.Dropout, "dropout", def.Dropout, "dropout probability in the encoder's fully connected layers, in [0, 1)")
	f.BoolVar(&shift, "shift", shift, "shift training canvases horizontally (digits stay inside; labels unchanged)")
	robustnessFlags(f, &opt, &bound)
	cert.register(f)
	captionerArchFlags(f, arch)
	return group("train", "Train models", c, newTrainNMTCmd(a), newTrainShowTellCmd(a))
}

// emitCaptioner prints what train captioner measured.
func emitCaptioner(a *app, out string, opt train.Options, res train.CaptionerResult) error {
	s := trainSummary{out, opt.Seed, opt.Epochs, res.Seconds, res.Loss, res.Test.SequenceAccuracy, res.Train.MaxLen, res.Train.Unstopped, nil}
	if p, ok := res.Probe.(experiment.CertifyCount); ok {
		s.Probe = &p
	}
	return a.emit(s, func(w io.Writer) {
		fmt.Fprintf(w, "trained %s in %.0fs: test sequence accuracy %.4f, longest train output %d (unstopped %d)",
			out, s.Seconds, s.SequenceAccuracy, s.MaxLenTrain, s.UnstoppedTrain)
		if s.Probe != nil {
			fmt.Fprintf(w, "; %s", s.Probe)
		}
		fmt.Fprintln(w)
	})
}

// checkCaptionerOptions refuses train captioner's settings before any work.
func checkCaptionerOptions(c *cobra.Command, out, bound string, opt *train.Options) error {
	if out == "" {
		return usagef("--out is required")
	}
	opt.IBPBound = model.Bound(bound)
	if err := switchedBy(c, "ibp", opt.IBP > 0, "ibp-eps", "ibp-ramp", "ibp-bound", "ibp-attack"); err != nil {
		return err
	}
	if err := opt.Validate(); err != nil {
		return usage(err)
	}
	return switchedBy(c, "stability", opt.Stability > 0, "stability-eps", "stability-ramp")
}

// trainCaptionerHelp is lenspec train captioner's long help.
const trainCaptionerHelp = `Train the Multi-MNIST CNN-RNN captioner and write config.json and
model.safetensors to --out. A checkpoint is written to --out after every epoch;
rerunning the same command resumes from it (a checkpoint written with other
settings is refused). The defaults reproduce models/mmnist-rnn;
models/mmnist-rnn-rs records its command in its config.json.

--cell lstm trains the LSTM captioner (PyTorch nn.LSTMCell) instead of the
ReLU RNN, --cell gru the GRU captioner (nn.GRUCell); lenspec verify takes all
three (models/mmnist-lstm records its recipe). --stability adds the ReLU-stability regulariser (Xiao et al., ICLR
2019): verification-friendly training, with fewer unstable ReLUs for the
verifier. --ibp trains for a radius (interval bound propagation, Gowal et
al. 2018): the loss mixes in the interval bound of the teacher-forced loss
over the ball of radius --ibp-eps around each image, so that the label's
decoding becomes provable there; the progress line counts the batch's
images so certified. --ibp-bound crown-ibp bounds the loss more tightly
(CROWN-IBP: linear bound propagation through fc1's ReLU, fc2 and the unrolled
decoder on top of the intervals), and the count is taken on that bound;
--ibp-attack trains the cross-entropy term at a one-step attack inside the
ball instead of at the image itself (MTL-IBP). --ibp-ramp is the fraction of
the run over which the certified loss's weight and radius grow: a longer ramp
(and more epochs) gives the model time to keep its accuracy.

The count on the certified loss's bound is far below what the verifier proves
(0 of 64 where lenspec verify proves 95 of 100). --certify-images N shows the
verifier's own count after every epoch: the first N test images of lenspec
experiment mmnist-verify's draw, verified at --certify-eps (default --ibp-eps)
with its bounds and branch and bound, --certify-timeout an image, without the
MIP solver or the falsifiers; the model's training record keeps the last
count.`

// captionerModel is the model to train: a new one of cfg, initialised
// from seed, or, fine-tuning, the one in init (the architecture flags
// refused).
func captionerModel(c *cobra.Command, cfg *model.Config, init string, seed uint64) (model.Decoder[float32], error) {
	if init == "" {
		if err := cfg.Validate(); err != nil {
			return nil, usage(err)
		}
		return model.New[float32](cfg, rand.New(rand.NewPCG(seed, 0)))
	}
	for _, name := range []string{"conv1", "conv2", "fc", "cell"} {
		if c.Flags().Changed(name) {
			return nil, usagef("--%s conflicts with --init (the architecture comes from %s)", name, init)
		}
	}
	d, err := model.Load[float32](init)
	if err != nil {
		return nil, err
	}
	d.Config().Training = nil
	return d, nil
}

// robustnessFlags adds the flags of verification-friendly and certified
// training, defaulting to opt's values.
func robustnessFlags(f *pflag.FlagSet, opt *train.Options, bound *string) {
	f.Float64Var(&opt.Stability, "stability", opt.Stability, "weight of the ReLU-stability regulariser (verification-friendly training; 0: off)")
	f.Float64Var(&opt.StabilityEps, "stability-eps", opt.StabilityEps, "L∞ radius of the regulariser's interval bounds, at most the input range's width (with --stability only)")
	f.Float64Var(&opt.StabilityRamp, "stability-ramp", opt.StabilityRamp, "fraction of the steps over which the radius ramps up from 0 (with --stability only)")
	f.Float64Var(&opt.IBP, "ibp", opt.IBP, "weight of the interval-bound (certified) loss at the end of its ramp, in [0, 1] (0: off)")
	f.Float64Var(&opt.IBPEps, "ibp-eps", opt.IBPEps, "L∞ radius the certified loss trains for, at most the input range's width (with --ibp only; required with it)")
	f.Float64Var(&opt.IBPRamp, "ibp-ramp", opt.IBPRamp, "fraction of the steps over which the certified loss's weight and radius ramp up from 0 (with --ibp only)")
	f.StringVar(bound, "ibp-bound", string(model.BoundInterval), "the certified loss's bound: interval (IBP) or crown-ibp (tighter: linear bounds above fc1; rnn_relu cell only; with --ibp only)")
	f.BoolVar(&opt.IBPAttack, "ibp-attack", opt.IBPAttack, "take the cross-entropy term at a one-step attack inside the ball (MTL-IBP) instead of at the image (with --ibp only)")
}

// certifyFlags are train captioner's flags for the verifier's count after
// each epoch (experiment.CertifyProbe).
type certifyFlags struct {
	images  int
	eps     float64
	timeout time.Duration
}

func (f *certifyFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.images, "certify-images", 0, "after every epoch, verify this many test images (the first of lenspec experiment mmnist-verify's draw) with the verifier's bounds and branch and bound, and show how many it proves (0: off)")
	fs.Float64Var(&f.eps, "certify-eps", 0, "radius of --certify-images (default: --ibp-eps)")
	fs.DurationVar(&f.timeout, "certify-timeout", f.timeout, "the verifier's time limit per image of --certify-images")
}

// check refuses the flags before any work and returns the probe's radius.
func (f *certifyFlags) check(c *cobra.Command, opt train.Options, in model.InputSpec) (float64, error) {
	if f.images < 0 {
		return 0, usagef("--certify-images %d is negative", f.images)
	}
	if err := switchedBy(c, "certify-images", f.images > 0, "certify-eps", "certify-timeout"); err != nil || f.images == 0 {
		return 0, err
	}
	eps := f.eps
	if !c.Flags().Changed("certify-eps") {
		if eps = opt.IBPEps; opt.IBP == 0 {
			return 0, usagef("--certify-images needs a radius: set --certify-eps, or --ibp-eps with --ibp")
		}
	}
	if err := spec.CheckRadius(eps, in.Min, in.Max); err != nil || eps == 0 {
		return 0, usagef("--certify-eps %v: want a positive radius no wider than the input range [%v, %v]", eps, in.Min, in.Max)
	}
	if f.timeout <= 0 {
		return 0, usagef("--certify-timeout %v must be positive", f.timeout)
	}
	return eps, nil
}

// probe sets run's Probe to count the verifier's proofs on test at eps,
// and returns the status it keeps for the progress line (empty until the
// first epoch ends).
func (f *certifyFlags) probe(run *train.CaptionerRun, eps float64, test *multimnist.Dataset, seed uint64, in model.InputSpec, progress experiment.Progress) (*string, error) {
	status := new(string)
	if f.images == 0 {
		return status, nil
	}
	data, err := experiment.MultiMNIST(test, "test", seed, in)
	if err != nil {
		return nil, err
	}
	p, err := experiment.NewCertifyProbe(data, f.images, eps, f.timeout)
	if err != nil {
		return nil, usage(err)
	}
	p.Progress = progress
	run.Probe = func(ctx context.Context, _ int, d model.Decoder[float32]) (any, error) {
		n, err := p.Count(ctx, d)
		*status = " " + n.String()
		return n, err
	}
	return status, nil
}

// captionerArchFlags adds the captioner's size and cell flags.
func captionerArchFlags(f *pflag.FlagSet, arch *model.CaptionerConfig) {
	f.IntVar(&arch.Conv[0].OutChannels, "conv1", arch.Conv[0].OutChannels, "channels of the first convolution")
	f.IntVar(&arch.Conv[1].OutChannels, "conv2", arch.Conv[1].OutChannels, "channels of the second convolution")
	f.IntVar(&arch.FCHidden, "fc", arch.FCHidden, "width of the first fully connected layer")
	f.StringVar(&arch.Cell, "cell", arch.Cell, "decoder cell: rnn_relu, lstm or gru (PyTorch nn.RNNCell, nn.LSTMCell, nn.GRUCell; all verifiable)")
}

// captionerStatus is a training step's progress line.
func captionerStatus(opt train.Options, p train.Progress) string {
	msg := fmt.Sprintf("epoch %d/%d loss %.3f", p.Epoch, p.Epochs, p.Loss)
	if opt.Stability > 0 {
		msg += fmt.Sprintf(" unstable %d", p.Unstable)
	}
	if opt.IBP > 0 {
		msg += fmt.Sprintf(" certified %d/%d (%s)", p.Certified, opt.BatchSize, opt.IBPBound)
	}
	return msg
}

// switchedBy refuses flags that only mean something when the flag on turns
// their feature on, set while it is off: they would be ignored.
func switchedBy(c *cobra.Command, on string, enabled bool, flags ...string) error {
	if enabled {
		return nil
	}
	for _, f := range flags {
		if c.Flags().Changed(f) {
			return usagef("--%s is read only with --%s, which is off: set --%s, or drop --%s", f, on, on, f)
		}
	}
	return nil
}
