package main

import (
	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/train"
	"github.com/spf13/cobra"
)

func newTrainCmd(a *app) *cobra.Command {
	run := train.CaptionerRun{Options: train.DefaultOptions()}
	cfg := model.DefaultCaptionerConfig()
	arch := cfg.Arch.(*model.CaptionerConfig)
	var dataSeed uint64
	shift := true
	cert := experiment.DefaultProbeSettings()
	c := &cobra.Command{
		Use:   "captioner",
		Short: "Train the Multi-MNIST CNN-RNN captioner (Adam, teacher-forced cross-entropy)",
		Long:  trainCaptionerHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := run.ValidateFlags(c.Flags().Changed); err != nil {
				return usage(err)
			}
			if err := run.ValidateModel(&cfg, c.Flags().Changed); err != nil {
				return usage(err)
			}
			d, err := run.Model(&cfg)
			if err != nil {
				return err
			}
			in := d.Input()
			if err := experiment.CheckMultiMNIST(in); err != nil {
				return err
			}
			if err := run.ValidateFor(d); err != nil {
				return usage(err) // the radii against the model's input range
			}
			certEps, err := cert.ValidateFlags(c.Flags().Changed, run.Options, in)
			if err != nil {
				return err
			}
			sources, err := a.sources()
			if err != nil {
				return err
			}
			tr, te, err := sources.MultiMNIST(c.Context(), dataSeed)
			if err != nil {
				return err
			}
			src, trainEval, test, err := experiment.CaptionerSources(tr, te, shift, in)
			if err != nil {
				return err
			}
			progress, finish := a.bars()
			defer finish()
			probed, err := attachProbe(cert, &run, te, dataSeed, in, certEps, progress)
			if err != nil {
				return err
			}
			run.Progress = func(p train.Progress) { progress("train", p.Step, p.Steps, run.Options.Status(p)+*probed) }
			run.Record = map[string]any{"data_seed": dataSeed, "shift": shift}
			res, err := train.Captioner(c.Context(), d, src, trainEval, test, run)
			finish()
			if err != nil {
				return err
			}
			sum := experiment.SummariseCaptioner(run, res)
			return a.emit(sum, sum.WriteText)
		},
	}
	f := c.Flags()
	run.RegisterFlags(f)
	f.Uint64Var(&dataSeed, "data-seed", defaultDataSeed, "Multi-MNIST generation seed")
	f.BoolVar(&shift, "shift", shift, "shift training canvases horizontally (digits stay inside; labels unchanged)")
	cert.RegisterFlags(f)
	train.RegisterCaptionerArchFlags(f, arch)
	return group("train", "Train models", c, newTrainNMTCmd(a), newTrainShowTellCmd(a))
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

// attachProbe hangs the verifier's count (--certify-images) on run, over
// the test split te (generated with seed) read in float64.
func attachProbe(cert experiment.ProbeSettings, run *train.CaptionerRun, te *multimnist.Dataset, seed uint64, in model.InputSpec, eps float64, progress experiment.Progress) (*string, error) {
	if cert.Images == 0 {
		return new(string), nil
	}
	data, err := experiment.MultiMNIST(te, "test", seed, in)
	if err != nil {
		return nil, err
	}
	return cert.Attach(run, data, eps, progress)
}
