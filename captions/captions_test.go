package captions

import (
	"bytes"
	"errors"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/mnist"
)

// synthetic returns an n-image set with random labels and pixels: the
// captions depend only on labels, so the grammar's tests need no download.
func synthetic(n int, seed uint64) *mnist.Set {
	r := rand.New(rand.NewPCG(seed, 1))
	s := &mnist.Set{N: n, Images: make([]uint8, n*mnist.Pixels), Labels: make([]uint8, n)}
	for i := range s.Images {
		s.Images[i] = uint8(r.IntN(256))
	}
	for i := range s.Labels {
		s.Labels[i] = uint8(r.IntN(10))
	}
	return s
}

func TestCaptionWords(t *testing.T) {
	sneaker, seven, bag := Phrase{Fashion, 7, false}, Phrase{Digit, 7, false}, Phrase{Fashion, 8, true}
	for _, tc := range []struct {
		c    Caption
		want string
	}{
		{Caption{Phrases: []Phrase{sneaker, seven, bag}, Relations: []Relation{LeftOf, And}}, "a sneaker to the left of a seven and a small bag"},
		{Caption{Phrases: []Phrase{{Digit, 8, false}}}, "an eight"},
		{Caption{Phrases: []Phrase{{Digit, 8, true}}}, "a small eight"},
		{Caption{Phrases: []Phrase{{Fashion, 9, false}}}, "an ankle boot"},
		{Caption{Phrases: []Phrase{{Fashion, 9, true}}}, "a small ankle boot"},
		{Caption{Phrases: []Phrase{{Digit, 1, false}, {Fashion, 0, false}}, Relations: []Relation{Above}}, "a one above a top"},
	} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("%+v spells %q, want %q", tc.c, got, tc.want)
		}
		back, err := Parse(tc.want)
		if err != nil || !equalCaptions(back, tc.c) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.want, back, err, tc.c)
		}
		ids := tc.c.Tokens()
		if back, err := ParseTokens(ids); err != nil || !equalCaptions(back, tc.c) {
			t.Errorf("ParseTokens(%v) = %+v, %v; want %+v", ids, back, err, tc.c)
		}
	}
}

func equalCaptions(a, b Caption) bool {
	return slices.Equal(a.Phrases, b.Phrases) && slices.Equal(a.Relations, b.Relations)
}

func TestParseRejects(t *testing.T) {
	for _, text := range []string{
		"", "a", "seven", "a small", "an seven", "a eight", "a small ankle", "a ankle boot",
		"a seven and", "a seven to the left a bag", "a seven above", "a seven a bag",
		"a seven <eos>", "a seven and and a bag", "small a seven", "a boot", "a seven, and a bag",
	} {
		if c, err := Parse(text); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %+v, %v; want a syntax error", text, c, err)
		}
	}
	for _, ids := range [][]int{{EOSID}, {-1}, {len(Vocab)}, {0}} {
		if c, err := ParseTokens(ids); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseTokens(%v) = %+v, %v; want a syntax error", ids, c, err)
		}
	}
}

func TestVocab(t *testing.T) {
	if Vocab[EOSID] != EOS {
		t.Fatalf("Vocab[EOSID] = %q", Vocab[EOSID])
	}
	seen := map[string]bool{}
	for _, w := range Vocab {
		if seen[w] {
			t.Errorf("%q twice in the vocabulary", w)
		}
		seen[w] = true
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string // "" valid
	}{
		{"skewed", func(*Options) {}, ""},
		{"flat", func(o *Options) { *o = Flat() }, ""},
		{"no weight", func(o *Options) { o.Items = [MaxItems]float64{} }, "positive weight"},
		{"negative", func(o *Options) { o.Items[1] = -1 }, "non-negative"},
		{"small", func(o *Options) { o.Small = 1.5 }, "small-item"},
		{"cap", func(o *Options) { o.MaxTokens = 10 }, "below 11"},
		{"cap one item", func(o *Options) { o.Items = [MaxItems]float64{1}; o.MaxTokens = 2 }, ""},
	} {
		o := Skewed()
		tc.edit(&o)
		err := o.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	digits, fashion := synthetic(300, 1), synthetic(300, 2)
	a, err := Generate(digits, fashion, 200, 7, Skewed())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(digits, fashion, 200, 7, Skewed())
	c, _ := Generate(digits, fashion, 200, 8, Skewed())
	if !bytes.Equal(a.Pixels, b.Pixels) || !slices.EqualFunc(a.Tokens, b.Tokens, slices.Equal) {
		t.Error("the same seed gave different data sets")
	}
	if bytes.Equal(a.Pixels, c.Pixels) {
		t.Error("seeds 7 and 8 gave the same canvases")
	}
	tr, te := DeriveSeeds(7)
	if tr == te {
		t.Error("DeriveSeeds gave the same seed to both splits")
	}
}

// TestGenerate checks every caption of both distributions: within the cap,
// parsing back to its items' phrases and the relations of their cells,
// and every item painted where its cell says.
func TestGenerate(t *testing.T) {
	digits, fashion := synthetic(500, 3), synthetic(500, 4)
	means := map[string]float64{}
	for _, tc := range []struct {
		name string
		opt  Options
	}{{"skewed", Skewed()}, {"flat", Flat()}} {
		d, err := Generate(digits, fashion, 4000, 11, tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0
		for j := range d.N {
			toks := d.Tokens[j]
			if len(toks) < 2 || len(toks) > MaxTokens {
				t.Fatalf("%s canvas %d: caption of %d words outside 2..%d", tc.name, j, len(toks), MaxTokens)
			}
			sum += len(toks)
			c, err := ParseTokens(toks)
			if err != nil {
				t.Fatalf("%s canvas %d: %q does not parse: %v", tc.name, j, d.Captions[j], err)
			}
			items := d.Items[j]
			if len(c.Phrases) != len(items) || len(items) < 1 || len(items) > MaxItems {
				t.Fatalf("%s canvas %d: %d phrases for %d items", tc.name, j, len(c.Phrases), len(items))
			}
			for i, it := range items {
				set := digits
				if it.Kind == Fashion {
					set = fashion
				}
				if c.Phrases[i] != it.Phrase || it.Class != int(set.Labels[it.Source]) {
					t.Fatalf("%s canvas %d item %d: parsed %+v, drawn %+v", tc.name, j, i, c.Phrases[i], it)
				}
				if i > 0 {
					prev := items[i-1]
					if prev.Col > it.Col || (prev.Col == it.Col && prev.Row >= it.Row) {
						t.Fatalf("%s canvas %d: items %d and %d out of caption order", tc.name, j, i-1, i)
					}
					want := map[int]Relation{0: Above, 1: LeftOf}[it.Col-prev.Col]
					if c.Relations[i-1] != want {
						t.Fatalf("%s canvas %d: relation %d is %v, the cells say %v", tc.name, j, i-1, c.Relations[i-1], want)
					}
				}
				checkPainted(t, d.Canvas(j), it, set)
			}
		}
		means[tc.name] = float64(sum) / float64(d.N)
		h := d.LengthHistogram()
		if h[2] == 0 || len(h) != MaxTokens+1 {
			t.Errorf("%s: length histogram %v does not span 2..%d", tc.name, h, MaxTokens)
		}
	}
	if !(means["skewed"] < 7 && means["flat"] > 10) {
		t.Errorf("mean caption lengths %v: want the skewed one short (< 7) and the flat one long (> 10)", means)
	}
}

// checkPainted compares an item's cell with its source image.
func checkPainted(t *testing.T, canvas []uint8, it Item, set *mnist.Set) {
	t.Helper()
	img := set.Image(it.Source)
	for y := range Cell {
		for x := range Cell {
			got := canvas[(it.Row*Cell+y)*Width+it.Col*Cell+x]
			want := img[y*mnist.Cols+x]
			if it.Small {
				yy, xx := y-it.DY, x-it.DX
				want = 0
				if yy >= 0 && yy < SmallSide && xx >= 0 && xx < SmallSide {
					s := int(img[2*yy*28+2*xx]) + int(img[2*yy*28+2*xx+1]) + int(img[(2*yy+1)*28+2*xx]) + int(img[(2*yy+1)*28+2*xx+1])
					want = uint8((s + 2) / 4)
				}
			}
			if got != want {
				t.Fatalf("item %+v: pixel (%d, %d) of its cell is %d, want %d", it, y, x, got, want)
			}
		}
	}
}

func TestGenerateRejects(t *testing.T) {
	s := synthetic(10, 1)
	if _, err := Generate(s, &mnist.Set{}, 1, 1, Skewed()); err == nil || !strings.Contains(err.Error(), "Fashion-MNIST set is empty") {
		t.Errorf("empty Fashion-MNIST set: %v", err)
	}
	if _, err := Generate(s, s, -1, 1, Skewed()); err == nil {
		t.Error("negative count accepted")
	}
	if _, err := Generate(s, s, 1, 1, Options{}); err == nil {
		t.Error("zero options accepted")
	}
}

func TestSource(t *testing.T) {
	d, err := Generate(synthetic(50, 1), synthetic(50, 2), 5, 1, Skewed())
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewSource[float64](d, -1, 1)
	if err != nil {
		t.Fatal(err)
	}
	x, tok, lab := src.Batch([]int{3, 1}, nil)
	if tok != nil || len(x) != 2*CanvasPixels || !slices.Equal(lab[0], d.Tokens[3]) || !slices.Equal(lab[1], d.Tokens[1]) {
		t.Fatalf("Batch: %d values, tokens %v, labels %v", len(x), tok, lab)
	}
	for p, v := range d.Canvas(1) {
		if want := -1 + float64(v)/127.5; x[CanvasPixels+p] != want {
			t.Fatalf("pixel %d: %v, want %v", p, x[CanvasPixels+p], want)
		}
	}
	if _, err := NewSource[float32](d, 1, 1); err == nil {
		t.Error("empty range accepted")
	}
}

func TestWritePreview(t *testing.T) {
	d, err := Generate(synthetic(50, 1), synthetic(50, 2), 1, 1, Skewed())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "c.png")
	if err := WritePreview(p, d.Canvas(0), d.Captions[0].String(), "model: a seven", 2); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 2*Width || b.Dy() <= 2*Height+30 {
		t.Errorf("preview is %v, want at least %dx%d", b, 2*Width, 2*Height+30)
	}
	if err := WritePreview(p, d.Canvas(0)[1:], "x", "", 2); err == nil {
		t.Error("short canvas accepted")
	}
}

// FuzzParse checks Parse never panics and accepts only what Words spells.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a sneaker to the left of a seven and a small bag", "an ankle boot", "a", "", "an eight above a small one"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := Parse(text)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q): %v does not wrap ErrSyntax", text, err)
			}
			return
		}
		if got := c.String(); got != strings.Join(strings.Fields(text), " ") {
			t.Fatalf("Parse(%q) = %+v, which spells %q", text, c, got)
		}
		if back, err := ParseTokens(c.Tokens()); err != nil || !equalCaptions(back, c) {
			t.Fatalf("tokens of %q parse to %+v, %v", text, back, err)
		}
	})
}
