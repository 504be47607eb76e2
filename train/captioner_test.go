package train

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lenspec/lenspec/model"
)

// TestCaptioner: the model Captioner writes is the one it evaluated, with
// its training record, and its checkpoint is gone.
func TestCaptioner(t *testing.T) {
	ds := synthetic(t, 32, 9)
	d := newModel(t, model.CellReLU, 2)
	out := filepath.Join(t.TempDir(), "m")
	run := CaptionerRun{Options: Options{Seed: 2, Epochs: 1, BatchSize: 8, LR: 1e-3, Shards: 1}, Out: out, Record: map[string]any{"shift": true}}
	src, test := source[float32](t, ds, true), source[float32](t, synthetic(t, 16, 10), false)
	plain := source[float32](t, ds, false)
	res, err := Captioner(context.Background(), d, src, plain, test, run)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := model.Load[float32](out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		src  Source[float32]
		want Eval
	}{{test, res.Test}, {plain, res.Train}} {
		ev, err := Evaluate(context.Background(), saved, c.src, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ev, c.want) {
			t.Errorf("the saved model evaluates to %+v, Captioner reported %+v", ev, c.want)
		}
	}
	tr := saved.Config().Training
	if tr["shift"] != true || tr["max_len_train"] != float64(res.Train.MaxLen) || tr["command"] != "lenspec train captioner --out DIR --seed 2 --epochs 1 --cell rnn_relu --shards 1" {
		t.Errorf("training record %v", tr)
	}
	if _, err := os.Stat(filepath.Join(out, "checkpoint")); !os.IsNotExist(err) {
		t.Errorf("checkpoint left behind: %v", err)
	}
}

// TestCaptionerRecord: the recorded command names every setting that
// changed the model.
func TestCaptionerRecord(t *testing.T) {
	d := newModel(t, model.CellLSTM, 1)
	base := Options{Seed: 3, Epochs: 4, Shards: 2, LR: 0.01, FinalLR: 0.001}
	const head = "lenspec train captioner --out DIR --seed 3 --epochs 4 --cell lstm --shards 2"
	for _, c := range []struct {
		name string
		run  CaptionerRun
		want string
	}{
		{"plain", CaptionerRun{Options: base}, head},
		{"init", CaptionerRun{Options: base, Init: "models/x"}, head + " --init models/x --lr 0.01 --final-lr 0.001"},
		{"stability", CaptionerRun{Options: func() Options { o := base; o.Stability, o.StabilityEps, o.StabilityRamp = 0.1, 0.2, 0.5; return o }()},
			head + " --stability 0.1 --stability-eps 0.2 --stability-ramp 0.5"},
		{"ibp", CaptionerRun{Options: func() Options {
			o := base
			o.IBP, o.IBPEps, o.IBPRamp, o.IBPBound, o.IBPAttack = 0.5, 0.1, 0.4, model.BoundCROWNIBP, true
			return o
		}()}, head + " --ibp 0.5 --ibp-eps 0.1 --ibp-ramp 0.4 --ibp-bound crown-ibp --ibp-attack"},
	} {
		if got := captionerRecord(d, c.run)["command"]; got != c.want {
			t.Errorf("%s: command %q, want %q", c.name, got, c.want)
		}
	}
}
