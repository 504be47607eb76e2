package main

import (
	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/train"
	"github.com/spf13/cobra"
)

func newTrainCmd(a *app) *cobra.Command {
	t := experiment.NewCaptionerTraining()
	c := &cobra.Command{
		Use:   "captioner",
		Short: "Train the Multi-MNIST CNN-RNN captioner (Adam, teacher-forced cross-entropy)",
		Long:  trainCaptionerHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			progress, finish := a.bars()
			defer finish()
			sum, err := t.Train(c.Context(), a.env(c), train.RebuildCommand("lenspec train captioner", c.Flags()), progress)
			finish()
			return a.report(sum, err)
		},
	}
	t.RegisterFlags(c.Flags())
	return group("train", "Train models", c, newTrainNMTCmd(a), newTrainShowTellCmd(a), newTrainAverageCmd(a))
}

// trainCaptionerHelp is lenspec train captioner's long help.
const trainCaptionerHelp = `Train the Multi-MNIST CNN-RNN captioner and write config.json and
model.safetensors to --out. A checkpoint is written to --out after every epoch;
rerunning the same command resumes from it (a checkpoint written with other
settings is refused). The defaults reproduce models/mmnist-rnn;
models/mmnist-rnn-rs records its command in its config.json.

--cell lstm trains the LSTM captioner (PyTorch nn.LSTMCell) instead of the
ReLU RNN, --cell gru the GRU captioner (nn.GRUCell); lenspec verify takes all
three (models/mmnist-lstm records its recipe). --arch transformer trains the
CNN-transformer captioner instead (cnn-transformer-captioner: the last
convolution's feature map is the memory of a torch.nn.TransformerDecoder;
--d-model, --nhead, --num-decoder-layers, --dim-feedforward, --activation,
--norm-first and --memory-positions size it, --dropout is its dropout;
models/mmnist-transformer records its recipe); lenspec verify does not take
it. --stability adds the ReLU-stability regulariser (Xiao et al., ICLR
2019): verification-friendly training, with fewer unstable ReLUs for the
verifier. --ibp trains for a radius (interval bound propagation, Gowal et
al. 2018): the loss mixes in the interval bound of the teacher-forced loss
over the ball of radius --ibp-eps around each image, so that the label's
decoding becomes provable there; the progress line counts the batch's
images so certified. --ibp-bound crown-ibp bounds the loss more tightly
(CROWN-IBP: linear bound propagation through fc1's ReLU, fc2 and the unrolled
decoder on top of the intervals), and the count is taken on that bound;
--ibp-attack trains the cross-entropy term at a one-step attack inside the
ball instead of at the image itself (MTL-IBP); --ibp-sabr λ takes the
certified loss over a box of radius λ·--ibp-eps around such an attack point,
inside the ball, instead of over the whole ball (SABR), and the count is then
the small boxes'. --distill-from DIR mixes a more accurate teacher's
distributions into the cross-entropy term (knowledge distillation: --distill
is their weight, --distill-temp the temperature; --distill-hard-eos keeps the
label alone where it is eos, whose margin the verifier proves). --ibp-ramp is the fraction of
the run over which the certified loss's weight and radius grow: a longer ramp
(and more epochs) gives the model time to keep its accuracy.

The count on the certified loss's bound is far below what the verifier proves
(0 of 64 where lenspec verify proves 95 of 100). --certify-images N shows the
verifier's own count after every epoch: the first N test images of lenspec
experiment mmnist-verify's draw, verified at --certify-eps (default --ibp-eps)
with its bounds and branch and bound, --certify-timeout an image, without the
MIP solver or the falsifiers; the model's training record keeps the last
count.`

func newTrainAverageCmd(a *app) *cobra.Command {
	var avg experiment.Averaging
	c := &cobra.Command{
		Use:   "average --out DIR [--weights w1,w2,...] MODEL MODEL...",
		Short: "Average the weights of models of one configuration (fine-tunes of one model) into a new model",
		Long: `Average the weights of two models or more of one architecture and configuration
(config.json equal but for its training record) into --out: each weight is
the weighted mean of the models' (--weights, normalised to sum to 1; default
equal). Between fine-tunes of one model this moves along the path between
them — weight averaging, or "model soups" (Wortsman et al. 2022) — and trades
what each was trained for, a certified model's verifiability against a
distilled fine-tune's accuracy, without another training run. Models trained
from different starting points share no such path: evaluate the average
(lenspec eval) before using it. The new model's config.json names every input
by directory, model_sha256 and weight. --out must be new or empty. Exit status
2 for bad settings (weights, --out), 1 for a model that cannot be loaded or
does not match the others.`,
		RunE: func(c *cobra.Command, args []string) error {
			avg.Models = args
			return a.report(avg.Average())
		},
	}
	avg.RegisterFlags(c.Flags())
	return c
}
