package corpus

import (
	"fmt"
	"testing"
)

// TestLexicon trains on a tiny corpus in which each German word's
// translation is recoverable from co-occurrence.
func TestLexicon(t *testing.T) {
	train := []Pair{
		{"das Haus", "the house"},
		{"das Buch", "the book"},
		{"ein Buch", "a book"},
		{"ein Haus", "a house"},
		{"das kleine Haus", "the small house"},
		{"ein kleines Buch", "a small book"},
		{"Ich lese das Buch.", "I read the book."},
		{"Ich sehe das Haus.", "I see the house."},
		{"Ich sehe Berlin.", "I see Berlin."},
		{"Du liest ein Buch.", "You read a book."},
	}
	lex := TrainLexicon(train, LexiconOptions{})
	for _, tt := range [][2]string{
		{"das Haus", "the house"},
		{"ein Buch", "a book"},
		{"das Buch", "the book"},
		{"Ich sehe ein Haus.", "I see a house."},   // capitalised: a sentence
		{"Du sehe das Buch!", "You see the book!"}, // "Du" → "you", capitalised
		{"Ich sehe Hamburg.", "I see Hamburg."},    // unknown word copied
		{"Ich lese Berlin.", "I read Berlin."},     // identity keeps its spelling
		{"Haus (kleine)", "house (small)"},         // not a sentence: no capital
		{"", ""},
	} {
		if got := lex.Translate(tt[0]); got != tt[1] {
			t.Errorf("Translate(%q) = %q, want %q", tt[0], got, tt[1])
		}
	}
	// Deterministic.
	again := TrainLexicon(train, LexiconOptions{Iterations: DefaultIterations})
	for src, want := range lex.best {
		if again.best[src] != want {
			t.Errorf("retrained: %q → %q, before %q", src, again.best[src], want)
		}
	}
	if lex.Len() != len(again.best) {
		t.Errorf("Len %d, retrained %d", lex.Len(), len(again.best))
	}
	if got := TrainLexicon(nil, LexiconOptions{}).Translate("Das Haus."); got != "Das Haus." {
		t.Errorf("an empty lexicon translates %q, want the input copied", got)
	}
}

func TestDetokenize(t *testing.T) {
	for _, tt := range []struct {
		toks []string
		want string
	}{
		{[]string{"I", "see", "(", "a", "house", ")", ",", "you", "?"}, "I see (a house), you?"},
		{[]string{"he", "said", `"`, "no", `"`, "."}, `he said "no".`},
		{[]string{"10", "%", "!"}, "10%!"},
		{nil, ""},
	} {
		if got := detokenize(tt.toks); got != tt.want {
			t.Errorf("detokenize(%q) = %q, want %q", tt.toks, got, tt.want)
		}
	}
}

// BenchmarkTrainLexicon measures training on a Ding-sized corpus: 80,000
// synthetic pairs of 8 words (the Ding training split, 144,000 pairs,
// trains in about 2.5 s on one core).
func BenchmarkTrainLexicon(b *testing.B) {
	var train []Pair
	for i := range 80000 {
		train = append(train, Pair{
			fmt.Sprintf("das w%d ist ein x%d und y%d mit z%d", i%5000, i%3001, i%701, i%97),
			fmt.Sprintf("the v%d is a u%d and t%d with s%d", i%5000, i%3001, i%701, i%97),
		})
	}
	for b.Loop() {
		lex := TrainLexicon(train, LexiconOptions{})
		// The function words always occur together and cannot be told
		// apart; the others can.
		if got := lex.Translate("w17 x5 y3"); got != "v17 u5 t3" {
			b.Fatalf("Translate = %q", got)
		}
	}
}
