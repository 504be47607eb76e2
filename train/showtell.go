package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/bleu"
	"github.com/lenspec/lenspec/model"
)

// ShowTellOptions configures ShowTell: the main run's Options (ShowTell
// sets their CheckpointDir, Data and Progress) and the pipeline's own
// settings.
type ShowTellOptions struct {
	Options
	// Out is the model directory written at the end. The pretrained
	// encoder's model (Out/pretrain) and the checkpoints (Out/checkpoint,
	// Out/pretrain-checkpoint) live there until then, so a rerun resumes.
	Out string
	// PretrainEpochs trains the encoder first under a ReLU RNN decoder for
	// this many epochs (0: none), as Show-and-Tell's Inception was
	// pretrained: an LSTM that sees the image only at step −1, trained
	// from scratch, sits for epochs on the caption prior.
	PretrainEpochs int
	// Record is added to the training record in the model's config.json
	// (how the data were drawn, the command that reproduces the model).
	Record map[string]any
	// Stage, if set, hears every step of each stage: "pretrain encoder",
	// then "train".
	Stage func(stage string, p Progress)
}

// ShowTellResult is what ShowTell measured: the wall time of this run and
// the evaluation on the test source.
type ShowTellResult struct {
	Seconds float64
	Eval    Eval
	BLEU    bleu.Score
}

// ShowTell trains the Show-and-Tell captioner d on src (its encoder
// pretrained first, see ShowTellOptions), evaluates it on test (exact
// captions and BLEU-4), writes it with its training record to opt.Out and
// removes the checkpoints.
func ShowTell(ctx context.Context, d model.Decoder[float32], src, test Source[float32], opt ShowTellOptions) (ShowTellResult, error) {
	start := time.Now()
	encoder := "none"
	if opt.PretrainEpochs > 0 {
		var err error
		if encoder, err = pretrainEncoder(ctx, d, src, opt); err != nil {
			return ShowTellResult{}, err
		}
	}
	main := opt.Options
	main.CheckpointDir = filepath.Join(opt.Out, "checkpoint")
	main.Data = opt.Data + " encoder " + encoder
	main.Progress = stage(opt.Stage, "train")
	if _, err := Fit(ctx, d, src, main); err != nil {
		return ShowTellResult{}, err
	}
	res := ShowTellResult{Seconds: time.Since(start).Seconds()}
	var err error
	if res.Eval, res.BLEU, err = EvaluateWords(ctx, d, test, 0); err != nil {
		return res, err
	}
	rec := map[string]any{
		"seed": opt.Seed, "epochs": opt.Epochs, "pretrain_epochs": opt.PretrainEpochs, "batch_size": opt.BatchSize,
		"lr": opt.LR, "final_lr": opt.FinalLR, "optimizer": "adamw", "weight_decay": opt.WeightDecay, "dropout": opt.Dropout,
		"clip_norm": opt.ClipNorm, "shards": opt.Shards, "seconds_last_run": res.Seconds,
		"test_exact_caption_accuracy": res.Eval.SequenceAccuracy, "test_bleu4": res.BLEU.BLEU, "test_max_len": res.Eval.MaxLen,
	}
	for k, v := range opt.Record {
		rec[k] = v
	}
	d.Config().Training = rec
	if err := model.Save(opt.Out, d); err != nil {
		return res, err
	}
	for _, dir := range []string{main.CheckpointDir, filepath.Join(opt.Out, "pretrain")} {
		if err := os.RemoveAll(dir); err != nil {
			return res, err
		}
	}
	return res, nil
}

// stage is a Progress callback that passes a stage's steps to report.
func stage(report func(string, Progress), name string) func(Progress) {
	if report == nil {
		return nil
	}
	return func(p Progress) { report(name, p) }
}

// pretrainEncoder trains d's encoder for opt.PretrainEpochs under a ReLU
// RNN decoder (a cnn-rnn-captioner with the same encoder and sizes, saved
// to Out/pretrain so that a resumed run skips it) and copies it into d. It
// returns the pretrained model's digest, which keys the main run's
// checkpoint.
func pretrainEncoder(ctx context.Context, d model.Decoder[float32], src Source[float32], opt ShowTellOptions) (string, error) {
	dir := filepath.Join(opt.Out, "pretrain")
	st, ok := d.Config().Arch.(*model.ShowTellConfig)
	if !ok {
		return "", fmt.Errorf("pretraining an encoder: a %s is not a Show-and-Tell captioner", d.Config().Architecture)
	}
	if _, err := os.Stat(filepath.Join(dir, model.WeightsFile)); err != nil {
		cfg := model.Config{Architecture: model.ArchCaptioner, Vocab: d.Config().Vocab, EOS: d.EOS(), MaxSteps: d.MaxSteps(), DType: "float32",
			Arch: &model.CaptionerConfig{Input: st.Input, Conv: st.Conv, FCHidden: st.FCHidden, Embedding: st.Embedding, Hidden: st.Hidden, Cell: model.CellReLU}}
		pre, err := model.New[float32](&cfg, rand.New(rand.NewPCG(opt.Seed, 1)))
		if err != nil {
			return "", err
		}
		popt := opt.Options
		popt.Epochs, popt.CheckpointDir, popt.Data = opt.PretrainEpochs, dir+"-checkpoint", opt.Data+" pretrain"
		popt.Progress = stage(opt.Stage, "pretrain encoder")
		if _, err := Fit(ctx, pre, src, popt); err != nil {
			return "", err
		}
		if err := model.Save(dir, pre); err != nil {
			return "", err
		}
		if err := os.RemoveAll(popt.CheckpointDir); err != nil {
			return "", err
		}
	}
	pre, err := model.Load[float32](dir)
	if err != nil {
		return "", err
	}
	from := map[string]*ad.Param[float32]{}
	for _, p := range pre.Params() {
		from[p.Name] = p
	}
	for _, p := range d.Params() {
		if !strings.HasPrefix(p.Name, "encoder.") {
			continue
		}
		q, ok := from[p.Name]
		if !ok || len(q.W.Data) != len(p.W.Data) {
			return "", fmt.Errorf("%s: no tensor %s of %d values for the encoder", dir, p.Name, len(p.W.Data))
		}
		copy(p.W.Data, q.W.Data)
	}
	return model.Digest(dir)
}
