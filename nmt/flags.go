package nmt

import (
	"errors"
	"fmt"
	"strings"
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
	tf := model.DefaultTransformerTranslatorConfig(0, bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID)
	return Options{Config: model.DefaultTranslatorConfig(0, bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID),
		Arch: ArchLSTM, Transformer: *tf.Arch.(*model.TransformerTranslatorConfig),
		Vocab: 8000, MaxTarget: 50, SentenceRepeat: 1, Train: opt}
}

// The architectures lenspec train nmt --arch trains.
const (
	// ArchLSTM is the attention LSTM translator (model.ArchTranslator).
	ArchLSTM = "lstm"
	// ArchTransformer is the transformer translator
	// (model.ArchTransformerTranslator).
	ArchTransformer = "transformer"
)

// lstmFlags and transformerFlags are the sizes of each architecture,
// refused with the other.
var (
	lstmFlags        = []string{"embedding", "hidden", "layers", "decoder", "attention", "combine"}
	transformerFlags = []string{"d-model", "nhead", "encoder-layers", "decoder-layers", "dim-feedforward", "activation", "norm-first"}
)

// transformerTraining is the optimisation --arch transformer starts from
// where its flags are not given: Adam from 5·10⁻⁴ down to 5·10⁻⁵ by the
// cosine schedule (pre-norm layers need no warm-up), dropout 0.1 and label
// smoothing 0.1 as in "Attention is all you need", the gradient clipped
// to norm 1.
func transformerTraining(t *train.Options, changed func(flag string) bool) {
	for _, f := range []struct {
		flag string
		v    *float64
		to   float64
	}{{"lr", &t.LR, 5e-4}, {"final-lr", &t.FinalLR, 5e-5}, {"dropout", &t.Dropout, 0.1},
		{"label-smoothing", &t.LabelSmoothing, 0.1}, {"clip-norm", &t.ClipNorm, 1}} {
		if !changed(f.flag) {
			*f.v = f.to
		}
	}
}

// initFlags are the flags whose settings a fine-tuned translator brings:
// its sizes and its tokenizer.
var initFlags = append(append([]string{"arch", "vocab"}, lstmFlags...), transformerFlags...)

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
		fs.IntVar(&arch.Embedding, "embedding", arch.Embedding, "lstm: embedding size")
		fs.IntVar(&arch.EncoderHidden, "hidden", arch.EncoderHidden, "lstm: encoder LSTM size per direction")
		fs.IntVar(&arch.EncoderLayers, "layers", arch.EncoderLayers, "lstm: encoder layers")
		fs.IntVar(&arch.DecoderHidden, "decoder", arch.DecoderHidden, "lstm: decoder LSTM size")
		fs.IntVar(&arch.Attention, "attention", arch.Attention, "lstm: attention size")
		fs.IntVar(&arch.Combine, "combine", arch.Combine, "lstm: size of the layer before the output projection")
	}
	fs.StringVar(&o.Arch, "arch", o.Arch, "architecture: lstm (bidirectional LSTM, Bahdanau attention) or transformer (torch.nn.Transformer encoder-decoder; its own defaults, also when --init is one: --lr 5e-4 --final-lr 5e-5 --dropout 0.1 --label-smoothing 0.1 --clip-norm 1)")
	tf := &o.Transformer
	fs.IntVar(&tf.DModel, "d-model", tf.DModel, "transformer: width of the embeddings and layers (d_model)")
	fs.IntVar(&tf.NHead, "nhead", tf.NHead, "transformer: attention heads, a divisor of --d-model")
	fs.IntVar(&tf.EncoderLayers, "encoder-layers", tf.EncoderLayers, "transformer: encoder layers")
	fs.IntVar(&tf.DecoderLayers, "decoder-layers", tf.DecoderLayers, "transformer: decoder layers")
	fs.IntVar(&tf.FF, "dim-feedforward", tf.FF, "transformer: width of the feed-forward blocks")
	fs.StringVar(&tf.Activation, "activation", tf.Activation, "transformer: feed-forward activation, relu or gelu")
	fs.BoolVar(&tf.NormFirst, "norm-first", tf.NormFirst, "transformer: layer normalisation before each sublayer (pre-norm); false: after (post-norm, PyTorch's default)")
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
	if o.Init != "" {
		// The model fine-tuned names the architecture, and with it the
		// optimisation defaults (a config.json that cannot be read is
		// Train's to report).
		if c, err := model.ReadConfig(o.Init); err == nil && c.Architecture == model.ArchTransformerTranslator {
			transformerTraining(&o.Train, changed)
		}
	}
	switch o.Arch {
	case ArchLSTM:
		for _, name := range transformerFlags {
			if changed(name) {
				return fmt.Errorf("--%s is a transformer setting; give --arch transformer", name)
			}
		}
	case ArchTransformer:
		for _, name := range lstmFlags {
			if changed(name) {
				return fmt.Errorf("--%s is an LSTM setting; --arch transformer is sized by --%s", name, strings.Join(transformerFlags, ", --"))
			}
		}
		if o.Init == "" {
			transformerTraining(&o.Train, changed)
			cfg := model.DefaultTransformerTranslatorConfig(0, bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID)
			tf := o.Transformer
			tf.Dropout = o.Train.Dropout
			cfg.Arch = &tf
			o.Config = cfg
		}
	default:
		return fmt.Errorf("--arch %q is neither %s nor %s", o.Arch, ArchLSTM, ArchTransformer)
	}
	if err := o.Train.Validate(); err != nil {
		return err
	}
	switch arch := o.Config.Arch.(type) {
	case *model.TranslatorConfig:
		arch.Vocab = o.Vocab
	case *model.TransformerTranslatorConfig:
		arch.Vocab = o.Vocab
	}
	return o.Config.Validate()
}
