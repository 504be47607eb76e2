package main

import (
	"context"
	"fmt"
	"io"

	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/train"
	"github.com/spf13/cobra"
)

// captionsDataHelp is the command's long help.
const captionsDataHelp = `Build the captions data set (MNIST digits and Fashion-MNIST articles on
56×112 canvases, captioned by a small grammar; docs/models.md) and write the
first --count canvases of --split to --out: NAME.png, the canvas enlarged
--scale times (lenspec decode --image reads it), and NAME-caption.png, the
same with its caption printed under it, and with --model the model's greedy
caption too. --histogram prints the split's caption-length histogram; without
--out, only that. --count is at most the split's canvases (50,000 train,
10,000 test). Fashion-MNIST comes from Debian's dataset-fashion-mnist (make setup
installs it; --fashion-dir points elsewhere).`

func newCaptionsDataCmd(a *app) *cobra.Command {
	var p experiment.CaptionPreviewing
	c := &cobra.Command{
		Use:   "captions",
		Short: "Write canvases of the word-captioning data set as PNG files with their captions (and a model's, with --model)",
		Long:  captionsDataHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return a.report(p.Write(c.Context(), a.env(c)))
		},
	}
	p.RegisterFlags(c.Flags())
	return c
}

// trainShowTellHelp is the command's long help.
const trainShowTellHelp = `Train the Show-and-Tell stand-in (docs/models.md: a strided-convolution
encoder whose image embedding is the LSTM's input at step −1, word embeddings,
PyTorch's nn.LSTMCell, a linear output) on the captions data set with Adam and
the teacher-forced cross-entropy, and write config.json and model.safetensors
to --out.

As Show-and-Tell's Inception was pretrained, the encoder is first trained for
--pretrain-epochs under a ReLU RNN decoder (a cnn-rnn-captioner with the same
encoder, kept in --out/pretrain until the end): trained from scratch, an LSTM
that sees the image only at step −1 sits for epochs on the caption prior
before it uses the image (docs/models.md).

Checkpoints go to --out/checkpoint (and --out/checkpoint-pretrain) every
--checkpoint-every and after every epoch; rerunning the same command resumes
(a checkpoint written with other settings is refused). Prints the
exact-caption accuracy and BLEU-4 on the test split. The defaults reproduce
models/showtell-lstm; --lengths flat, models/showtell-lstm-flat.`

func newTrainShowTellCmd(a *app) *cobra.Command {
	t := experiment.NewShowTellTraining()
	c := &cobra.Command{
		Use:   "showtell",
		Short: "Train the Show-and-Tell captioner (CNN encoder, LSTM decoder) on the captions data set",
		Long:  trainShowTellHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			progress, finish := a.bars()
			sum, err := t.Train(c.Context(), a.env(c), train.RebuildCommand("lenspec train showtell", c.Flags()), progress)
			finish()
			return a.report(sum, err)
		},
	}
	t.RegisterFlags(c.Flags())
	return c
}

// captionModelData is the data an image captioner's experiments run on:
// the captions data set for a model reading its canvases, Multi-MNIST
// otherwise.
func (a *app) captionModelData(ctx context.Context, m *experiment.Model, seed uint64) (experiment.Data, error) {
	src, err := a.sources()
	if err != nil {
		return experiment.Data{}, err
	}
	return src.ImageData(ctx, m.D32.Input(), seed, "test")
}

// captionAttackHelp is the command's long help.
const captionAttackHelp = `For each --model (an image captioner: the Show-and-Tell models on the captions
data set, the Multi-MNIST captioners on Multi-MNIST), attack --images random
test images at every δ of --eps with random search (--samples uniform samples
per image) and PGD on the paper's proxy J̃ and on the eos log-probability
(--losses; --steps Adam iterations at --lr from --restarts starts, the first
the image itself), step cap --max-steps. K̂ is each image's original output
length. Records go to OUT/NAME/attacks.jsonl (NAME: the model directory's
base name) as they are produced; rerunning resumes. Then, per model, the
output-length figure and table (OUT/NAME/), and OUT/comparison.md with
every model's rows side by side: lengthened %, mean length ratio, longest
output, and how many outputs pass --cap (the training cap, 20); every
lengthened output's witness is decoded again in float64 and counted in
"witnesses replayed". --summary-only skips the attacks and summarises the
records there are.`

func newCaptionAttackCmd(a *app) *cobra.Command {
	var e experiment.CaptionExperiment
	var dataSeed uint64
	c := &cobra.Command{
		Use:   "caption-attack",
		Short: "The paper's Show-and-Tell experiment: random search and PGD (both losses) at δ = 0.5 on word and digit captioners, table and figures",
		Long:  captionAttackHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := e.Validate(); err != nil {
				return err
			}
			progress, finish := a.bars()
			defer finish()
			e.Progress, e.Logf = progress, a.logf
			e.Data = func(ctx context.Context, m *experiment.Model) (experiment.Data, error) {
				return a.captionModelData(ctx, m, dataSeed)
			}
			rows, table, err := e.Run(c.Context())
			finish()
			return a.summary(rows, func(w io.Writer) { fmt.Fprint(w, table) }, err)
		},
	}
	e.RegisterFlags(c.Flags())
	c.Flags().Uint64Var(&dataSeed, "data-seed", defaultDataSeed, "data generation seed")
	return c
}

// gatesHelp is the command's long help.
const gatesHelp = `Decode inputs greedily in float64 and measure, at every step, the fraction of
the LSTM's gate pre-activations (i, f, g, o) with |z| > --threshold, and,
where the output stops, the margin by which eos beat the runner-up at the
step it was emitted (and its probability): the paper's explanation of why
Show-and-Tell resists lengthening (§5.2: saturated sigmoid gates, a strong
bias to short outputs). Clean paths: --images random test images (or
--index, or --input files); attacked paths: the witnesses of the lengthened
outputs recorded in --attacks results files (this model's records only).`

func newGatesCmd(a *app) *cobra.Command {
	var s experiment.GateSettings
	c := &cobra.Command{
		Use:   "gates",
		Short: "Measure an LSTM decoder's gate saturation and end-of-caption eos margin along clean and attacked decoding paths",
		Long:  gatesHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return a.report(s.Measure(c.Context(), a.env(c)))
		},
	}
	s.RegisterFlags(c.Flags())
	return c
}
