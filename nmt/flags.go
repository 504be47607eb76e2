package nmt

import (
	"errors"
	"fmt"
	"time"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/train"
	"github.com/spf13/pflag"
)

// DefaultOptions are lenspec train nmt's defaults, the recipe of
// models/nmt-de-en: the paper's translator sizes (model.DefaultTranslatorConfig),
// a BPE vocabulary of 8,000, targets capped at 50 tokens, 8 epochs of 128
// pairs with a cosine schedule from 10⁻³ to 10⁻⁴ and dropout 0.2, and a
// checkpoint every 2 minutes. Out and Corpus are left to the caller.
func DefaultOptions() Options {
	opt := train.DefaultOptions()
	opt.Epochs, opt.BatchSize, opt.LR, opt.FinalLR, opt.WeightDecay, opt.Dropout, opt.Shards = 8, 128, 1e-3, 1e-4, 0, 0.2, 2
	opt.CheckpointEvery = 2 * time.Minute
	return Options{Config: model.DefaultTranslatorConfig(0, bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID),
		Vocab: 8000, MaxTarget: 50, SentenceRepeat: 1, Train: opt}
}

// initFlags are the flags whose settings a fine-tuned translator brings:
// its sizes and its tokenizer.
var initFlags = []string{"vocab", "embedding", "hidden", "layers", "decoder", "attention", "combine"}

// RegisterFlags adds o's settings to fs as the flags of lenspec train nmt,
// each starting at o's value (DefaultOptions for the CLI's): the output,
// fine-tuning, the training data's selection, the optimisation and the
// translator's sizes. The corpus is the caller's to read. ValidateFlags
// checks them, its errors naming these flags.
func (o *Options) RegisterFlags(fs *pflag.FlagSet) {
	t := &o.Train
	fs.StringVar(&o.Out, "out", o.Out, "output model directory")
	fs.StringVar(&o.Init, "init", o.Init, "fine-tune this translator (its sizes and tokenizer) instead of training from scratch")
	fs.BoolVar(&o.SentencesOnly, "sentences-only", o.SentencesOnly, "train on the sentence pairs only, not the dictionary's phrases")
	fs.BoolVar(&o.SelectDev, "select-dev", o.SelectDev, "evaluate dev BLEU after every epoch and keep the weights of the best epoch")
	fs.IntVar(&o.SentenceRepeat, "sentence-repeat", o.SentenceRepeat, "show each sentence pair this many times per epoch, the phrases once (oversampling the sentences, which the dev and test splits hold)")
	fs.Uint64Var(&t.Seed, "seed", t.Seed, "seed for initialisation, shuffling and dropout")
	fs.IntVar(&t.Epochs, "epochs", t.Epochs, "passes over the training pairs")
	fs.IntVar(&t.BatchSize, "batch", t.BatchSize, "batch size (sentence pairs, bucketed by length)")
	t.RegisterOptimiserFlags(fs)
	fs.Float64Var(&t.Dropout, "dropout", t.Dropout, "dropout on embeddings, between encoder layers and before the output layer")
	fs.Float64Var(&t.LabelSmoothing, "label-smoothing", t.LabelSmoothing, "move this much of each target token's probability to the uniform distribution in the loss")
	fs.IntVar(&o.Vocab, "vocab", o.Vocab, "BPE vocabulary size (shared by German and English), up to 65536: at least 260 (special and byte tokens) plus the training split's characters (Multi30k 355, Ding 367)")
	fs.IntVar(&o.MaxTarget, "max-target", o.MaxTarget, "leave out training pairs whose target is longer (tokens)")
	fs.DurationVar(&t.CheckpointEvery, "checkpoint-every", t.CheckpointEvery, "also checkpoint within an epoch this often (0: after every epoch only)")
	if arch, ok := o.Config.Arch.(*model.TranslatorConfig); ok {
		fs.IntVar(&arch.Embedding, "embedding", arch.Embedding, "embedding size")
		fs.IntVar(&arch.EncoderHidden, "hidden", arch.EncoderHidden, "encoder LSTM size per direction")
		fs.IntVar(&arch.EncoderLayers, "layers", arch.EncoderLayers, "encoder layers")
		fs.IntVar(&arch.DecoderHidden, "decoder", arch.DecoderHidden, "decoder LSTM size")
		fs.IntVar(&arch.Attention, "attention", arch.Attention, "attention size")
		fs.IntVar(&arch.Combine, "combine", arch.Combine, "size of the layer before the output projection")
	}
}

// ValidateFlags checks options set by RegisterFlags before any work,
// naming the flags: a size given with --init (which brings its own), each
// setting's range, settings that contradict each other, then the
// optimisation (train.Options.Validate) and the architecture with the
// vocabulary asked for (the tokenizer may come out smaller). changed
// reports which flags were given.
func (o *Options) ValidateFlags(changed func(flag string) bool) error {
	if o.Out == "" {
		return errors.New("--out is required")
	}
	if o.Init != "" {
		for _, name := range initFlags {
			if changed(name) {
				return fmt.Errorf("--%s conflicts with --init (the sizes and the tokenizer come from %s)", name, o.Init)
			}
		}
	}
	switch {
	case o.Vocab < MinVocab || o.Vocab > 1<<16:
		return fmt.Errorf("--vocab %d must be in %d..65536 (the special and byte tokens, and the corpus's characters)", o.Vocab, MinVocab)
	case o.MaxTarget < 1 || o.MaxTarget > model.MaxStepCap:
		return fmt.Errorf("--max-target %d must be in 1..%d", o.MaxTarget, model.MaxStepCap)
	case o.Train.CheckpointEvery < 0:
		return fmt.Errorf("--checkpoint-every %v must not be negative", o.Train.CheckpointEvery)
	case o.SentenceRepeat < 1 || o.SentenceRepeat > 100:
		return fmt.Errorf("--sentence-repeat %d must be in 1..100", o.SentenceRepeat)
	case o.SentenceRepeat > 1 && o.SentencesOnly:
		return errors.New("--sentence-repeat oversamples the sentences among the phrases; with --sentences-only there are none (use --epochs)")
	}
	if err := o.Train.Validate(); err != nil {
		return err
	}
	if arch, ok := o.Config.Arch.(*model.TranslatorConfig); ok {
		arch.Vocab = o.Vocab
	}
	return o.Config.Validate()
}
