package train

import (
	"context"
	"maps"
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
	run := CaptionerRun{Options: Options{Seed: 2, Epochs: 1, BatchSize: 8, LR: 1e-3, Shards: 1}, Out: out, Record: map[string]any{"shift": true, "command": "c"}}
	src, test := source[float32](t, ds, true), source[float32](t, synthetic(t, 16, 10), false)
	plain := source[float32](t, ds, false)
	res, saved := captionerAndLoad(t, d, src, plain, test, run)
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
	if tr["shift"] != true || tr["max_len_train"] != float64(res.Train.MaxLen) || tr["command"] != "c" || tr["lr"] != 1e-3 {
		t.Errorf("training record %v", tr)
	}
	if _, err := os.Stat(filepath.Join(out, "checkpoint")); !os.IsNotExist(err) {
		t.Errorf("checkpoint left behind: %v", err)
	}
}

// captionerAndLoad runs Captioner and loads the model it wrote.
func captionerAndLoad(t *testing.T, d model.Decoder[float32], src, plain, test Source[float32], run CaptionerRun) (CaptionerResult, model.Decoder[float32]) {
	t.Helper()
	res, err := Captioner(context.Background(), d, src, plain, test, run)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := model.Load[float32](run.Out)
	if err != nil {
		t.Fatal(err)
	}
	return res, saved
}

// TestCaptionerRecord: the training record keeps the settings of every
// feature the run used, and only those.
func TestCaptionerRecord(t *testing.T) {
	d := newModel(t, model.CellLSTM, 1)
	base := Options{Seed: 3, Epochs: 4, Shards: 2, LR: 0.01, FinalLR: 0.001}
	plain := map[string]any{"seed": uint64(3), "epochs": 4, "batch_size": 0, "lr": 0.01, "final_lr": 0.001, "optimizer": "adamw",
		"weight_decay": 0.0, "dropout": 0.0, "clip_norm": 0.0, "shards": 2, "command": "c"}
	with := func(kv ...any) map[string]any {
		m := maps.Clone(plain)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, c := range []struct {
		name string
		run  CaptionerRun
		want map[string]any
	}{
		{"plain", CaptionerRun{Options: base}, plain},
		{"init", CaptionerRun{Options: base, Init: "models/x"}, with("init", "models/x")},
		{"stability", CaptionerRun{Options: func() Options { o := base; o.Stability, o.StabilityEps, o.StabilityRamp = 0.1, 0.2, 0.5; return o }()},
			with("stability", 0.1, "stability_eps", 0.2, "stability_ramp", 0.5)},
		{"ibp", CaptionerRun{Options: func() Options {
			o := base
			o.IBP, o.IBPEps, o.IBPRamp, o.IBPBound, o.IBPAttack = 0.5, 0.1, 0.4, model.BoundCROWNIBP, true
			return o
		}()}, with("ibp", 0.5, "ibp_eps", 0.1, "ibp_ramp", 0.4, "ibp_bound", model.BoundCROWNIBP, "ibp_attack", true)},
		{"sabr", CaptionerRun{Options: func() Options {
			o := base
			o.IBP, o.IBPEps, o.SABR = 0.5, 0.1, 0.3
			return o
		}()}, with("ibp", 0.5, "ibp_eps", 0.1, "ibp_ramp", 0.0, "ibp_sabr", 0.3)},
		{"distill, eos hard", CaptionerRun{DistillFrom: "models/t", Options: func() Options {
			o := base
			o.Teacher, o.TeacherID, o.Distill, o.DistillTemp, o.DistillHardEOS = d, "abc", 0.5, 4, true
			return o
		}()}, with("distill_from", "models/t", "distill", 0.5, "distill_temp", 4.0, "teacher_sha256", "abc", "distill_hard_eos", true)},
		{"teacher at weight 0", CaptionerRun{DistillFrom: "models/t", Options: func() Options {
			o := base
			o.Teacher, o.TeacherID, o.DistillTemp = d, "abc", 2
			return o
		}()}, plain},
	} {
		c.run.Record = map[string]any{"command": "c"}
		if got := captionerRecord(c.run); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: record %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCaptionerProbe: the probe measures the model after every epoch, with
// that epoch's weights, and the last measurement reaches the result and
// the training record — also when a rerun finds the last epoch already
// checkpointed and trains nothing.
func TestCaptionerProbe(t *testing.T) {
	ds := synthetic(t, 32, 9)
	src, plain, test := source[float32](t, ds, true), source[float32](t, ds, false), source[float32](t, synthetic(t, 16, 10), false)
	weightSum := func(d model.Decoder[float32]) float64 {
		s := 0.0
		for _, p := range d.Params() {
			for _, v := range p.W.Data {
				s += float64(v)
			}
		}
		return s
	}
	type call struct {
		Epoch int
		Sum   float64
	}
	for _, resumed := range []bool{false, true} {
		d := newModel(t, model.CellReLU, 2)
		out := filepath.Join(t.TempDir(), "m")
		opt := Options{Seed: 2, Epochs: 2, BatchSize: 8, LR: 1e-3, Shards: 1}
		if resumed { // a run killed after its last checkpoint, before the model was written
			o := opt
			o.CheckpointDir = filepath.Join(out, "checkpoint")
			if _, err := Fit(context.Background(), d, src, o); err != nil {
				t.Fatal(err)
			}
			d = newModel(t, model.CellReLU, 2)
		}
		var calls []call
		run := CaptionerRun{Options: opt, Out: out, Probe: func(_ context.Context, epoch int, d model.Decoder[float32]) (any, error) {
			calls = append(calls, call{epoch, weightSum(d)})
			return calls[len(calls)-1], nil
		}}
		res, saved := captionerAndLoad(t, d, src, plain, test, run)
		want := []int{1, 2}
		if resumed {
			want = []int{2}
		}
		if len(calls) != len(want) {
			t.Fatalf("resumed=%v: probe calls %+v, want epochs %v", resumed, calls, want)
		}
		for i, c := range calls {
			if c.Epoch != want[i] {
				t.Errorf("resumed=%v: call %d at epoch %d, want %d", resumed, i, c.Epoch, want[i])
			}
		}
		last := calls[len(calls)-1]
		if last.Sum != weightSum(saved) || res.Probe != last {
			t.Errorf("resumed=%v: last probe %+v, result %+v, saved weights sum to %v", resumed, last, res.Probe, weightSum(saved))
		}
		if !resumed && calls[0].Sum == last.Sum {
			t.Errorf("both epochs probed the same weights")
		}
		rec, ok := saved.Config().Training["probe"].(map[string]any)
		if !ok || rec["Epoch"] != float64(last.Epoch) || rec["Sum"] != last.Sum {
			t.Errorf("resumed=%v: training record's probe %v, want %+v", resumed, saved.Config().Training["probe"], last)
		}
	}
}
