package bpe

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// syntheticCorpus returns German-like lines totalling about chars
// characters: words built from syllables, drawn with a Zipf distribution so
// that, as in real text, a few words are very frequent and most are rare.
func syntheticCorpus(chars int) []string {
	rng := rand.New(rand.NewPCG(42, 42))
	onsets := []string{"", "b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "w", "z", "sch", "st", "str", "spr", "br", "gr", "kl", "pf", "ch"}
	nuclei := []string{"a", "e", "i", "o", "u", "ä", "ö", "ü", "ei", "au", "eu", "ie"}
	codas := []string{"", "", "n", "r", "s", "t", "ng", "ch", "ck", "ß", "nd", "rt", "cht", "lt"}
	suffixes := []string{"", "", "", "en", "er", "ung", "heit", "keit", "lich", "chen", "e", "es"}
	lexicon := make([]string, 150000)
	for i := range lexicon {
		var w strings.Builder
		for range 1 + rng.IntN(2) {
			w.WriteString(onsets[rng.IntN(len(onsets))])
			w.WriteString(nuclei[rng.IntN(len(nuclei))])
			w.WriteString(codas[rng.IntN(len(codas))])
		}
		w.WriteString(suffixes[rng.IntN(len(suffixes))])
		s := w.String()
		if rng.IntN(4) == 0 { // nouns are capitalised
			s = strings.ToUpper(s[:1]) + s[1:]
		}
		lexicon[i] = s
	}
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(lexicon)-1))
	punct := []string{".", ".", ".", "?", "!"}
	var lines []string
	total := 0
	for total < chars {
		var b strings.Builder
		for j := range 3 + rng.IntN(8) {
			if j > 0 {
				if rng.IntN(10) == 0 {
					b.WriteByte(',')
				}
				b.WriteByte(' ')
			}
			b.WriteString(lexicon[zipf.Uint64()])
		}
		b.WriteString(punct[rng.IntN(len(punct))])
		lines = append(lines, b.String())
		total += b.Len()
	}
	return lines
}

// BenchmarkTrain trains an 8,000-token vocabulary on about 5 M characters,
// the size of the translation corpus this package was written for.
func BenchmarkTrain(b *testing.B) {
	corpus := syntheticCorpus(5_000_000)
	b.ResetTimer()
	for b.Loop() {
		tok, err := Train(corpus, TrainOptions{VocabSize: 8000})
		if err != nil {
			b.Fatal(err)
		}
		if tok.Size() != 8000 {
			b.Fatalf("Size %d", tok.Size())
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	corpus := syntheticCorpus(1_000_000)
	tok, err := Train(corpus, TrainOptions{VocabSize: 8000})
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Join(corpus[:2000], " ")
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		tok.Encode(text)
	}
}

// BenchmarkEncodeUncached measures the merge loop itself, with every word
// missing the cache.
func BenchmarkEncodeUncached(b *testing.B) {
	corpus := syntheticCorpus(1_000_000)
	tok, err := Train(corpus, TrainOptions{VocabSize: 8000})
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Join(corpus[:2000], " ")
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		tok.cache.m = make(map[string][]int32)
		tok.Encode(text)
	}
}
