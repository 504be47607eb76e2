package corpus

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
)

func TestDedup(t *testing.T) {
	in := []Pair{{"a b", "x"}, {"c", "y"}, {"a b", "x"}, {"a b", "z"}, {"c", "y"}, {"A b", "x"}}
	want := []Pair{{"a b", "x"}, {"c", "y"}, {"a b", "z"}, {"A b", "x"}}
	if got := Dedup(in); !reflect.DeepEqual(got, want) {
		t.Errorf("Dedup = %q, want %q", got, want)
	}
	if got := Dedup(nil); len(got) != 0 {
		t.Errorf("Dedup(nil) = %q", got)
	}
}

// syntheticPairs returns n pairs; every third source repeats an earlier
// one with different case and punctuation and another target.
func syntheticPairs(n int) []Pair {
	var ps []Pair
	for i := range n {
		if i%3 == 2 {
			ps = append(ps, Pair{fmt.Sprintf("satz nummer %d!", i-1), fmt.Sprintf("another target %d.", i)})
			continue
		}
		ps = append(ps, Pair{fmt.Sprintf("Satz Nummer %d.", i), fmt.Sprintf("Sentence number %d.", i)})
	}
	return ps
}

func TestSplit(t *testing.T) {
	ps := syntheticPairs(30000)
	train, dev, test, err := Split(ps, 7, 0.1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	if len(train)+len(dev)+len(test) != len(ps) {
		t.Fatalf("parts hold %d pairs, want %d", len(train)+len(dev)+len(test), len(ps))
	}
	for name, got := range map[string]struct {
		n    int
		frac float64
	}{"dev": {len(dev), 0.1}, "test": {len(test), 0.2}} {
		if f := float64(got.n) / float64(len(ps)); math.Abs(f-got.frac) > 0.015 {
			t.Errorf("%s holds %.3f of the pairs, want about %.2f", name, f, got.frac)
		}
	}
	index := map[Pair]int{}
	for i, p := range ps {
		index[p] = i
	}
	// Same source key, same part.
	part := map[string]string{}
	for name, pp := range map[string][]Pair{"train": train, "dev": dev, "test": test} {
		for _, p := range pp {
			k := splitKey(p.Src)
			if prev, ok := part[k]; ok && prev != name {
				t.Fatalf("source %q is in %s and %s", k, prev, name)
			}
			part[k] = name
		}
		// Input order is kept.
		last := -1
		for _, p := range pp {
			if index[p] <= last {
				t.Fatalf("%s is not in input order at %q", name, p)
			}
			last = index[p]
		}
	}
	// Deterministic, and independent of the other pairs: a pair's part
	// is the same when split alone.
	train2, dev2, test2, _ := Split(ps, 7, 0.1, 0.2)
	if !reflect.DeepEqual(train, train2) || !reflect.DeepEqual(dev, dev2) || !reflect.DeepEqual(test, test2) {
		t.Error("Split is not deterministic")
	}
	for _, p := range test[:50] {
		if _, _, alone, _ := Split([]Pair{p}, 7, 0.1, 0.2); len(alone) != 1 {
			t.Errorf("%q is in test with the corpus but not alone", p)
		}
	}
	// Another seed gives another split.
	_, _, test3, _ := Split(ps, 8, 0.1, 0.2)
	if reflect.DeepEqual(test, test3) {
		t.Error("seed has no effect")
	}
	for _, fr := range [][2]float64{{-0.1, 0.1}, {0.6, 0.5}, {math.NaN(), 0}, {0, math.Inf(1)}} {
		if _, _, _, err := Split(ps, 1, fr[0], fr[1]); err == nil {
			t.Errorf("Split with fractions %v: no error", fr)
		}
		if _, _, _, err := SplitSentences(ps, 1, fr[0], fr[1]); err == nil {
			t.Errorf("SplitSentences with fractions %v: no error", fr)
		}
	}
	if tr, d, te, err := Split(ps, 1, 0, 0); err != nil || len(tr) != len(ps) || len(d)+len(te) != 0 {
		t.Errorf("Split with zero fractions moved pairs out of train: %v", err)
	}
}

func TestSplitKey(t *testing.T) {
	for _, tt := range [][2]string{
		{"Ich komme!", "ich komme"},
		{"  ich,  KOMME. ", "ich komme"},
		{"Straße 5–7", "straße 5 7"},
		{"…", ""},
	} {
		if got := splitKey(tt[0]); got != tt[1] {
			t.Errorf("splitKey(%q) = %q, want %q", tt[0], got, tt[1])
		}
	}
}

func TestSplitSentences(t *testing.T) {
	var ps []Pair
	for i := range 6000 {
		switch i % 4 {
		case 0:
			ps = append(ps, Pair{fmt.Sprintf("Ich sehe %d Häuser.", i), fmt.Sprintf("I see %d houses.", i)})
		case 1: // a second reference for the previous source
			ps = append(ps, Pair{fmt.Sprintf("ich sehe %d Häuser!", i-1), fmt.Sprintf("I can see %d houses.", i-1)})
		case 2: // a phrase sharing the source of a sentence
			ps = append(ps, Pair{fmt.Sprintf("Ich sehe %d Häuser.", i-2), fmt.Sprintf("seeing %d houses", i-2)})
		default: // a phrase
			ps = append(ps, Pair{fmt.Sprintf("%d Häuser sehen", i), fmt.Sprintf("to see %d houses", i)})
		}
	}
	train, dev, test, err := SplitSentences(ps, 3, 0.1, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	evalKeys := map[string]bool{}
	for _, p := range append(slices.Clone(dev), test...) {
		if !IsSentence(p) {
			t.Errorf("evaluation pair %q is not a sentence pair", p)
		}
		k := splitKey(p.Src)
		if evalKeys[k] {
			t.Errorf("source %q is evaluated twice", k)
		}
		evalKeys[k] = true
	}
	phrases := 0
	for _, p := range train {
		if evalKeys[splitKey(p.Src)] {
			t.Errorf("training pair %q shares its source with an evaluation pair", p)
		}
		if !IsSentence(p) && p.Tgt[:3] == "to " {
			phrases++
		}
	}
	if phrases != 1500 {
		t.Errorf("%d of the 1500 phrases with their own source in train", phrases)
	}
	// 1500 candidate sources, a tenth of them in each of dev and test.
	for name, n := range map[string]int{"dev": len(dev), "test": len(test)} {
		if n < 100 || n > 200 {
			t.Errorf("%s has %d pairs, want about 150", name, n)
		}
	}
	// Each evaluation source keeps its first sentence pair.
	for _, p := range dev {
		if p.Src[0] != 'I' || p.Tgt[:6] != "I see " {
			t.Errorf("dev pair %q is not the first pair of its source", p)
		}
	}
	// The split of the sentences agrees with Split's rule.
	_, _, plainTest, _ := Split(ps, 3, 0.1, 0.1)
	for _, p := range test {
		if !slices.Contains(plainTest, p) {
			t.Errorf("%q is in SplitSentences' test but not in Split's", p)
		}
	}
}
