package nmt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/train"
)

// toySplits is a small German–English corpus built from a toy grammar,
// split as a TSV corpus is.
func toySplits(t *testing.T) *corpus.Splits {
	t.Helper()
	subj := [][2]string{{"Das Haus", "The house"}, {"Der Hund", "The dog"}, {"Die Katze", "The cat"}, {"Das Auto", "The car"}, {"Der Baum", "The tree"}}
	adj := [][2]string{{"groß", "big"}, {"klein", "small"}, {"alt", "old"}, {"neu", "new"}, {"rot", "red"}, {"schön", "nice"}}
	adv := [][2]string{{"", ""}, {"sehr ", "very "}, {"nicht ", "not "}, {"ganz ", "quite "}}
	var b strings.Builder
	for _, s := range subj {
		for _, a := range adj {
			for _, v := range adv {
				fmt.Fprintf(&b, "%s ist %s%s.\t%s is %s%s.\n", s[0], v[0], a[0], s[1], v[1], a[1])
			}
		}
	}
	path := filepath.Join(t.TempDir(), "toy.tsv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := corpus.LoadTSV(path, corpus.DefaultSplitSeed)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// toyOptions trains a small translator on sp for two epochs.
func toyOptions(t *testing.T, sp *corpus.Splits) Options {
	cfg := model.DefaultTranslatorConfig(0, bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID)
	a := cfg.Arch.(*model.TranslatorConfig)
	a.Embedding, a.EncoderHidden, a.DecoderHidden, a.Attention, a.Combine = 16, 16, 16, 16, 16
	to := train.DefaultOptions()
	to.Epochs, to.BatchSize, to.LR, to.FinalLR, to.WeightDecay, to.Dropout = 2, 16, 1e-3, 1e-4, 0, 0.2
	return Options{Out: filepath.Join(t.TempDir(), "nmt"), Corpus: sp, SplitSeed: corpus.DefaultSplitSeed, Config: cfg, Vocab: 300,
		SentenceRepeat: 1, SelectDev: true, MaxTarget: 50, Train: to, Command: "lenspec train nmt --out DIR"}
}

// TestTrain: the pipeline writes a loadable translator with its training
// record (the selected epoch's dev BLEU the best recorded), evaluates it
// as train.EvaluateTranslation does, leaves no checkpoint, and writes no
// notice for a corpus of one's own; a fine-tuning run keeps the
// tokenizer and chains the commands.
func TestTrain(t *testing.T) {
	ctx := context.Background()
	sp := toySplits(t)
	opt := toyOptions(t, sp)
	res, err := Train(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	d, err := model.Load[float32](opt.Out)
	if err != nil {
		t.Fatal(err)
	}
	tr := d.Config().Training
	byEpoch, _ := tr["dev_bleu_by_epoch"].([]any)
	if len(byEpoch) != 2 || res.SelectedEpoch < 1 || tr["command"] != opt.Command || tr["corpus"] != "tsv" {
		t.Fatalf("training record %v, selected epoch %d", tr, res.SelectedEpoch)
	}
	if best := byEpoch[res.SelectedEpoch-1].(float64); best < byEpoch[0].(float64) || best < byEpoch[1].(float64) {
		t.Fatalf("kept epoch %d of dev BLEU %v", res.SelectedEpoch, byEpoch)
	}
	ev, err := train.EvaluateTranslation(ctx, d, sp.Test, 0)
	if err != nil || ev.BLEU.BLEU != res.BLEU || tr["test_bleu"] != res.BLEU {
		t.Fatalf("test BLEU %v reported, %v recorded, %v on reload (%v)", res.BLEU, tr["test_bleu"], ev.BLEU.BLEU, err)
	}
	for _, name := range []string{"checkpoint", "LICENSE", "NOTICE"} {
		if _, err := os.Stat(filepath.Join(opt.Out, name)); err == nil {
			t.Fatalf("%s left in the model directory", name)
		}
	}

	fine := toyOptions(t, sp)
	fine.Init, fine.Vocab, fine.SelectDev, fine.SentencesOnly = opt.Out, 0, false, true
	fine.Train.Epochs, fine.Command = 1, "lenspec train nmt --init M --out DIR"
	if _, err := Train(ctx, fine); err != nil {
		t.Fatal(err)
	}
	f, err := model.Load[float32](fine.Out)
	if err != nil {
		t.Fatal(err)
	}
	if f.Config().Tokenizer.Size() != d.Config().Tokenizer.Size() {
		t.Fatal("fine-tuning changed the tokenizer")
	}
	if got := TrainingChain(f.Config().Training); !slices.Equal(got, []string{opt.Command, fine.Command}) {
		t.Fatalf("chain %v", got)
	}
}

// TestTrainRefuses: bad options are refused before any work, and a
// vocabulary below the corpus's characters is a *bpe.VocabSizeError.
func TestTrainRefuses(t *testing.T) {
	sp := toySplits(t)
	for name, edit := range map[string]func(*Options){
		"no out":           func(o *Options) { o.Out = "" },
		"no corpus":        func(o *Options) { o.Corpus = nil },
		"vocab":            func(o *Options) { o.Vocab = 10 },
		"target cap":       func(o *Options) { o.MaxTarget = 0 },
		"repeat":           func(o *Options) { o.SentenceRepeat = 0 },
		"repeat, only":     func(o *Options) { o.SentenceRepeat, o.SentencesOnly = 2, true },
		"train options":    func(o *Options) { o.Train.Epochs = 0 },
		"not translator":   func(o *Options) { o.Config = model.Config{} },
		"init not a model": func(o *Options) { o.Init = t.TempDir() },
	} {
		o := toyOptions(t, sp)
		edit(&o)
		if _, err := Train(context.Background(), o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	o := toyOptions(t, sp)
	o.Vocab = MinVocab
	var small *bpe.VocabSizeError
	if _, err := Train(context.Background(), o); !errors.As(err, &small) {
		t.Fatalf("vocabulary %d: %v, want a VocabSizeError", MinVocab, err)
	}
}

// TestWriteNotice: the Ding dictionary's models get the GPL notice,
// Multi30k's the dataset's, each with the commands that rebuild the model;
// a corpus of one's own none.
func TestWriteNotice(t *testing.T) {
	rec := map[string]any{"command": "c2", "init_training": map[string]any{"command": "c1"}}
	for format, file := range map[string]string{"ding": "LICENSE", "multi30k": "NOTICE", "tsv": ""} {
		dir := t.TempDir()
		if err := WriteNotice(dir, &corpus.Splits{Format: format, SHA256: "abc"}, rec); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(dir)
		if file == "" {
			if len(entries) != 0 {
				t.Fatalf("%s: wrote %v", format, entries)
			}
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || !strings.Contains(string(b), "c1, then\n    c2") {
			t.Fatalf("%s: %q, %v", format, b, err)
		}
	}
}

// TestDevSelection: the selection saves the weights of the best epoch
// (the first on ties), survives a restart (a resumed run repeating an
// epoch), and restores exactly those weights.
func TestDevSelection(t *testing.T) {
	sp := toySplits(t)
	tok, err := train.LearnTokenizer(context.Background(), sp.Train, 300)
	if err != nil {
		t.Fatal(err)
	}
	cfg := toyOptions(t, sp).Config
	cfg.Arch.(*model.TranslatorConfig).Vocab, cfg.Tokenizer = tok.Size(), tok
	d, err := model.New[float32](&cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "best")
	sel, err := LoadDevSelection(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := d.Params()[0].W.Data
	var kept []float32
	for epoch, bleu := range []float64{0.2, 0.3, 0.1, 0.3} {
		w[0] = float32(epoch + 1) // the weights of this epoch
		if epoch == 1 {
			kept = slices.Clone(w)
		}
		if err := sel.Record(d, epoch+1, bleu); err != nil {
			t.Fatal(err)
		}
		if epoch == 2 {
			// Killed after epoch 3's dev evaluation: the resumed run
			// repeats epoch 3 with the same weights and score.
			if sel, err = LoadDevSelection(dir); err != nil {
				t.Fatal(err)
			}
			if err := sel.Record(d, 3, bleu); err != nil {
				t.Fatal(err)
			}
		}
	}
	if sel.Epoch != 2 || !slices.Equal(sel.ByEpoch, []float64{0.2, 0.3, 0.1, 0.3}) {
		t.Fatalf("selected epoch %d of %v, want 2 of [0.2 0.3 0.1 0.3]", sel.Epoch, sel.ByEpoch)
	}
	back, err := sel.Restore(d.Config())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Params()[0].W.Data, kept) || back.Config().Tokenizer == nil {
		t.Fatal("restored weights are not the selected epoch's")
	}
}
