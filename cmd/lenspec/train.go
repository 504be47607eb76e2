package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/internal/progress"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
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
	c := &cobra.Command{
		Use:   "captioner",
		Short: "Train the Multi-MNIST CNN-RNN captioner (Adam, teacher-forced cross-entropy)",
		Long: `Train the Multi-MNIST CNN-RNN captioner and write config.json and
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
(and more epochs) gives the model time to keep its accuracy.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
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
			if err := switchedBy(c, "stability", opt.Stability > 0, "stability-eps", "stability-ramp"); err != nil {
				return err
			}
			var d model.Decoder[float32]
			var err error
			if init != "" {
				// Fine-tuning: the architecture is the initial model's.
				for _, name := range []string{"conv1", "conv2", "fc", "cell"} {
					if c.Flags().Changed(name) {
						return usagef("--%s conflicts with --init (the architecture comes from %s)", name, init)
					}
				}
				if d, err = model.Load[float32](init); err != nil {
					return err
				}
				d.Config().Training = nil
			} else {
				if err := cfg.Validate(); err != nil {
					return usage(err)
				}
				if d, err = model.New[float32](&cfg, rand.New(rand.NewPCG(opt.Seed, 0))); err != nil {
					return err
				}
			}
			in := d.Input()
			if err := experiment.CheckMultiMNIST(in); err != nil {
				return err
			}
			if err := opt.ValidateFor(d); err != nil {
				return usage(err) // the radii against the model's input range
			}
			tr, te, err := a.loadMultiMNIST(c.Context(), dataSeed)
			if err != nil {
				return err
			}
			src, err := multimnist.NewSource[float32](tr, in.Min, in.Max, shift)
			if err != nil {
				return err
			}
			ckpt := filepath.Join(out, "checkpoint")
			opt.CheckpointDir = ckpt
			rep := progress.New("train", tr.N/opt.BatchSize*opt.Epochs, a.quiet)
			opt.Progress = func(p train.Progress) {
				msg := fmt.Sprintf("epoch %d/%d loss %.3f", p.Epoch, p.Epochs, p.Loss)
				if opt.Stability > 0 {
					msg += fmt.Sprintf(" unstable %d", p.Unstable)
				}
				if opt.IBP > 0 {
					msg += fmt.Sprintf(" certified %d/%d (%s)", p.Certified, opt.BatchSize, opt.IBPBound)
				}
				rep.Set(p.Step, msg)
			}
			start := time.Now()
			loss, err := train.Fit(c.Context(), d, src, opt)
			rep.Finish()
			if err != nil {
				return err
			}
			secs := time.Since(start).Seconds()
			evalOn := func(ds *multimnist.Dataset) (train.Eval, error) {
				s, err := multimnist.NewSource[float32](ds, in.Min, in.Max, false)
				if err != nil {
					return train.Eval{}, err
				}
				return train.Evaluate(c.Context(), d, s, 0, nil)
			}
			evTest, err := evalOn(te)
			if err != nil {
				return err
			}
			evTrain, err := evalOn(tr)
			if err != nil {
				return err
			}
			cellName := d.Config().Arch.(*model.CaptionerConfig).Cell
			rec := map[string]any{
				"seed": opt.Seed, "data_seed": dataSeed, "epochs": opt.Epochs, "batch_size": opt.BatchSize,
				"lr": opt.LR, "final_lr": opt.FinalLR, "optimizer": "adamw", "weight_decay": opt.WeightDecay,
				"dropout": opt.Dropout, "shift": shift, "clip_norm": opt.ClipNorm, "shards": opt.Shards, "seconds": secs,
				"test_sequence_accuracy": evTest.SequenceAccuracy, "max_len_train": evTrain.MaxLen,
				"command": fmt.Sprintf("lenspec train captioner --out DIR --seed %d --epochs %d --cell %s --shards %d", opt.Seed, opt.Epochs, cellName, opt.Shards),
			}
			if init != "" {
				rec["init"] = init
				rec["command"] = fmt.Sprintf("%s --init %s --lr %g --final-lr %g", rec["command"], init, opt.LR, opt.FinalLR)
			}
			if opt.Stability > 0 {
				rec["stability"], rec["stability_eps"], rec["stability_ramp"] = opt.Stability, opt.StabilityEps, opt.StabilityRamp
				rec["command"] = fmt.Sprintf("%s --stability %g --stability-eps %g --stability-ramp %g", rec["command"], opt.Stability, opt.StabilityEps, opt.StabilityRamp)
			}
			if opt.IBP > 0 {
				rec["ibp"], rec["ibp_eps"], rec["ibp_ramp"] = opt.IBP, opt.IBPEps, opt.IBPRamp
				rec["command"] = fmt.Sprintf("%s --ibp %g --ibp-eps %g --ibp-ramp %g", rec["command"], opt.IBP, opt.IBPEps, opt.IBPRamp)
				if opt.IBPBound != model.BoundInterval {
					rec["ibp_bound"] = opt.IBPBound
					rec["command"] = fmt.Sprintf("%s --ibp-bound %s", rec["command"], opt.IBPBound)
				}
				if opt.IBPAttack {
					rec["ibp_attack"] = true
					rec["command"] = fmt.Sprintf("%s --ibp-attack", rec["command"])
				}
			}
			d.Config().Training = rec
			if err := model.Save(out, d); err != nil {
				return err
			}
			if err := os.RemoveAll(ckpt); err != nil {
				return err
			}
			s := trainSummary{out, opt.Seed, opt.Epochs, secs, loss, evTest.SequenceAccuracy, evTrain.MaxLen, evTrain.Unstopped}
			return a.emit(s, func(w io.Writer) {
				fmt.Fprintf(w, "trained %s in %.0fs: test sequence accuracy %.4f, longest train output %d (unstopped %d)\n",
					out, secs, s.SequenceAccuracy, s.MaxLenTrain, s.UnstoppedTrain)
			})
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
	f.Float64Var(&opt.Stability, "stability", def.Stability, "weight of the ReLU-stability regulariser (verification-friendly training; 0: off)")
	f.Float64Var(&opt.StabilityEps, "stability-eps", def.StabilityEps, "L∞ radius of the regulariser's interval bounds, at most the input range's width (with --stability only)")
	f.Float64Var(&opt.StabilityRamp, "stability-ramp", def.StabilityRamp, "fraction of the steps over which the radius ramps up from 0 (with --stability only)")
	f.Float64Var(&opt.IBP, "ibp", def.IBP, "weight of the interval-bound (certified) loss at the end of its ramp, in [0, 1] (0: off)")
	f.Float64Var(&opt.IBPEps, "ibp-eps", def.IBPEps, "L∞ radius the certified loss trains for, at most the input range's width (with --ibp only; required with it)")
	f.Float64Var(&opt.IBPRamp, "ibp-ramp", def.IBPRamp, "fraction of the steps over which the certified loss's weight and radius ramp up from 0 (with --ibp only)")
	f.StringVar(&bound, "ibp-bound", string(model.BoundInterval), "the certified loss's bound: interval (IBP) or crown-ibp (tighter: linear bounds above fc1; rnn_relu cell only; with --ibp only)")
	f.BoolVar(&opt.IBPAttack, "ibp-attack", def.IBPAttack, "take the cross-entropy term at a one-step attack inside the ball (MTL-IBP) instead of at the image (with --ibp only)")
	f.IntVar(&arch.Conv[0].OutChannels, "conv1", arch.Conv[0].OutChannels, "channels of the first convolution")
	f.IntVar(&arch.Conv[1].OutChannels, "conv2", arch.Conv[1].OutChannels, "channels of the second convolution")
	f.IntVar(&arch.FCHidden, "fc", arch.FCHidden, "width of the first fully connected layer")
	f.StringVar(&arch.Cell, "cell", arch.Cell, "decoder cell: rnn_relu, lstm or gru (PyTorch nn.RNNCell, nn.LSTMCell, nn.GRUCell; all verifiable)")
	return group("train", "Train models", c, newTrainNMTCmd(a), newTrainShowTellCmd(a))
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
