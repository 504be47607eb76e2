package experiment

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/lenspec/lenspec/captions"
	"github.com/lenspec/lenspec/mnist"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
)

// TestWriteCaptionPreviews: the canvases written read back as the data
// set's, with their captions, and a model's outputs are its greedy
// decoding spelled out.
func TestWriteCaptionPreviews(t *testing.T) {
	set := func(seed uint64) *mnist.Set {
		r := rand.New(rand.NewPCG(seed, 1))
		s := &mnist.Set{N: 30, Images: make([]uint8, 30*mnist.Pixels), Labels: make([]uint8, 30)}
		for i := range s.Images {
			s.Images[i] = uint8(r.IntN(256))
		}
		for i := range s.Labels {
			s.Labels[i] = uint8(r.IntN(10))
		}
		return s
	}
	ds, err := captions.Generate(set(1), set(2), 5, 3, captions.Skewed())
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.DefaultShowTellConfig(captions.Vocab)
	st := cfg.Arch.(*model.ShowTellConfig)
	st.Conv, st.FCHidden, st.Embedding, st.Hidden = []model.ConvConfig{{OutChannels: 2, Kernel: 3, Stride: 4, Padding: 1}}, 8, 4, 6
	d, err := model.New[float64](&cfg, rand.New(rand.NewPCG(4, 0)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	items, err := WriteCaptionPreviews(context.Background(), ds, d, "test", dir, 8, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != ds.N {
		t.Fatalf("%d previews of %d canvases", len(items), ds.N)
	}
	src, err := captions.NewSource[float64](ds, -1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		if it.PNG != filepath.Join(dir, "test-0000"+string(rune('0'+i))+".png") || it.Caption != ds.Captions[i].String() {
			t.Errorf("item %d: %+v", i, it)
		}
		got, err := multimnist.ReadPNG(it.PNG, captions.Height, captions.Width, -1, 1)
		if err != nil {
			t.Fatal(err)
		}
		x, _, _ := src.Batch([]int{i}, nil)
		for k := range x {
			if got[k] != x[k] {
				t.Fatalf("item %d: pixel %d reads %v, the canvas has %v", i, k, got[k], x[k])
			}
		}
		res, err := model.Decode(context.Background(), d, model.Batch[float64]{X: x}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if it.Output != Spell(d.Config(), res[0]) {
			t.Errorf("item %d: output %q, decoding gives %q", i, it.Output, Spell(d.Config(), res[0]))
		}
	}
	if r := (model.Result{Tokens: []int{0, 1}}); Spell(d.Config(), r) != captions.Vocab[0]+" "+captions.Vocab[1]+" …" {
		t.Errorf("an unstopped output spells %q", Spell(d.Config(), r))
	}
}

// TestPreviewSettings: the flags start at their help's defaults and set
// the fields they name; the settings are refused, as SettingsErrors, in
// the data commands' order, against each command's largest scale.
func TestPreviewSettings(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		maxScale int
		want     string // "": valid
	}{
		{[]string{"--out", "d"}, 16, ""},
		{[]string{"--out", "d", "--split", "train", "--count", "1", "--scale", "64"}, 64, ""},
		{nil, 16, "--out is required"},
		{[]string{"--out", "d", "--scale", "64"}, 16, "--count must be positive and --scale in 1..16"},
		{[]string{"--out", "d", "--scale", "0"}, 64, "--count must be positive and --scale in 1..64"},
		{[]string{"--out", "d", "--count", "0", "--split", "dev"}, 64, "--count must be positive and --scale in 1..64"},
		{[]string{"--out", "d", "--split", "dev"}, 64, `--split "dev": want train or test`},
		{[]string{"--out", "d", "--count", "10000"}, 16, ""},
		{[]string{"--out", "d", "--count", "10001"}, 16, "--count 10001: want at most 10000, the test split's canvases"},
		{[]string{"--out", "d", "--split", "train", "--count", "100000000"}, 16, "--count 100000000: want at most 50000, the train split's canvases"},
	} {
		var p PreviewSettings
		parseFlags(t, p.RegisterFlags, tc.args)
		check(t, tc.args, p.Validate(tc.maxScale, 50000, 10000), tc.want)
	}
	var p PreviewSettings
	parseFlags(t, p.RegisterFlags, []string{"--out", "d", "--split", "train", "--count", "3", "--scale", "2"})
	if want := (PreviewSettings{"d", "train", 3, 2}); p != want {
		t.Errorf("got %+v, want %+v", p, want)
	}
}
