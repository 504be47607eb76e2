package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/internal/progress"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/train"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// corpusFlags select the parallel corpus a translator trains and is
// evaluated on.
type corpusFlags struct {
	// name is --corpus: "ding", "multi30k" or a TSV file; "" is the
	// corpus the model was trained on (forModel), else Ding.
	name     string
	ding     string
	multi30k string
	seed     uint64
}

func (f *corpusFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.name, "corpus", "", `"multi30k" (Multi30k task 1, imported by lenspec data multi30k), "ding" (the Ding dictionary) or a corpus of your own: a file of "source<TAB>target" lines (default: the model's own corpus; for training, ding)`)
	c.Flags().StringVar(&f.ding, "ding", corpus.DingPath, "the Ding dictionary (Debian's trans-de-en, pinned by sha256)")
	c.Flags().StringVar(&f.multi30k, "multi30k-dir", "", "where lenspec data multi30k put Multi30k (default: $LENSPEC_DATA/multi30k or the user cache dir)")
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
		switch rec, _ := tr["corpus"].(string); rec {
		case "tsv":
			return f, usagef("%s was trained on a corpus of its own: name it with --corpus", dir)
		case "multi30k":
			f.name = rec
		}
	}
	return f, nil
}

func (f *corpusFlags) load() (*corpus.Splits, error) {
	switch f.name {
	case "", "ding":
		return corpus.LoadDing(f.ding, f.seed)
	case "multi30k":
		dir := f.multi30k
		if dir == "" {
			var err error
			if dir, err = corpus.DefaultMulti30kDir(); err != nil {
				return nil, err
			}
		}
		return corpus.LoadMulti30k(dir)
	}
	return corpus.LoadTSV(f.name, f.seed)
}

// nmtLicense is the notice a model directory trained on the Ding
// dictionary carries: its weights and vocabulary derive from GPL-2+ text.
const nmtLicense = `This model directory (config.json, model.safetensors, vocab.json,
merges.txt) was derived by training on the German-English dictionary
"Ding" by Frank Richter (https://dict.tu-chemnitz.de/), as shipped by
Debian in the package %s (/usr/share/trans/de-en, sha256 %s),
which is licensed under the GNU General Public License, version 2 or later.

This model directory is therefore distributed under the GNU General Public
License, version 2 or (at your option) any later version (SPDX:
GPL-2.0-or-later), separately from the code of lenspec (MIT). The source of
this work is the dictionary named above together with lenspec's code; the
exact command that rebuilds it on Debian 12 is:

    %s

You should have received a copy of the GNU General Public License along
with this model; see /usr/share/common-licenses/GPL-2 on Debian, or
<https://www.gnu.org/licenses/>.
`

// multi30kNotice is the notice a model directory trained on Multi30k
// carries: where its weights and vocabulary come from, and that none of
// the dataset's text is in it.
const multi30kNotice = `This model directory (config.json, model.safetensors, vocab.json,
merges.txt) was trained by lenspec on Multi30k task 1 German-English
(train split, 29,000 sentence pairs; val for model selection):

    Desmond Elliott, Stella Frank, Khalil Sima'an and Lucia Specia.
    Multi30K: Multilingual English-German Image Descriptions.
    Proceedings of the 5th Workshop on Vision and Language, 2016.
    https://github.com/multi30k/dataset (data/task1/raw/)

The raw files it was trained on are pinned by sha256 (their sha256sum
listing hashes to %s).
The dataset states no licence. No sentence of it is in this directory:
the weights and the BPE vocabulary (sub-word units and their merges) are
learnt from it. Cite the dataset's authors when you use this model.

The exact command that rebuilds it on Debian 12, given a copy of the raw
files (lenspec data multi30k --from DIR imports them first):

    %s
`

type nmtSummary struct {
	Out          string  `json:"out"`
	Seconds      float64 `json:"seconds"`
	FinalLoss    float64 `json:"final_loss"`
	BLEU         float64 `json:"bleu"`
	BaselineBLEU float64 `json:"baseline_bleu"`
	MaxLenDev    int     `json:"max_len_dev"`
	UnstoppedDev int     `json:"unstopped_dev"`
}

// minVocab is the smallest --vocab checked before the corpus is read: the
// 4 special and 256 byte tokens and one character. How many characters a
// corpus has is known once it is read.
const minVocab = 261

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
		Long: `Train the paper's third model, an attention sequence-to-sequence translator,
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
notice saying so.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if out == "" {
				return usagef("--out is required")
			}
			if initDir != "" {
				for _, name := range []string{"vocab", "embedding", "hidden", "layers", "decoder", "attention", "combine"} {
					if c.Flags().Changed(name) {
						return usagef("--%s conflicts with --init (the sizes and the tokenizer come from %s)", name, initDir)
					}
				}
			}
			if vocab < minVocab || vocab > 1<<16 {
				return usagef("--vocab %d must be in %d..65536 (the special and byte tokens, and the corpus's characters)", vocab, minVocab)
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
			if err := opt.Validate(); err != nil {
				return usage(err)
			}
			arch.Vocab = vocab // for validation; the tokenizer may come out smaller
			if err := cfg.Validate(); err != nil {
				return usage(err)
			}
			start := time.Now()
			a.logf("reading the corpus...")
			sp, err := cf.load()
			if err != nil {
				return err
			}
			a.logf("%s: %d training, %d dev, %d test pairs", sp.Path, len(sp.Train), len(sp.Dev), len(sp.Test))
			trainPairs := sp.Train
			if sentencesOnly {
				trainPairs = nil
				for _, p := range sp.Train {
					if corpus.IsSentence(p) {
						trainPairs = append(trainPairs, p)
					}
				}
				a.logf("training on the %d sentence pairs only", len(trainPairs))
			}
			var d model.Decoder[float32]
			var tok *bpe.Tokenizer
			initDigest := ""
			var initTraining map[string]any // how the model fine-tuned was trained
			if initDir != "" {
				// Fine-tuning: the model's own sizes and tokenizer.
				if d, err = model.Load[float32](initDir); err != nil {
					return err
				}
				if d.Config().Architecture != model.ArchTranslator || d.Config().Tokenizer == nil {
					return fmt.Errorf("%s: --init needs a translator, not a %s", initDir, d.Config().Architecture)
				}
				if initDigest, err = model.Digest(initDir); err != nil {
					return err
				}
				tok, initTraining = d.Config().Tokenizer, d.Config().Training
				a.logf("fine-tuning %s (BPE vocabulary of %d tokens)", initDir, tok.Size())
			} else {
				if tok, err = train.LearnTokenizer(c.Context(), trainPairs, vocab); err != nil {
					var small *bpe.VocabSizeError
					if errors.As(err, &small) {
						// Known only once the corpus is read: its characters.
						return usagef("--vocab %d is below the %d tokens %s needs (4 special, 256 byte and %d character tokens): give --vocab %d or more",
							vocab, small.Need(), sp.Path, small.Alphabet, small.Need())
					}
					return err
				}
				arch.Vocab = tok.Size()
				cfg.Tokenizer = tok
				if d, err = model.New[float32](&cfg, rand.New(rand.NewPCG(opt.Seed, 0))); err != nil {
					return err
				}
			}
			if sentenceRepeat > 1 {
				// Oversampling after the tokenizer is learnt, so that BPE
				// counts each pair once.
				n := len(trainPairs)
				for _, p := range trainPairs[:n] {
					if corpus.IsSentence(p) {
						for range sentenceRepeat - 1 {
							trainPairs = append(trainPairs, p)
						}
					}
				}
				a.logf("each sentence pair %d times: %d training pairs", sentenceRepeat, len(trainPairs))
			}
			src, tgt, dropped := train.EncodePairs(tok, trainPairs, d.Config().Arch.(*model.TranslatorConfig).MaxSourceLen, maxTarget)
			a.logf("BPE vocabulary of %d tokens; %d training pairs (%d over the length caps left out)", tok.Size(), len(src), dropped)
			tokDigest, err := tokenizerDigest(tok)
			if err != nil {
				return err
			}
			opt.Data = fmt.Sprintf("%s sha256 %s split-seed %d tokenizer %s max-target %d init %q sentences-only %v", sp.Format, sp.SHA256, cf.seed, tokDigest, maxTarget, initDigest, sentencesOnly)
			if sentenceRepeat > 1 {
				opt.Data += fmt.Sprintf(" sentence-repeat %d", sentenceRepeat)
			}
			opt.CheckpointDir, opt.CheckpointEvery = filepath.Join(out, "checkpoint"), every
			pairs := train.NewTokenPairs(src, tgt)
			steps := pairs.Len() / opt.BatchSize * opt.Epochs
			rep := progress.New("train nmt", steps, a.quiet)
			var window []train.Progress // the last steps, for tokens/s
			opt.Progress = func(p train.Progress) {
				window = append(window, p)
				if len(window) > 50 {
					window = window[1:]
				}
				rate := 0.0
				if n := len(window); n > 1 {
					toks := 0
					for _, w := range window[1:] {
						toks += w.Tokens
					}
					rate = float64(toks) / (window[n-1].Elapsed - window[0].Elapsed).Seconds()
				}
				rep.Set(p.Step, fmt.Sprintf("epoch %d/%d loss %.3f, %.0f target tokens/s", p.Epoch, p.Epochs, p.Loss, rate))
			}
			var sel *devSelection
			if selectDev {
				if sel, err = loadDevSelection(filepath.Join(opt.CheckpointDir, "best")); err != nil {
					return err
				}
				opt.EpochEnd = func(epoch int) error {
					ev, err := train.EvaluateTranslation(c.Context(), d, sp.Dev, 0)
					if err != nil {
						return err
					}
					a.logf("epoch %d: dev BLEU %.2f", epoch, ev.BLEU.BLEU)
					return sel.record(d, epoch, ev.BLEU.BLEU)
				}
			}
			loss, err := train.Fit(c.Context(), d, pairs, opt)
			rep.Finish()
			if err != nil {
				return err
			}
			if sel != nil && sel.Epoch < opt.Epochs {
				a.logf("keeping epoch %d's weights (dev BLEU %.2f)", sel.Epoch, sel.BLEU)
				if d, err = sel.restore(d.Config()); err != nil {
					return err
				}
			}
			trained := time.Since(start).Seconds()
			a.logf("evaluating...")
			evTest, err := train.EvaluateTranslation(c.Context(), d, sp.Test, 0)
			if err != nil {
				return err
			}
			evDev, err := train.EvaluateTranslation(c.Context(), d, sp.Dev, 0)
			if err != nil {
				return err
			}
			base, err := train.BaselineBLEU(sp.Train, sp.Test)
			if err != nil {
				return err
			}
			command := rebuildCommand(c.Flags())
			d.Config().Training = map[string]any{
				"command": command, "corpus": sp.Format, "corpus_sha256": sp.SHA256, "split_seed": cf.seed,
				"train_pairs": len(src), "dev_pairs": len(sp.Dev), "test_pairs": len(sp.Test), "left_out_over_caps": dropped,
				"max_target_len": maxTarget, "seed": opt.Seed, "epochs": opt.Epochs, "batch_size": opt.BatchSize,
				"lr": opt.LR, "final_lr": opt.FinalLR, "dropout": opt.Dropout, "label_smoothing": opt.LabelSmoothing, "clip_norm": opt.ClipNorm, "shards": opt.Shards,
				"optimizer": "adam", "seconds": trained, "final_loss": loss, "sentences_only": sentencesOnly, "sentence_repeat": sentenceRepeat,
				"test_bleu": evTest.BLEU.BLEU, "test_bleu_detail": evTest.BLEU.String(), "baseline_test_bleu": base.BLEU,
				"max_len_dev": evDev.MaxLen, "unstopped_dev": evDev.Unstopped,
			}
			if sel != nil {
				tr := d.Config().Training
				tr["selected_epoch"], tr["dev_bleu_by_epoch"] = sel.Epoch, sel.ByEpoch
			}
			if initDir != "" {
				tr := d.Config().Training
				tr["init"], tr["init_sha256"], tr["init_training"] = initDir, initDigest, initTraining
			}
			if err := model.Save(out, d); err != nil {
				return err
			}
			if sp.Format == "ding" {
				// A fine-tuned model: the commands that made its starting
				// point, oldest first, then this one.
				rebuild := strings.Join(trainingChain(d.Config().Training), ", then\n    ")
				notice := fmt.Sprintf(nmtLicense, corpus.DingPackage, sp.SHA256, rebuild)
				if err := fileio.WriteFileAtomic(filepath.Join(out, "LICENSE"), []byte(notice)); err != nil {
					return err
				}
			}
			if sp.Format == "multi30k" {
				rebuild := strings.Join(trainingChain(d.Config().Training), ", then\n    ")
				notice := fmt.Sprintf(multi30kNotice, corpus.Multi30kSHA256, rebuild)
				if err := fileio.WriteFileAtomic(filepath.Join(out, "NOTICE"), []byte(notice)); err != nil {
					return err
				}
			}
			if err := os.RemoveAll(opt.CheckpointDir); err != nil {
				return err
			}
			s := nmtSummary{out, trained, loss, evTest.BLEU.BLEU, base.BLEU, evDev.MaxLen, evDev.Unstopped}
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
	f.Float64Var(&opt.LR, "lr", opt.LR, "Adam learning rate")
	f.Float64Var(&opt.FinalLR, "final-lr", opt.FinalLR, "learning rate at the end of the cosine schedule (0: constant)")
	f.Float64Var(&opt.Dropout, "dropout", opt.Dropout, "dropout on embeddings, between encoder layers and before the output layer")
	f.Float64Var(&opt.LabelSmoothing, "label-smoothing", opt.LabelSmoothing, "move this much of each target token's probability to the uniform distribution in the loss")
	f.Float64Var(&opt.ClipNorm, "clip-norm", opt.ClipNorm, "clip the gradient's global L2 norm (0: off)")
	f.IntVar(&opt.Shards, "shards", opt.Shards, "split each batch into this many shards computed concurrently (the result depends on it, not on the cores)")
	f.IntVar(&vocab, "vocab", vocab, "BPE vocabulary size (shared by German and English), up to 65536: at least 260 (special and byte tokens) plus the training split's characters (Multi30k 355, Ding 367)")
	f.IntVar(&maxTarget, "max-target", maxTarget, "leave out training pairs whose target is longer (tokens)")
	f.DurationVar(&every, "checkpoint-every", every, "also checkpoint within an epoch this often (0: after every epoch only)")
	f.IntVar(&arch.Embedding, "embedding", arch.Embedding, "embedding size")
	f.IntVar(&arch.EncoderHidden, "hidden", arch.EncoderHidden, "encoder LSTM size per direction")
	f.IntVar(&arch.EncoderLayers, "layers", arch.EncoderLayers, "encoder layers")
	f.IntVar(&arch.DecoderHidden, "decoder", arch.DecoderHidden, "decoder LSTM size")
	f.IntVar(&arch.Attention, "attention", arch.Attention, "attention size")
	f.IntVar(&arch.Combine, "combine", arch.Combine, "size of the layer before the output projection")
	return c
}

// tokenizerDigest names a tokenizer by the sha256 of its files.
func tokenizerDigest(tok *bpe.Tokenizer) (string, error) {
	dir, err := os.MkdirTemp("", "lenspec-tok-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := tok.Save(dir); err != nil {
		return "", err
	}
	// The files' digest, as model.Digest computes over a model directory.
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

// evalTranslator is lenspec eval for a translator: BLEU on a split of its
// corpus against the dictionary baseline, and the clean output lengths on
// the dev split.
func evalTranslator(c *cobra.Command, a *app, modelDir string, d model.Decoder[float32], split string, cf corpusFlags, maxSteps, examples int) error {
	ctx := c.Context()
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
	var pairs []corpus.Pair
	switch split {
	case "test":
		pairs = sp.Test
	case "dev":
		pairs = sp.Dev
	default:
		return usagef("--split %q: a translator is evaluated on test or dev", split)
	}
	ev, err := train.EvaluateTranslation(ctx, d, pairs, maxSteps)
	if err != nil {
		return err
	}
	dev := ev
	if split != "dev" {
		if dev, err = train.EvaluateTranslation(ctx, d, sp.Dev, maxSteps); err != nil {
			return err
		}
	}
	base, err := train.BaselineBLEU(sp.Train, pairs)
	if err != nil {
		return err
	}
	type example struct {
		Source    string `json:"source"`
		Reference string `json:"reference"`
		Output    string `json:"output"`
		Length    int    `json:"length"`
	}
	var shown []example
	for i := 0; i < min(examples, len(pairs)); i++ {
		o := ev.Outputs[i]
		shown = append(shown, example{pairs[i].Src, pairs[i].Tgt, o.Text, len(o.IDs)})
	}
	out := struct {
		Model        string    `json:"model"`
		Split        string    `json:"split"`
		BLEU         float64   `json:"bleu"`
		Detail       string    `json:"bleu_detail"`
		BaselineBLEU float64   `json:"baseline_bleu"`
		Samples      int       `json:"samples"`
		Unstopped    int       `json:"unstopped"`
		MaxRatio     float64   `json:"max_length_ratio"`
		OverRatio3   int       `json:"over_3x_source"`
		MaxLenDev    int       `json:"max_len_dev"`
		UnstoppedDev int       `json:"unstopped_dev"`
		LengthsDev   []int     `json:"length_histogram_dev"`
		MaxLen       int       `json:"max_len"`
		Examples     []example `json:"examples,omitempty"`
	}{modelDir, split, ev.BLEU.BLEU, ev.BLEU.String(), base.BLEU, ev.Samples, ev.Unstopped, ev.MaxRatio, ev.OverRatio3, dev.MaxLen, dev.Unstopped, dev.Lengths, ev.MaxLen, shown}
	return a.emit(out, func(w io.Writer) {
		fmt.Fprintf(w, "%s on %s (%d sentences): %s; dictionary baseline BLEU %.2f\n", modelDir, split, out.Samples, ev.BLEU, base.BLEU)
		fmt.Fprintf(w, "%s: longest greedy output %d tokens, %d unstopped, largest output/source ratio %.2f, %d outputs over 3× their source\n", split, ev.MaxLen, ev.Unstopped, ev.MaxRatio, ev.OverRatio3)
		fmt.Fprintf(w, "dev: longest greedy output %d tokens, %d of %d unstopped\n", dev.MaxLen, dev.Unstopped, dev.Samples)
		if len(shown) > 0 {
			// A Markdown table: it pastes into a report as it is.
			fmt.Fprintf(w, "\n| # | source | reference | output |\n|---|---|---|---|\n")
			cell := strings.NewReplacer("|", "\\|", "\n", " ")
			for i, e := range shown {
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

// devSelection keeps the weights of the epoch with the best dev BLEU in
// dir (a model directory inside the checkpoint), with the scores so far in
// dir/selection.json, so that a resumed run selects as an uninterrupted
// one would.
type devSelection struct {
	dir     string
	Epoch   int       `json:"epoch"`
	BLEU    float64   `json:"dev_bleu"`
	ByEpoch []float64 `json:"dev_bleu_by_epoch"`
}

func loadDevSelection(dir string) (*devSelection, error) {
	s := &devSelection{dir: dir}
	raw, err := os.ReadFile(filepath.Join(dir, "selection.json"))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "selection.json"), err)
	}
	return s, nil
}

// record notes epoch's dev BLEU and saves d if it is the best so far (the
// first epoch wins ties). A repeated epoch (a resumed run) replaces its
// score.
func (s *devSelection) record(d model.Decoder[float32], epoch int, bleu float64) error {
	s.ByEpoch = append(s.ByEpoch[:min(len(s.ByEpoch), epoch-1)], bleu)
	if s.Epoch == 0 || bleu > s.BLEU || s.Epoch == epoch {
		if err := model.Save(s.dir, d); err != nil {
			return err
		}
		s.Epoch, s.BLEU = epoch, bleu
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return fileio.WriteFileAtomic(filepath.Join(s.dir, "selection.json"), raw)
}

// restore loads the selected weights, keeping cfg (with its tokenizer).
func (s *devSelection) restore(cfg *model.Config) (model.Decoder[float32], error) {
	d, err := model.Load[float32](s.dir)
	if err != nil {
		return nil, err
	}
	*d.Config() = *cfg
	return d, nil
}

// trainingChain lists the commands that made a translator, oldest first,
// following the training records of the models it was fine-tuned from.
func trainingChain(training map[string]any) []string {
	var chain []string
	for tr := training; tr != nil; {
		chain = append([]string{fmt.Sprint(tr["command"])}, chain...)
		tr, _ = tr["init_training"].(map[string]any)
	}
	return chain
}
