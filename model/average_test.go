package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/bpe"
)

// TestAverageMatchesNaive: every parameter of the average is the weighted
// mean of the inputs' (a plain loop over the models here), for captioners
// of both cells and a translator, whatever the weights' scale; the inputs
// are left as they were.
func TestAverageMatchesNaive(t *testing.T) {
	type tc struct {
		name    string
		models  []Decoder[float64]
		weights []float64
	}
	var cases []tc
	for _, cell := range cells {
		a, b, c := tinyModel(t, cell, 1), tinyModel(t, cell, 2), tinyModel(t, cell, 3)
		cases = append(cases,
			tc{cell + " halves", []Decoder[float64]{a, b}, []float64{0.5, 0.5}},
			tc{cell + " unnormalised", []Decoder[float64]{a, b}, []float64{1, 3}},
			tc{cell + " three", []Decoder[float64]{a, b, c}, []float64{0.2, 0.3, 0.5}},
			tc{cell + " a zero weight", []Decoder[float64]{a, b}, []float64{0, 2}},
			tc{cell + " one model", []Decoder[float64]{c}, []float64{4}})
	}
	cases = append(cases, tc{"translator", []Decoder[float64]{tinyTranslator(t, 1, 1), tinyTranslator(t, 1, 2)}, []float64{0.25, 0.75}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := make([][]float64, len(c.models))
			for i, d := range c.models {
				for _, p := range d.Params() {
					before[i] = append(before[i], p.W.Data...)
				}
			}
			got, err := Average(c.models, c.weights)
			if err != nil {
				t.Fatal(err)
			}
			sum := 0.0
			for _, w := range c.weights {
				sum += w
			}
			off := 0
			for j, p := range got.Params() {
				for k, v := range p.W.Data {
					want := 0.0
					for i := range c.models {
						want += c.weights[i] * before[i][off+k]
					}
					want /= sum
					if math.Abs(v-want) > 1e-12*(1+math.Abs(want)) {
						t.Fatalf("%s[%d] = %v, want %v", p.Name, k, v, want)
					}
				}
				off += p.W.Len()
				if p == c.models[0].Params()[j] {
					t.Fatalf("%s: the average shares the first model's parameter", p.Name)
				}
			}
			for i, d := range c.models {
				var now []float64
				for _, p := range d.Params() {
					now = append(now, p.W.Data...)
				}
				for k := range now {
					if now[k] != before[i][k] {
						t.Fatalf("model %d changed by averaging", i+1)
					}
				}
			}
			if got.Config().Training != nil {
				t.Fatalf("the average kept a training record: %v", got.Config().Training)
			}
		})
	}
}

// TestAverageOfOneModelDecodesAsIt: a model averaged with itself is itself,
// so it decodes as it does.
func TestAverageOfOneModelDecodesAsIt(t *testing.T) {
	m := tinyModel(t, CellReLU, 5)
	avg, err := Average([]Decoder[float64]{m, m, m}, []float64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	a := avg.(*Captioner[float64])
	rng := rand.New(rand.NewPCG(9, 1))
	for range 20 {
		x := randInput(rng, size(m))
		want, wok := naiveDecode(m, x, 6)
		got, gok := naiveDecode(a, x, 6)
		if wok != gok || len(want) != len(got) {
			t.Fatalf("average decodes %v (%v), the model %v (%v)", got, gok, want, wok)
		}
		for i := range want {
			if want[i] != got[i] {
				t.Fatalf("average decodes %v, the model %v", got, want)
			}
		}
	}
}

// TestAverageRefuses: models of other configurations and weights that are
// no weights are refused, each with its reason.
func TestAverageRefuses(t *testing.T) {
	a, b := tinyModel(t, CellReLU, 1), tinyModel(t, CellReLU, 2)
	lstm := tinyModel(t, CellLSTM, 3)
	wider := func() Decoder[float64] {
		c := tinyConfig(CellReLU)
		c.Arch.(*CaptionerConfig).Hidden = 6
		m, err := NewCaptioner[float64](c, rand.New(rand.NewPCG(4, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}()
	vocab := func() Decoder[float64] {
		c := tinyConfig(CellReLU)
		c.Vocab = []string{"x", "b", "c", "<eos>"}
		m, err := NewCaptioner[float64](c, rand.New(rand.NewPCG(4, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}()
	for _, c := range []struct {
		name    string
		models  []Decoder[float64]
		weights []float64
		want    string
	}{
		{"no models", nil, nil, "no models"},
		{"weights short", []Decoder[float64]{a, b}, []float64{1}, "1 weights for 2 models"},
		{"NaN", []Decoder[float64]{a, b}, []float64{1, math.NaN()}, "weight 2 is NaN"},
		{"infinite", []Decoder[float64]{a, b}, []float64{math.Inf(1), 1}, "weight 1 is +Inf"},
		{"negative", []Decoder[float64]{a, b}, []float64{1.5, -0.5}, "weight 2 is -0.5"},
		{"all zero", []Decoder[float64]{a, b}, []float64{0, 0}, "sum to 0"},
		{"other cell", []Decoder[float64]{a, lstm}, []float64{1, 1}, "model 2's configuration differs"},
		{"other size", []Decoder[float64]{a, b, wider}, []float64{1, 1, 1}, "model 3's configuration differs"},
		{"other vocabulary", []Decoder[float64]{a, vocab}, []float64{1, 1}, "model 2's configuration differs"},
	} {
		_, err := Average(c.models, c.weights)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestSameTokens: translators of one vocabulary size but other tokens are
// not one configuration, though config.json says the same of both.
func TestSameTokens(t *testing.T) {
	train := func(texts ...string) *bpe.Tokenizer {
		tok, err := bpe.Train(texts, bpe.TrainOptions{VocabSize: 300, MinFrequency: 1})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	one, same, other := train("das haus ist klein"), train("das haus ist klein"), train("ein kleines boot")
	for _, c := range []struct {
		name string
		a, b *Config
		want bool
	}{
		{"neither has one", &Config{}, &Config{}, true},
		{"one has one", &Config{Tokenizer: one}, &Config{}, false},
		{"the same tokens", &Config{Tokenizer: one}, &Config{Tokenizer: same}, true},
		{"other tokens", &Config{Tokenizer: one}, &Config{Tokenizer: other}, false},
	} {
		if got := sameTokens(c.a, c.b); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
