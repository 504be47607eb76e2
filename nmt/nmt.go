// Package nmt is the translator's training pipeline, which lenspec train
// nmt runs: the BPE tokenizer learnt on the training split (or a
// translator's own, when fine-tuning), training with checkpoints that a
// rerun resumes from, the choice of the epoch with the best dev BLEU,
// evaluation against the word-by-word dictionary baseline, and the model
// directory with its training record and the notice its corpus asks for.
package nmt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/train"
)

// MinVocab is the smallest vocabulary a tokenizer can have: the 4 special
// and 256 byte tokens and one character. How many characters a corpus
// needs is known once it is read (bpe.VocabSizeError).
const MinVocab = 261

// Options configures Train.
type Options struct {
	// Out is the model directory written; its checkpoint/ subdirectory
	// holds the checkpoints a rerun resumes from, removed at the end.
	Out string
	// Corpus is the parallel corpus; SplitSeed the seed its splits were
	// drawn with (recorded).
	Corpus    *corpus.Splits
	SplitSeed uint64
	// Config is the architecture of a model trained from scratch (its
	// vocabulary comes from the tokenizer); Vocab the BPE vocabulary size.
	Config model.Config
	Vocab  int
	// Arch is the architecture --arch names (ArchLSTM, ArchTransformer);
	// Transformer the transformer's sizes, which ValidateFlags makes Config
	// for ArchTransformer.
	Arch        string
	Transformer model.TransformerTranslatorConfig
	// Init, if set, is a translator's directory to fine-tune instead: its
	// sizes and tokenizer are kept.
	Init string
	// SentencesOnly trains on the corpus's sentence pairs only (not the
	// dictionary's phrases); SentenceRepeat (≥ 1) shows each sentence pair
	// that many times per epoch, the phrases once.
	SentencesOnly  bool
	SentenceRepeat int
	// SelectDev evaluates dev BLEU after every epoch and keeps the weights
	// of the best epoch.
	SelectDev bool
	// MaxTarget leaves out training pairs whose target has more tokens.
	MaxTarget int
	// Train is the optimisation; its Data, CheckpointDir and EpochEnd are
	// set by Train.
	Train train.Options
	// Command is the command that rebuilds the model, recorded in its
	// config.json and notice.
	Command string
	// Logf, if set, receives progress messages.
	Logf func(format string, args ...any)
}

// Validate checks the options before any work.
func (o Options) Validate() error {
	var errs []error
	if o.Out == "" {
		errs = append(errs, errors.New("no output directory"))
	}
	if o.Corpus == nil {
		errs = append(errs, errors.New("no corpus"))
	}
	if o.Init == "" && (o.Vocab < MinVocab || o.Vocab > 1<<16) {
		errs = append(errs, fmt.Errorf("vocabulary %d must be in %d..65536 (the special and byte tokens, and the corpus's characters)", o.Vocab, MinVocab))
	}
	if o.MaxTarget < 1 || o.MaxTarget > model.MaxStepCap {
		errs = append(errs, fmt.Errorf("target cap %d must be in 1..%d", o.MaxTarget, model.MaxStepCap))
	}
	if o.SentenceRepeat < 1 || o.SentenceRepeat > 100 {
		errs = append(errs, fmt.Errorf("sentence repeat %d must be in 1..100", o.SentenceRepeat))
	}
	if o.SentenceRepeat > 1 && o.SentencesOnly {
		errs = append(errs, errors.New("sentence repeat oversamples the sentences among the phrases; trained on sentences only there are none"))
	}
	if err := o.Train.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Result is what Train made.
type Result struct {
	Model model.Decoder[float32]
	// Seconds is the training time, FinalLoss the last epoch's loss.
	Seconds, FinalLoss float64
	// BLEU is the test split's, BaselineBLEU the word-by-word
	// dictionary baseline's on it.
	BLEU, BaselineBLEU float64
	// MaxLenDev and UnstoppedDev are the longest greedy output on the dev
	// split and how many did not stop.
	MaxLenDev, UnstoppedDev int
	// SelectedEpoch is the epoch kept (SelectDev), else 0.
	SelectedEpoch int
}

// Train trains, evaluates and writes a translator to opt.Out. A rerun of
// the same options after an interruption resumes from the last
// checkpoint. A tokenizer too small for the corpus's characters is a
// *bpe.VocabSizeError.
func Train(ctx context.Context, opt Options) (*Result, error) {
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("nmt: %w", err)
	}
	logf := opt.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	start := time.Now()
	sp := opt.Corpus
	trainPairs := sp.Train
	if opt.SentencesOnly {
		trainPairs = nil
		for _, p := range sp.Train {
			if corpus.IsSentence(p) {
				trainPairs = append(trainPairs, p)
			}
		}
		logf("training on the %d sentence pairs only", len(trainPairs))
	}
	d, initDigest, initTraining, err := startingModel(ctx, opt, trainPairs, logf)
	if err != nil {
		return nil, err
	}
	tok := d.Config().Tokenizer
	trainPairs = oversample(trainPairs, opt.SentenceRepeat, logf)
	src, tgt, dropped := train.EncodePairs(tok, trainPairs, d.Input().MaxLen, opt.MaxTarget)
	logf("BPE vocabulary of %d tokens; %d training pairs (%d over the length caps left out)", tok.Size(), len(src), dropped)
	tokDigest, err := TokenizerDigest(tok)
	if err != nil {
		return nil, err
	}
	to := opt.Train
	to.Data = fmt.Sprintf("%s sha256 %s split-seed %d tokenizer %s max-target %d init %q sentences-only %v", sp.Format, sp.SHA256, opt.SplitSeed, tokDigest, opt.MaxTarget, initDigest, opt.SentencesOnly)
	if opt.SentenceRepeat > 1 {
		to.Data += fmt.Sprintf(" sentence-repeat %d", opt.SentenceRepeat)
	}
	to.CheckpointDir = filepath.Join(opt.Out, "checkpoint")
	var sel *DevSelection
	if opt.SelectDev {
		if sel, err = LoadDevSelection(filepath.Join(to.CheckpointDir, "best")); err != nil {
			return nil, err
		}
		to.EpochEnd = func(epoch int) error {
			ev, err := train.EvaluateTranslation(ctx, d, sp.Dev, 0)
			if err != nil {
				return err
			}
			logf("epoch %d: dev BLEU %.2f", epoch, ev.BLEU.BLEU)
			return sel.Record(d, epoch, ev.BLEU.BLEU)
		}
	}
	loss, err := train.Fit(ctx, d, train.NewTokenPairs(src, tgt), to)
	if err != nil {
		return nil, err
	}
	res := &Result{FinalLoss: loss}
	if sel != nil {
		res.SelectedEpoch = sel.Epoch
		if sel.Epoch < to.Epochs {
			logf("keeping epoch %d's weights (dev BLEU %.2f)", sel.Epoch, sel.BLEU)
			if d, err = sel.Restore(d.Config()); err != nil {
				return nil, err
			}
		}
	}
	res.Model, res.Seconds = d, time.Since(start).Seconds()
	logf("evaluating...")
	evTest, err := train.EvaluateTranslation(ctx, d, sp.Test, 0)
	if err != nil {
		return nil, err
	}
	evDev, err := train.EvaluateTranslation(ctx, d, sp.Dev, 0)
	if err != nil {
		return nil, err
	}
	base, err := train.BaselineBLEU(sp.Train, sp.Test)
	if err != nil {
		return nil, err
	}
	res.BLEU, res.BaselineBLEU, res.MaxLenDev, res.UnstoppedDev = evTest.BLEU.BLEU, base.BLEU, evDev.MaxLen, evDev.Unstopped
	tr := map[string]any{
		"command": opt.Command, "corpus": sp.Format, "corpus_sha256": sp.SHA256, "split_seed": opt.SplitSeed,
		"train_pairs": len(src), "dev_pairs": len(sp.Dev), "test_pairs": len(sp.Test), "left_out_over_caps": dropped,
		"max_target_len": opt.MaxTarget, "seed": to.Seed, "epochs": to.Epochs, "batch_size": to.BatchSize,
		"lr": to.LR, "final_lr": to.FinalLR, "dropout": to.Dropout, "label_smoothing": to.LabelSmoothing, "clip_norm": to.ClipNorm, "shards": to.Shards,
		"optimizer": "adam", "seconds": res.Seconds, "final_loss": loss, "sentences_only": opt.SentencesOnly, "sentence_repeat": opt.SentenceRepeat,
		"test_bleu": evTest.BLEU.BLEU, "test_bleu_detail": evTest.BLEU.String(), "baseline_test_bleu": base.BLEU,
		"max_len_dev": evDev.MaxLen, "unstopped_dev": evDev.Unstopped,
	}
	if sel != nil {
		tr["selected_epoch"], tr["dev_bleu_by_epoch"] = sel.Epoch, sel.ByEpoch
	}
	if opt.Init != "" {
		tr["init"], tr["init_sha256"], tr["init_training"] = opt.Init, initDigest, initTraining
	}
	d.Config().Training = tr
	if err := model.Save(opt.Out, d); err != nil {
		return nil, err
	}
	if err := WriteNotice(opt.Out, sp, tr); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(to.CheckpointDir); err != nil {
		return nil, err
	}
	return res, nil
}

// startingModel is the model training starts from: opt.Init's (with its
// digest and training record), or a new one with a tokenizer learnt on
// pairs.
func startingModel(ctx context.Context, opt Options, pairs []corpus.Pair, logf func(string, ...any)) (d model.Decoder[float32], initDigest string, initTraining map[string]any, err error) {
	if opt.Init != "" {
		if d, err = model.Load[float32](opt.Init); err != nil {
			return nil, "", nil, err
		}
		if a := d.Config().Architecture; (a != model.ArchTranslator && a != model.ArchTransformerTranslator) || d.Config().Tokenizer == nil {
			return nil, "", nil, fmt.Errorf("%s: fine-tuning needs a translator, not a %s", opt.Init, d.Config().Architecture)
		}
		if initDigest, err = model.Digest(opt.Init); err != nil {
			return nil, "", nil, err
		}
		logf("fine-tuning %s (BPE vocabulary of %d tokens)", opt.Init, d.Config().Tokenizer.Size())
		return d, initDigest, d.Config().Training, nil
	}
	tok, err := train.LearnTokenizer(ctx, pairs, opt.Vocab)
	if err != nil {
		return nil, "", nil, err
	}
	cfg := opt.Config
	switch arch := cfg.Arch.(type) {
	case *model.TranslatorConfig:
		a := *arch
		a.Vocab, cfg.Arch = tok.Size(), &a
	case *model.TransformerTranslatorConfig:
		a := *arch
		a.Vocab, cfg.Arch = tok.Size(), &a
	default:
		return nil, "", nil, fmt.Errorf("nmt: a %T architecture is not a translator", cfg.Arch)
	}
	cfg.Tokenizer = tok
	d, err = model.New[float32](&cfg, rand.New(rand.NewPCG(opt.Train.Seed, 0)))
	return d, "", nil, err
}

// oversample repeats each sentence pair n−1 more times (after the
// tokenizer is learnt, so that BPE counts each pair once).
func oversample(pairs []corpus.Pair, n int, logf func(string, ...any)) []corpus.Pair {
	if n <= 1 {
		return pairs
	}
	out := pairs
	for _, p := range pairs {
		if corpus.IsSentence(p) {
			for range n - 1 {
				out = append(out, p)
			}
		}
	}
	logf("each sentence pair %d times: %d training pairs", n, len(out))
	return out
}

// TokenizerDigest names a tokenizer by the sha256 of its files (the first
// 8 bytes, hex), as model.Digest names a model directory.
func TokenizerDigest(tok *bpe.Tokenizer) (string, error) {
	dir, err := os.MkdirTemp("", "lenspec-tok-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := tok.Save(dir); err != nil {
		return "", err
	}
	var all []byte
	for _, name := range []string{bpe.VocabFile, bpe.MergesFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", err
		}
		all = append(append(all, name...), b...)
	}
	sum := sha256.Sum256(all)
	return hex.EncodeToString(sum[:8]), nil
}

// TrainingChain lists the commands that made a translator, oldest first,
// following the training records of the models it was fine-tuned from.
func TrainingChain(training map[string]any) []string {
	var chain []string
	for tr := training; tr != nil; {
		chain = append([]string{fmt.Sprint(tr["command"])}, chain...)
		tr, _ = tr["init_training"].(map[string]any)
	}
	return chain
}
