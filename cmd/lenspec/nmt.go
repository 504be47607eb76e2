package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nmt"
	"github.com/lenspec/lenspec/train"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// corpusFlags select the parallel corpus a translator trains and is
// evaluated on: a registered corpus (corpus.Sources) or a TSV file.
type corpusFlags struct {
	// name is --corpus: a registered corpus or a TSV file; "" is the
	// corpus the model was trained on (forModel), else Ding.
	name string
	// paths holds each registered corpus's location flag.
	paths map[string]*string
	seed  uint64
}

// defaultCorpus is the corpus of a translator trained without --corpus.
const defaultCorpus = "ding"

// corpusFlagNames are the flags corpusFlags adds.
func corpusFlagNames() []string {
	names := []string{"corpus", "split-seed"}
	for _, s := range corpus.Sources() {
		names = append(names, s.LocationFlag)
	}
	return names
}

func (f *corpusFlags) add(c *cobra.Command) {
	var names []string
	f.paths = map[string]*string{}
	for _, s := range corpus.Sources() {
		names = append(names, fmt.Sprintf("%q (%s)", s.Name, s.Help))
		f.paths[s.Name] = c.Flags().String(s.LocationFlag, "", fmt.Sprintf("%s: %s", s.Name, s.Location))
	}
	c.Flags().StringVar(&f.name, "corpus", "", strings.Join(names, ", ")+` or a corpus of your own: a file of "source<TAB>target" lines (default: the model's own corpus; for training, `+defaultCorpus+`)`)
	c.Flags().Uint64Var(&f.seed, "split-seed", corpus.DefaultSplitSeed, "seed of the train/dev/test split (Ding and TSV corpora; Multi30k's splits are its own)")
}

// forModel fills in what the command line left open from how the model
// at dir was trained: its corpus and split seed.
func (f corpusFlags) forModel(c *cobra.Command, dir string, d model.Decoder[float32]) (corpusFlags, error) {
	tr := d.Config().Training
	if rec, ok := tr["split_seed"].(float64); ok && !c.Flags().Changed("split-seed") {
		f.seed = uint64(rec)
	}
	if f.name == "" {
		rec, _ := tr["corpus"].(string)
		if rec == "tsv" {
			return f, usagef("%s was trained on a corpus of its own: name it with --corpus", dir)
		}
		if _, ok := corpus.Lookup(rec); ok {
			f.name = rec
		}
	}
	return f, nil
}

func (f *corpusFlags) load() (*corpus.Splits, error) {
	name, path := f.name, ""
	if name == "" {
		name = defaultCorpus
	}
	if p := f.paths[name]; p != nil {
		path = *p
	}
	return corpus.Load(name, path, f.seed)
}

type nmtSummary struct {
	Out          string  `json:"out"`
	Seconds      float64 `json:"seconds"`
	FinalLoss    float64 `json:"final_loss"`
	BLEU         float64 `json:"bleu"`
	BaselineBLEU float64 `json:"baseline_bleu"`
	MaxLenDev    int     `json:"max_len_dev"`
	UnstoppedDev int     `json:"unstopped_dev"`
}

// trainNMTHelp is the command's long help.
const trainNMTHelp = `Train the paper's third model, an attention sequence-to-sequence translator,
on the Ding German-English dictionary that Debian ships (trans-de-en; its
sentences and multi-word phrases, split into train/dev/test by a seeded hash
of the source) or on --corpus FILE.tsv, and write config.json,
model.safetensors, vocab.json and merges.txt (the BPE tokenizer learnt on the
training split) to --out. The defaults build models/nmt-de-en.

Training targets longer than --max-target tokens are left out (the paper caps
them at 50). A checkpoint is written every --checkpoint-every and after every
epoch; rerunning the same command resumes from it, also after kill -9. At the
end the model is evaluated: BLEU on the test split against a word-by-word
dictionary baseline, and the greedy output lengths on the dev split. A model
trained on the Ding dictionary is GPL-2.0-or-later: --out receives a LICENSE
notice saying so.`

// checkTrainNMT refuses train nmt's flags that make no sense, alone or
// together, before any work.
func checkTrainNMT(c *cobra.Command, initDir string, vocab, maxTarget, sentenceRepeat int, every time.Duration, sentencesOnly bool) error {
	if initDir != "" {
		for _, name := range []string{"vocab", "embedding", "hidden", "layers", "decoder", "attention", "combine"} {
			if c.Flags().Changed(name) {
				return usagef("--%s conflicts with --init (the sizes and the tokenizer come from %s)", name, initDir)
			}
		}
	}
	if vocab < nmt.MinVocab || vocab > 1<<16 {
		return usagef("--vocab %d must be in %d..65536 (the special and byte tokens, and the corpus's characters)", vocab, nmt.MinVocab)
	}
	if maxTarget < 1 || maxTarget > model.MaxStepCap {
		return usagef("--max-target %d must be in 1..%d", maxTarget, model.MaxStepCap)
	}
	if every < 0 {
		return usagef("--checkpoint-every %v must not be negative", every)
	}
	if sentenceRepeat < 1 || sentenceRepeat > 100 {
		return usagef("--sentence-repeat %d must be in 1..100", sentenceRepeat)
	}
	if sentenceRepeat > 1 && sentencesOnly {
		return usagef("--sentence-repeat oversamples the sentences among the phrases; with --sentences-only there are none (use --epochs)")
	}
	return nil
}

// vocabUsage is err, or the usage error it is when the corpus has more
// characters than --vocab leaves room for (known only once the corpus is
// read).
func vocabUsage(err error, vocab int, path string) error {
	var small *bpe.VocabSizeError
	if errors.As(err, &small) {
		return usagef("--vocab %d is below the %d tokens %s needs (4 special, 256 byte and %d character tokens): give --vocab %d or more",
			vocab, small.Need(), path, small.Alphabet, small.Need())
	}
	return err
}

// translatorFlags adds the translator's size flags.
func translatorFlags(f *pflag.FlagSet, arch *model.TranslatorConfig) {
	f.IntVar(&arch.Embedding, "embedding", arch.Embedding, "embedding size")
	f.IntVar(&arch.EncoderHidden, "hidden", arch.EncoderHidden, "encoder LSTM size per direction")
	f.IntVar(&arch.EncoderLayers, "layers", arch.EncoderLayers, "encoder layers")
	f.IntVar(&arch.DecoderHidden, "decoder", arch.DecoderHidden, "decoder LSTM size")
	f.IntVar(&arch.Attention, "attention", arch.Attention, "attention size")
	f.IntVar(&arch.Combine, "combine", arch.Combine, "size of the layer before the output projection")
}

func newTrainNMTCmd(a *app) *cobra.Command {
	def := train.DefaultOptions()
	opt := def
	opt.Epochs, opt.BatchSize, opt.LR, opt.FinalLR, opt.WeightDecay, opt.Dropout, opt.Shards = 8, 128, 1e-3, 1e-4, 0, 0.2, 2
	cfg := model.DefaultTranslatorConfig(0, bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID)
	arch := cfg.Arch.(*model.TranslatorConfig)
	var out, initDir string
	var sentencesOnly bool
	sentenceRepeat := 1
	var selectDev bool
	var cf corpusFlags
	vocab, maxTarget := 8000, 50
	every := 2 * time.Minute
	c := &cobra.Command{
		Use:   "nmt",
		Short: "Train the German→English attention translator (BPE, bidirectional LSTM, Bahdanau attention)",
		Long:  trainNMTHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if out == "" {
				return usagef("--out is required")
			}
			if err := checkTrainNMT(c, initDir, vocab, maxTarget, sentenceRepeat, every, sentencesOnly); err != nil {
				return err
			}
			if err := opt.Validate(); err != nil {
				return usage(err)
			}
			arch.Vocab = vocab // for validation; the tokenizer may come out smaller
			if err := cfg.Validate(); err != nil {
				return usage(err)
			}
			a.logf("reading the corpus...")
			sp, err := cf.load()
			if err != nil {
				return err
			}
			a.logf("%s: %d training, %d dev, %d test pairs", sp.Path, len(sp.Train), len(sp.Dev), len(sp.Test))
			opt.CheckpointEvery = every
			progress, finish := a.bars()
			var rate train.TokenRate
			opt.Progress = func(p train.Progress) {
				progress("train nmt", p.Step, p.Steps, fmt.Sprintf("epoch %d/%d loss %.3f, %.0f target tokens/s", p.Epoch, p.Epochs, p.Loss, rate.Add(p)))
			}
			res, err := nmt.Train(c.Context(), nmt.Options{Out: out, Corpus: sp, SplitSeed: cf.seed, Config: cfg, Vocab: vocab, Init: initDir,
				SentencesOnly: sentencesOnly, SentenceRepeat: sentenceRepeat, SelectDev: selectDev, MaxTarget: maxTarget, Train: opt,
				Command: rebuildCommand(c.Flags()), Logf: a.logf})
			finish()
			if err != nil {
				return vocabUsage(err, vocab, sp.Path)
			}
			s := nmtSummary{out, res.Seconds, res.FinalLoss, res.BLEU, res.BaselineBLEU, res.MaxLenDev, res.UnstoppedDev}
			return a.emit(s, func(w io.Writer) {
				fmt.Fprintf(w, "trained %s in %.0fs: test BLEU %.2f (dictionary baseline %.2f); dev: longest output %d tokens, %d unstopped\n",
					out, s.Seconds, s.BLEU, s.BaselineBLEU, s.MaxLenDev, s.UnstoppedDev)
			})
		},
	}
	f := c.Flags()
	f.StringVar(&out, "out", "", "output model directory")
	f.StringVar(&initDir, "init", "", "fine-tune this translator (its sizes and tokenizer) instead of training from scratch")
	f.BoolVar(&sentencesOnly, "sentences-only", false, "train on the sentence pairs only, not the dictionary's phrases")
	f.BoolVar(&selectDev, "select-dev", false, "evaluate dev BLEU after every epoch and keep the weights of the best epoch")
	f.IntVar(&sentenceRepeat, "sentence-repeat", sentenceRepeat, "show each sentence pair this many times per epoch, the phrases once (oversampling the sentences, which the dev and test splits hold)")
	cf.add(c)
	f.Uint64Var(&opt.Seed, "seed", def.Seed, "seed for initialisation, shuffling and dropout")
	f.IntVar(&opt.Epochs, "epochs", opt.Epochs, "passes over the training pairs")
	f.IntVar(&opt.BatchSize, "batch", opt.BatchSize, "batch size (sentence pairs, bucketed by length)")
	opt.RegisterOptimiserFlags(f)
	f.Float64Var(&opt.Dropout, "dropout", opt.Dropout, "dropout on embeddings, between encoder layers and before the output layer")
	f.Float64Var(&opt.LabelSmoothing, "label-smoothing", opt.LabelSmoothing, "move this much of each target token's probability to the uniform distribution in the loss")
	f.IntVar(&vocab, "vocab", vocab, "BPE vocabulary size (shared by German and English), up to 65536: at least 260 (special and byte tokens) plus the training split's characters (Multi30k 355, Ding 367)")
	f.IntVar(&maxTarget, "max-target", maxTarget, "leave out training pairs whose target is longer (tokens)")
	f.DurationVar(&every, "checkpoint-every", every, "also checkpoint within an epoch this often (0: after every epoch only)")
	translatorFlags(f, arch)
	return c
}

// evalTranslator is lenspec eval for a translator: BLEU on a split of its
// corpus against the dictionary baseline, and the clean output lengths on
// the dev split.
func evalTranslator(c *cobra.Command, a *app, modelDir string, d model.Decoder[float32], split string, cf corpusFlags, maxSteps, examples int) error {
	if examples < 0 {
		return usagef("--examples %d must be non-negative", examples)
	}
	cf, err := cf.forModel(c, modelDir, d)
	if err != nil {
		return err
	}
	sp, err := cf.load()
	if err != nil {
		return err
	}
	if split != "test" && split != "dev" {
		return usagef("--split %q: a translator is evaluated on test or dev", split)
	}
	ev, err := nmt.Evaluate(c.Context(), modelDir, d, sp, split, maxSteps, examples)
	if err != nil {
		return err
	}
	return a.emit(ev, func(w io.Writer) {
		fmt.Fprintf(w, "%s on %s (%d sentences): %s; dictionary baseline BLEU %.2f\n", modelDir, split, ev.Samples, ev.Score, ev.BaselineBLEU)
		fmt.Fprintf(w, "%s: longest greedy output %d tokens, %d unstopped, largest output/source ratio %.2f, %d outputs over 3× their source\n", split, ev.MaxLen, ev.Unstopped, ev.MaxRatio, ev.OverRatio3)
		fmt.Fprintf(w, "dev: longest greedy output %d tokens, %d of %d unstopped\n", ev.MaxLenDev, ev.UnstoppedDev, ev.DevSamples)
		if len(ev.Examples) > 0 {
			// A Markdown table: it pastes into a report as it is.
			fmt.Fprintf(w, "\n| # | source | reference | output |\n|---|---|---|---|\n")
			cell := strings.NewReplacer("|", "\\|", "\n", " ")
			for i, e := range ev.Examples {
				fmt.Fprintf(w, "| %d | %s | %s | %s |\n", i+1, cell.Replace(e.Source), cell.Replace(e.Reference), cell.Replace(e.Output))
			}
		}
	})
}

// rebuildCommand is the training command as given, with every flag set on
// the command line except where the output goes and how it is reported:
// what config.json records so that a model says how to rebuild it.
func rebuildCommand(fs *pflag.FlagSet) string {
	var b strings.Builder
	b.WriteString("lenspec train nmt --out DIR")
	fs.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "out", "json", "quiet", "blas-threads", "checkpoint-every":
			return
		}
		if f.Value.Type() == "bool" {
			if f.Value.String() == "true" {
				fmt.Fprintf(&b, " --%s", f.Name)
			}
			return
		}
		fmt.Fprintf(&b, " --%s %s", f.Name, f.Value.String())
	})
	return b.String()
}
