package bench

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/internal/testmodels"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/train"
)

// indexSource is a source whose example i is the value i, labelled [i].
type indexSource struct{ n int }

func (s indexSource) Len() int { return s.n }

func (s indexSource) Batch(idx []int, _ *rand.Rand) ([]float32, [][]int, [][]int) {
	var x []float32
	var labels [][]int
	for _, i := range idx {
		x, labels = append(x, float32(i)), append(labels, []int{i})
	}
	return x, nil, labels
}

// TestCaptionerPeerData: the first 1,000 test inputs are decoded, the
// first 64 training examples trained on, the next 50 test inputs attacked.
func TestCaptionerPeerData(t *testing.T) {
	data := CaptionerPeerData(indexSource{2000}, indexSource{100})
	for _, c := range []struct {
		name   string
		got    []float32
		lo, n  int
		labels [][]int
	}{{"decode", data.Decode, 0, 1000, nil}, {"train", data.Train, 0, 64, data.TrainLabels}, {"pgd", data.PGD, 1000, 50, nil}} {
		if len(c.got) != c.n || c.got[0] != float32(c.lo) || c.got[c.n-1] != float32(c.lo+c.n-1) {
			t.Errorf("%s: %d inputs from %v to %v, want %d from %d", c.name, len(c.got), c.got[0], c.got[len(c.got)-1], c.n, c.lo)
		}
		if c.labels != nil && (len(c.labels) != c.n || c.labels[c.n-1][0] != c.lo+c.n-1) {
			t.Errorf("%s: labels %v", c.name, c.labels)
		}
	}
}

// TestTranslatorData: the peer translates the dev sources sorted by length
// and trains on one bucketed batch of training pairs; the benchmark
// translates the dev sentences and trains on every training pair.
func TestTranslatorData(t *testing.T) {
	d, err := testmodels.Translator(64)
	if err != nil {
		t.Fatal(err)
	}
	sp := &corpus.Splits{
		Train: []corpus.Pair{{Src: "das haus", Tgt: "the house"}, {Src: "der hund ist klein", Tgt: "the dog is small"}, {Src: "die katze", Tgt: "the cat"}},
		Dev:   []corpus.Pair{{Src: "die katze ist alt", Tgt: "the cat is old"}, {Src: "das haus", Tgt: "the house"}},
	}
	peer := TranslatorPeerData(d, sp, 2, 1)
	tok := d.Config().Tokenizer
	if len(peer.Sources) != 2 || !slices.Equal(peer.Sources[0], model.EncodeText(tok, "das haus")) || len(peer.Sources[1]) < len(peer.Sources[0]) {
		t.Errorf("peer sources %v", peer.Sources)
	}
	if len(peer.TrainSources) != 2 || len(peer.TrainLabels) != 2 {
		t.Errorf("peer training batch: %d sources, %d labels, want 2", len(peer.TrainSources), len(peer.TrainLabels))
	}
	b := TranslatorBenchData(d, sp)
	if !slices.Equal(b.Sources, []string{"die katze ist alt", "das haus"}) || b.Train.Len() != 3 {
		t.Errorf("benchmark data: sources %q, %d training pairs", b.Sources, b.Train.Len())
	}
	var _ train.Source[float32] = indexSource{}
}
