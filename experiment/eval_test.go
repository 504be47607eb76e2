package experiment

import (
	"context"
	"slices"
	"testing"

	"github.com/lenspec/lenspec/mnist"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/train"
)

// TestEvalCaptioner: the evaluation is train.Evaluate's on the split, with
// the training split's longest outputs, following both with progress; a
// model of another input shape or another split is refused.
func TestEvalCaptioner(t *testing.T) {
	ctx := context.Background()
	dir, err := mnist.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	src := Sources{MNISTDir: dir}
	d, err := model.Load[float32]("../models/mmnist-rnn")
	if err != nil {
		t.Fatal(err)
	}
	var stages []string
	ev, err := src.EvalCaptioner(ctx, "m", d, "test", 1, 4, func(stage string, done, total int, _ string) {
		if !slices.Contains(stages, stage) {
			stages = append(stages, stage)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	tr, te, err := src.MultiMNIST(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	in := d.Input()
	want := make([]train.Eval, 2)
	for i, ds := range []*multimnist.Dataset{te, tr} {
		s, err := multimnist.NewSource[float32](ds, in.Min, in.Max, false)
		if err != nil {
			t.Fatal(err)
		}
		if want[i], err = train.Evaluate(ctx, d, s, 4, nil); err != nil {
			t.Fatal(err)
		}
	}
	if ev.Model != "m" || ev.Split != "test" || ev.Samples != want[0].Samples || ev.SequenceAccuracy != want[0].SequenceAccuracy ||
		ev.MaxLenSplit != want[0].MaxLen || !slices.Equal(ev.LengthHistogram, want[0].LengthHistogram) ||
		ev.MaxLenTrain != want[1].MaxLen || ev.UnstoppedTrain != want[1].Unstopped {
		t.Errorf("%+v, want test %+v and train %+v", ev, want[0], want[1])
	}
	if !slices.Equal(stages, []string{"eval test", "eval train"}) {
		t.Errorf("progress stages %v", stages)
	}
	if _, err := src.EvalCaptioner(ctx, "m", d, "dev", 1, 4, nil); err == nil {
		t.Error("the dev split evaluated")
	}
	other := tinyModelDir(t, 1)
	o, err := model.Load[float32](other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.EvalCaptioner(ctx, "m", o, "test", 1, 4, nil); err == nil {
		t.Error("a model of another input shape evaluated on Multi-MNIST")
	}
}
