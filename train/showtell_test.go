package train

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lenspec/lenspec/model"
)

// TestShowTell: the pipeline pretrains the encoder, then trains the whole
// model, reporting both stages; the model it writes is the one it
// evaluated, with its training record, and no checkpoint or pretrained
// model is left behind.
func TestShowTell(t *testing.T) {
	ds := synthetic(t, 32, 7)
	cap := tinyCfg(model.CellReLU).Arch.(*model.CaptionerConfig)
	cfg := model.DefaultShowTellConfig(tinyCfg(model.CellReLU).Vocab)
	cfg.Arch = &model.ShowTellConfig{Input: cap.Input, Conv: cap.Conv, FCHidden: cap.FCHidden, Embedding: cap.Embedding, Hidden: cap.Hidden}
	d, err := model.New[float32](&cfg, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m")
	var stages []string
	opt := ShowTellOptions{Options: Options{Seed: 1, Epochs: 1, BatchSize: 8, LR: 1e-3, Shards: 1}, Out: out, PretrainEpochs: 1,
		Record: map[string]any{"command": "x"},
		Stage: func(s string, p Progress) {
			if len(stages) == 0 || stages[len(stages)-1] != s {
				stages = append(stages, s)
			}
		}}
	src, test := source[float32](t, ds, false), source[float32](t, synthetic(t, 16, 8), false)
	res, err := ShowTell(context.Background(), d, src, test, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stages, []string{"pretrain encoder", "train"}) {
		t.Errorf("stages %v", stages)
	}
	saved, err := model.Load[float32](out)
	if err != nil {
		t.Fatal(err)
	}
	ev, score, err := EvaluateWords(context.Background(), saved, test, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ev, res.Eval) || score != res.BLEU {
		t.Errorf("the saved model evaluates to %+v %v, ShowTell reported %+v %v", ev, score, res.Eval, res.BLEU)
	}
	tr := saved.Config().Training
	if tr["command"] != "x" || tr["pretrain_epochs"] != float64(1) || tr["test_bleu4"] != res.BLEU.BLEU {
		t.Errorf("training record %v", tr)
	}
	for _, dir := range []string{"checkpoint", "pretrain", "pretrain-checkpoint"} {
		if _, err := os.Stat(filepath.Join(out, dir)); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", dir, err)
		}
	}
	// Two runs with the same settings write the same model.
	d2, err := model.New[float32](&cfg, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	opt.Out = filepath.Join(t.TempDir(), "m2")
	if _, err := ShowTell(context.Background(), d2, src, test, opt); err != nil {
		t.Fatal(err)
	}
	for i, p := range d2.Params() {
		if !reflect.DeepEqual(p.W.Data, saved.Params()[i].W.Data) {
			t.Fatalf("%s differs between two runs of the same settings", p.Name)
		}
	}
}
