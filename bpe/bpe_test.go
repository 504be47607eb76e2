package bpe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// smallCorpus is a little German/English parallel-style text, repeated so
// that pairs are frequent enough to merge.
var smallCorpus = func() []string {
	lines := []string{
		"Guten Morgen, wie geht es Ihnen?",
		"Good morning, how are you?",
		"Die Straße ist heute sehr ruhig.",
		"The street is very quiet today.",
		"Wir müssen über die Zukunft Europas sprechen.",
		"We must talk about the future of Europe.",
		"Ich möchte Ihnen für Ihre Geduld danken.",
		"I would like to thank you for your patience.",
		"Grüße aus Köln und Düsseldorf!",
		"Greetings from Cologne and Düsseldorf!",
		"Das Parlament hat den Bericht angenommen.",
		"Parliament has adopted the report.",
		"Die Kommission muss handeln, bevor es zu spät ist.",
		"The Commission must act before it is too late.",
		"Schöne Grüße an die Familie.",
		"Best regards to the family.",
		"Es gibt keine einfachen Lösungen für schwierige Fragen.",
		"There are no simple solutions to difficult questions.",
	}
	var out []string
	for i := range 20 {
		for j, l := range lines {
			if (i+j)%3 == 0 {
				l = " " + l // some lines with a leading space
			}
			out = append(out, l)
		}
	}
	return out
}()

// smallVocab leaves room for every merge the small corpus supports.
const smallVocab = 1000

func trainSmall(t testing.TB) *Tokenizer {
	t.Helper()
	tok, err := Train(smallCorpus, TrainOptions{VocabSize: smallVocab})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// trickyStrings are round-trip cases: whitespace of every kind, non-ASCII
// text, the meta symbol itself, and bytes that are not UTF-8.
var trickyStrings = []string{
	"",
	" ",
	"   ",
	" leading",
	"trailing ",
	"  both  ",
	"multiple   spaces inside",
	"\t",
	"tab\there",
	"new\nline\n",
	"\r\n",
	"Grüße aus Köln – Straße, Größe, Fuß",
	"ÄÖÜäöüß ẞ",
	"emoji 😀👍🏽 family 👨‍👩‍👧 flag 🇩🇪",
	"literal ▁ meta",
	"▁",
	"▁▁ ▁",
	"\xe2\x96",          // a truncated ▁
	"\xff\xfe",          // invalid UTF-8
	"a\xffb \xc3 \x80c", // invalid bytes mid-word
	"\x00",
	"nul\x00byte",
	"\u2028\u2029\u0085",
	"\ufffd",
	"<s></s><pad><unk> <0x41>",
	"日本語のテキスト",
	"The future of Europe.",
	"Die Zukunft Europas.",
	strings.Repeat("a", 1000),
	strings.Repeat("ab ", 100),
	strings.Repeat("Zukunft", 20),
}

func TestRoundTrip(t *testing.T) {
	tok := trainSmall(t)
	for _, s := range trickyStrings {
		ids := tok.Encode(s)
		got, err := tok.Decode(ids)
		if err != nil {
			t.Fatalf("Decode(Encode(%q)): %v", s, err)
		}
		if got != s {
			t.Errorf("Decode(Encode(%q)) = %q (pieces %q)", s, got, tok.EncodePieces(s))
		}
		pieces := tok.EncodePieces(s)
		if len(pieces) != len(ids) {
			t.Fatalf("EncodePieces(%q) has %d pieces, Encode %d ids", s, len(pieces), len(ids))
		}
		for i, id := range ids {
			if id < byteBase {
				t.Errorf("Encode(%q) emits special token %d", s, id)
			}
			if pieces[i] != tok.Token(id) {
				t.Errorf("EncodePieces(%q)[%d] = %q, Token(%d) = %q", s, i, pieces[i], id, tok.Token(id))
			}
		}
	}
}

func TestEncodeExamples(t *testing.T) {
	tok := trainSmall(t)
	byteID := func(b byte) int { return byteBase + int(b) }
	tests := []struct {
		in   string
		want []int    // nil: not checked
		pcs  []string // nil: not checked
	}{
		{in: "", want: []int{}},
		{in: "\n", want: []int{byteID('\n')}},
		{in: "\t", want: []int{byteID('\t')}},
		{in: "▁", want: []int{byteID(0xE2), byteID(0x96), byteID(0x81)}},
		{in: "\xff", want: []int{byteID(0xFF)}},
		{in: "€", want: []int{byteID(0xE2), byteID(0x82), byteID(0xAC)}}, // not in the alphabet
		{in: " ", pcs: []string{"▁"}},
		{in: "  ", pcs: []string{"▁", "▁"}},
	}
	for _, tc := range tests {
		got := tok.Encode(tc.in)
		if tc.want != nil && !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
		}
		if tc.pcs != nil && !slices.Equal(tok.EncodePieces(tc.in), tc.pcs) {
			t.Errorf("EncodePieces(%q) = %q, want %q", tc.in, tok.EncodePieces(tc.in), tc.pcs)
		}
	}
	// A frequent word becomes one token, and merges respect word boundaries.
	if p := tok.EncodePieces(" Zukunft"); len(p) != 1 || p[0] != "▁Zukunft" {
		t.Errorf("EncodePieces(%q) = %q, want one token", " Zukunft", p)
	}
	for _, p := range tok.EncodePieces("Die Zukunft der Europas") {
		if strings.Contains(p[1:], "▁") {
			t.Errorf("piece %q crosses a word boundary", p)
		}
	}
}

func TestAccessorsAndDecode(t *testing.T) {
	tok := trainSmall(t)
	for id, want := range []string{"<pad>", "<s>", "</s>", "<unk>"} {
		if got := tok.Token(id); got != want {
			t.Errorf("Token(%d) = %q, want %q", id, got, want)
		}
	}
	if tok.Token(PadID) != "<pad>" || tok.Token(BOSID) != "<s>" || tok.Token(EOSID) != "</s>" || tok.Token(UnkID) != "<unk>" {
		t.Error("special id constants do not match the vocabulary")
	}
	if got := tok.Token(byteBase + 0x0A); got != "<0x0A>" {
		t.Errorf("Token(%d) = %q, want <0x0A>", byteBase+0x0A, got)
	}
	for _, id := range []int{-1, tok.Size(), tok.Size() + 100} {
		if got := tok.Token(id); got != "" {
			t.Errorf("Token(%d) = %q, want \"\"", id, got)
		}
	}
	for id := range tok.Size() {
		if got, ok := tok.ID(tok.Token(id)); !ok || got != id {
			t.Fatalf("ID(Token(%d)) = %d, %v", id, got, ok)
		}
	}
	if _, ok := tok.ID("no such token"); ok {
		t.Error("ID of an unknown token reports ok")
	}

	ids := append([]int{BOSID}, tok.Encode("Guten Morgen")...)
	ids = append(ids, EOSID, PadID, PadID, UnkID)
	if got, err := tok.Decode(ids); err != nil || got != "Guten Morgen" {
		t.Errorf("Decode with specials = %q, %v; want %q", got, err, "Guten Morgen")
	}
	for _, bad := range []int{-1, tok.Size()} {
		_, err := tok.Decode([]int{BOSID, bad})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("id %d at index 1", bad)) {
			t.Errorf("Decode with id %d: err = %v", bad, err)
		}
	}
	// Byte tokens decode to raw bytes, even when they are not UTF-8 or
	// spell the meta symbol.
	raw := []int{byteBase + 0xE2, byteBase + 0x96, byteBase + 0x81, byteBase + 0xFF}
	if got, _ := tok.Decode(raw); got != "▁\xff" {
		t.Errorf("Decode(bytes) = %q", got)
	}
}

// TestClassicMerges is the example of Sennrich et al. (low ×5, lower ×2,
// newest ×6, widest ×3), each word after a space. Counts: es and st 9, we 8
// … ties go to the smaller left then right string, and "▁" sorts after
// ASCII. Worked by hand:
//
//	1 e s     (9, beats s t)    6 e w    (6: ▁n ne ew w·est; e < n < w < ▁)
//	2 es t    (9)               7 ew est (6)
//	3 l o     (7: ▁l lo ow)     8 n ewest
//	4 lo w    (7: lo < ▁)       9 ▁ newest
//	5 ▁ low   (7)
func TestClassicMerges(t *testing.T) {
	var texts []string
	for w, n := range map[string]int{"low": 5, "lower": 2, "newest": 6, "widest": 3} {
		for range n {
			texts = append(texts, " "+w)
		}
	}
	wantAlpha := strings.Split("d e i l n o r s t w ▁", " ")
	wantMerges := [][2]string{
		{"e", "s"}, {"es", "t"}, {"l", "o"}, {"lo", "w"}, {"▁", "low"},
		{"e", "w"}, {"ew", "est"}, {"n", "ewest"}, {"▁", "newest"},
	}
	tok, err := Train(texts, TrainOptions{VocabSize: alphaBase + len(wantAlpha) + len(wantMerges)})
	if err != nil {
		t.Fatal(err)
	}
	if got := tokAlphabet(tok); !slices.Equal(got, wantAlpha) {
		t.Errorf("alphabet = %q, want %q", got, wantAlpha)
	}
	if got := tokMerges(tok); !slices.Equal(got, wantMerges) {
		t.Errorf("merges = %q\nwant     %q", got, wantMerges)
	}
	if id, _ := tok.ID("▁newest"); id != tok.Size()-1 {
		t.Errorf("ID(▁newest) = %d, want the last id %d", id, tok.Size()-1)
	}
	if got := tok.EncodePieces(" lowest"); !slices.Equal(got, []string{"▁low", "est"}) {
		t.Errorf("EncodePieces(\" lowest\") = %q, want [▁low est]", got)
	}
	// Training on without a size limit stops when pairs become rarer than
	// MinFrequency, and the reference agrees on where.
	full, err := Train(texts, TrainOptions{VocabSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	_, refMerges := refTrain(texts, 1000, DefaultMinFrequency)
	if got := tokMerges(full); !slices.Equal(got, refMerges) {
		t.Errorf("untruncated merges = %q\nreference %q", got, refMerges)
	}
}

func TestDeterminism(t *testing.T) {
	a := trainSmall(t)
	b := trainSmall(t)
	shuffled := slices.Clone(smallCorpus)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) {
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	})
	c, err := Train(shuffled, TrainOptions{VocabSize: smallVocab})
	if err != nil {
		t.Fatal(err)
	}
	dirs := make([]string, 3)
	for i, tok := range []*Tokenizer{a, b, c} {
		dirs[i] = t.TempDir()
		if err := tok.Save(dirs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{VocabFile, MergesFile} {
		want, _ := os.ReadFile(filepath.Join(dirs[0], name))
		for _, d := range dirs[1:] {
			if got, _ := os.ReadFile(filepath.Join(d, name)); !bytes.Equal(got, want) {
				t.Errorf("%s differs between training runs (%s)", name, d)
			}
		}
	}
	if len(a.merges) < 100 {
		t.Errorf("only %d merges learned; the test corpus is too small to mean much", len(a.merges))
	}
}

// randomText draws n characters from pool, which is rich in spaces, repeats
// and characters needing byte fallback.
func randomText(rng *rand.Rand, pool []string, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(pool[rng.IntN(len(pool))])
	}
	return b.String()
}

var randomPool = []string{"a", "a", "a", "b", "b", "c", "ä", "ß", " ", " ", "▁", "\t", "\n", "<", ">", "s", ".", "\xff", "😀", "\u2028"}

func TestTrainMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := range 150 {
		texts := make([]string, 5+rng.IntN(40))
		for i := range texts {
			texts[i] = randomText(rng, randomPool, rng.IntN(30))
		}
		minFreq := 1 + rng.IntN(3)
		refAlpha, refMerges := refTrain(texts, 1<<30, minFreq)
		vocabSize := alphaBase + len(refAlpha) + rng.IntN(len(refMerges)+5)
		refAlpha, refMerges = refTrain(texts, vocabSize, minFreq)
		tok, err := Train(texts, TrainOptions{VocabSize: vocabSize, MinFrequency: minFreq})
		if err != nil {
			t.Fatal(err)
		}
		if got := tokAlphabet(tok); !slices.Equal(got, refAlpha) {
			t.Fatalf("iteration %d: alphabet %q, reference %q", iter, got, refAlpha)
		}
		if got := tokMerges(tok); !slices.Equal(got, refMerges) {
			t.Fatalf("iteration %d (vocab %d, min %d): merges\n%q\nreference\n%q\ntexts %q", iter, vocabSize, minFreq, got, refMerges, texts)
		}
		if tok.Size() > vocabSize {
			t.Fatalf("Size %d > VocabSize %d", tok.Size(), vocabSize)
		}
	}
}

// TestTrainTokenCollisions trains on text spelling special and byte tokens
// (where the pair "<s" ">" becomes the most frequent at some point) and on
// long runs: no token may appear twice, and the files must load.
func TestTrainTokenCollisions(t *testing.T) {
	var texts []string
	for i := range 30 {
		texts = append(texts, "<s> <pad> </s> <unk> <0x41> <0x0A>", strings.Repeat(".", 2+i%9), strings.Repeat("a", 1+i%13)+" "+strings.Repeat("-", i%7))
	}
	tok, err := Train(texts, TrainOptions{VocabSize: 2000})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for id, s := range tok.tokens {
		if prev, dup := seen[s]; dup {
			t.Fatalf("token %q has ids %d and %d", s, prev, id)
		}
		seen[s] = id
	}
	_, refMerges := refTrain(texts, 2000, DefaultMinFrequency)
	if got := tokMerges(tok); !slices.Equal(got, refMerges) {
		t.Errorf("merges %q\nreference %q", got, refMerges)
	}
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err != nil {
		t.Fatal(err)
	}
	for _, s := range texts {
		if got, _ := tok.Decode(tok.Encode(s)); got != s {
			t.Errorf("round trip of %q gave %q", s, got)
		}
	}
	if p := tok.EncodePieces("<s>"); slices.Contains(p, "<s>") {
		t.Errorf("text \"<s>\" encodes to the special token: %q", p)
	}
}

func TestEncodeMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var texts []string
	for range 300 {
		texts = append(texts, randomText(rng, randomPool, rng.IntN(40)))
	}
	tok, err := Train(texts, TrainOptions{VocabSize: 400})
	if err != nil {
		t.Fatal(err)
	}
	if len(tok.merges) < 50 {
		t.Fatalf("only %d merges", len(tok.merges))
	}
	ref := newRefEncoder(tok)
	for range 2000 {
		// Long strings without spaces exercise the heap merger.
		s := randomText(rng, randomPool[:8], rng.IntN(3*heapThreshold))
		if rng.IntN(2) == 0 {
			s = randomText(rng, randomPool, rng.IntN(60))
		}
		want := ref.encode(s)
		if got := tok.EncodePieces(s); !slices.Equal(got, want) {
			t.Fatalf("EncodePieces(%q) = %q, reference %q", s, got, want)
		}
		if got, _ := tok.Decode(tok.Encode(s)); got != s {
			t.Fatalf("round trip of %q gave %q", s, got)
		}
	}
	// Both mergers directly, on the same words.
	for range 500 {
		w := randomText(rng, []string{"a", "b", "c", "a", "ä"}, 1+rng.IntN(120))
		syms := tok.alpha.appendSymbols(nil, w)
		short := tok.mergeShort(slices.Clone(syms))
		long := tok.mergeLong(slices.Clone(syms))
		if !slices.Equal(short, long) {
			t.Fatalf("word %q: mergeShort %v, mergeLong %v", w, short, long)
		}
	}
}

func TestEncodeLongInput(t *testing.T) {
	tok := trainSmall(t)
	s := strings.Repeat("Zukunftsfähigkeit", 60000) // ~1 MB, one word
	start := time.Now()
	ids := tok.Encode(s)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("encoding 1 MB without spaces took %v", d)
	}
	if got, _ := tok.Decode(ids); got != s {
		t.Error("round trip of a long word failed")
	}
}

func TestTrainOptionsErrors(t *testing.T) {
	tests := []struct {
		opt  TrainOptions
		want string
	}{
		{TrainOptions{}, "VocabSize must be positive"},
		{TrainOptions{VocabSize: 270}, "below the"},
		{TrainOptions{VocabSize: 1000, MinFrequency: -1}, "negative"},
	}
	for _, tc := range tests {
		_, err := Train(smallCorpus, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Train(%+v): err = %v, want %q", tc.opt, err, tc.want)
		}
	}
	// An empty corpus gives a byte-only tokenizer that still round-trips.
	tok, err := Train(nil, TrainOptions{VocabSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Size() != alphaBase {
		t.Errorf("Size = %d, want %d", tok.Size(), alphaBase)
	}
	if got, _ := tok.Decode(tok.Encode("Grüße ▁ \xff")); got != "Grüße ▁ \xff" {
		t.Errorf("byte-only round trip gave %q", got)
	}
	// MinFrequency 1 keeps a character seen once.
	tok, err = Train([]string{"x"}, TrainOptions{VocabSize: 1000, MinFrequency: 1})
	if err != nil || tok.Size() != alphaBase+1 {
		t.Errorf("MinFrequency 1: %v, Size %d", err, tok.Size())
	}
}

func TestTrainContextAndProgress(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	_, err := TrainContext(ctx, smallCorpus, TrainOptions{VocabSize: 600, Progress: func(done, max int) {
		calls++
		if done == 10 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled training: err = %v", err)
	}
	if calls < 10 || calls > 10+256 {
		t.Errorf("%d progress calls after cancelling at 10", calls)
	}
	last, lastMax := 0, 0
	tok, err := Train(smallCorpus, TrainOptions{VocabSize: 600, Progress: func(done, max int) { last, lastMax = done, max }})
	if err != nil {
		t.Fatal(err)
	}
	if last != len(tok.merges) || lastMax != 600-alphaBase-tok.numAlpha {
		t.Errorf("last progress (%d, %d); %d merges, max %d", last, lastMax, len(tok.merges), 600-alphaBase-tok.numAlpha)
	}
}

func TestConcurrentEncode(t *testing.T) {
	want := trainSmall(t)
	tok := trainSmall(t)
	tok.cache.limit = 50 // so that the cache is emptied while in use
	rng := rand.New(rand.NewPCG(7, 8))
	inputs := slices.Clone(trickyStrings)
	for range 200 {
		inputs = append(inputs, randomText(rng, []string{"Zu", "kunft", " die", "ä", " ", "Straße", "x", "▁"}, rng.IntN(20)))
	}
	expected := make([][]int, len(inputs))
	for i, s := range inputs {
		expected[i] = want.Encode(s)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 5 {
				for k := range inputs {
					i := (k*(g+1) + round) % len(inputs)
					if got := tok.Encode(inputs[i]); !slices.Equal(got, expected[i]) {
						errs <- fmt.Sprintf("goroutine %d: Encode(%q) = %v, want %v", g, inputs[i], got, expected[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := len(tok.cache.m); n > 50 {
		t.Errorf("cache holds %d words, limit 50", n)
	}
}
