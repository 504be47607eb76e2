package nmt

import (
	"context"
	"reflect"
	"testing"

	"github.com/lenspec/lenspec/internal/testmodels"
	"github.com/lenspec/lenspec/train"
)

// TestEvaluate: a translator's evaluation is train's on the split asked
// for, the dev split's lengths and the dictionary baseline, with the
// split's first translations as examples; another split is refused.
func TestEvaluate(t *testing.T) {
	ctx := context.Background()
	sp := toySplits(t)
	d, err := testmodels.Translator(64)
	if err != nil {
		t.Fatal(err)
	}
	devEval, err := train.EvaluateTranslation(ctx, d, sp.Dev, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, split := range []string{"test", "dev"} {
		pairs := sp.Test
		if split == "dev" {
			pairs = sp.Dev
		}
		want, err := train.EvaluateTranslation(ctx, d, pairs, 0)
		if err != nil {
			t.Fatal(err)
		}
		base, err := train.BaselineBLEU(sp.Train, pairs)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := Evaluate(ctx, "m", d, sp, split, 0, 3)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Model != "m" || ev.Split != split || ev.BLEU != want.BLEU.BLEU || ev.Detail != want.BLEU.String() || ev.BaselineBLEU != base.BLEU ||
			ev.Samples != len(pairs) || ev.MaxLen != want.MaxLen || ev.Unstopped != want.Unstopped || ev.MaxRatio != want.MaxRatio {
			t.Errorf("%s: %+v, want train's %+v and baseline %v", split, ev, want, base.BLEU)
		}
		if ev.MaxLenDev != devEval.MaxLen || ev.UnstoppedDev != devEval.Unstopped || !reflect.DeepEqual(ev.LengthsDev, devEval.Lengths) || ev.DevSamples != len(sp.Dev) {
			t.Errorf("%s: dev %d %d %v of %d, want %+v", split, ev.MaxLenDev, ev.UnstoppedDev, ev.LengthsDev, ev.DevSamples, devEval)
		}
		if len(ev.Examples) != 3 {
			t.Fatalf("%s: %d examples, want 3", split, len(ev.Examples))
		}
		for i, e := range ev.Examples {
			if e.Source != pairs[i].Src || e.Reference != pairs[i].Tgt || e.Output != want.Outputs[i].Text || e.Length != len(want.Outputs[i].IDs) {
				t.Errorf("%s: example %d %+v, pair %+v output %q", split, i, e, pairs[i], want.Outputs[i].Text)
			}
		}
	}
	if _, err := Evaluate(ctx, "m", d, sp, "train", 0, 0); err == nil {
		t.Error("the train split evaluated")
	}
}
