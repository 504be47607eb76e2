package train

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/bleu"
	"github.com/lenspec/lenspec/model"
)

// TestEvaluateWords: one decoding gives Evaluate's summary and the BLEU of
// the outputs against the labels, spelled word by word (checked against
// decoding and scoring each sample here, one at a time).
func TestEvaluateWords(t *testing.T) {
	ds := synthetic(t, 40, 5)
	m := newModel(t, model.CellReLU, 3)
	src := source[float32](t, ds, false)
	ctx := context.Background()
	ev, score, err := EvaluateWords(ctx, m, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Evaluate(ctx, m, src, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ev, want) {
		t.Fatalf("summary %+v, Evaluate's %+v", ev, want)
	}
	spell := func(ids []int) string {
		var w []string
		for _, id := range ids {
			w = append(w, m.Config().Token(id))
		}
		return strings.Join(w, " ")
	}
	var hyps, refs []string
	for i := range src.Len() {
		x, tokens, labels := src.Batch([]int{i}, nil)
		res, err := model.Decode(ctx, m, model.Batch[float32]{X: x, Tokens: tokens}, 0)
		if err != nil {
			t.Fatal(err)
		}
		hyps, refs = append(hyps, spell(res[0].Tokens)), append(refs, spell(labels[0]))
	}
	ref, err := bleu.Corpus(hyps, refs)
	if err != nil {
		t.Fatal(err)
	}
	if score != ref {
		t.Fatalf("BLEU %+v, one sample at a time %+v", score, ref)
	}
}
