package bleu

import (
	"errors"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The expected tokens were produced by a reconstruction of sacreBLEU 2.x's
// Tokenizer13a (its four regular expressions and its entity and
// line-break replacements, run with Python's re module).
func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want string // tokens joined by "·"
	}{
		{"", ""},
		{"   ", ""},
		{"Hello, world!", "Hello·,·world·!"},
		{"It's 3.5 km to the U.S.A., isn't it?", "It's·3.5·km·to·the·U·.·S·.·A·.·,·isn't·it·?"},
		{"The price rose by 1,000 dollars (10%) in 1990-2000.", "The·price·rose·by·1,000·dollars·(·10·%·)·in·1990·-·2000·."},
		{`He said: "Don't go!" &amp; left.`, `He·said·:·"·Don't·go·!·"·&·left·.`},
		{"well-known e-mail", "well-known·e-mail"},
		{"a.5 .5 5. 5.a ,5 5,", "a·.·5·.·5·5·.·5·.·a·,·5·5·,"},
		{"x..y", "x·.·.·y"},
		{"1-2-3", "1·-·2·-·3"},
		{"-1 a-b 9-", "-1·a-b·9·-"},
		{"&quot;Ja&quot; &lt;b&gt; &amp;amp;", `"·Ja·"·<·b·>·&·amp·;`},
		{"It’s „Ja“ … – —", "It’s·„Ja“·…·–·—"},
		{"end-\nof line<skipped>", "endof·line"},
		{"tab\there\u00a0nbsp\u001cx", "tab·here·nbsp·x"},
		{"C++ a/b c_d e~f [g] {h} `i` ^j \\k @l #m $n *o +p =q |r", "C·+·+·a·/·b·c·_·d·e·~·f·[·g·]·{·h·}·`·i·`·^·j·\\·k·@·l·#·m·$·n·*·o·+·p·=·q·|·r"},
		{"Mr. Smith's 2.", "Mr·.·Smith's·2·."},
		{"...", ".·.·."},
		{"3.,4", "3·.·,·4"},
		{"Ich gebe mein Bestes für Äpfel.", "Ich·gebe·mein·Bestes·für·Äpfel·."},
	}
	for _, tt := range tests {
		got := strings.Join(Tokenize(tt.in), "·")
		if got != tt.want {
			t.Errorf("Tokenize(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if ref := strings.Join(refTokenize(tt.in), "·"); ref != tt.want {
			t.Errorf("refTokenize(%q) = %q, want %q (the test's reference is wrong)", tt.in, ref, tt.want)
		}
	}
}

// TestPySpace pins the white space of Python's str.split, which sacreBLEU
// uses to cut tokens, to the list Python 3 reports.
func TestPySpace(t *testing.T) {
	want := []rune{0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680,
		0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
		0x2028, 0x2029, 0x202f, 0x205f, 0x3000}
	var got []rune
	for c := rune(0); c <= unicode.MaxRune; c++ {
		if isPySpace(c) {
			got = append(got, c)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("isPySpace holds for %U, want %U", got, want)
	}
}

// refTokenize is an independent implementation of 13a: the regular
// expressions of sacreBLEU's TokenizerRegexp, run with package regexp,
// whose leftmost-first, non-overlapping replacement is Python's re.sub for
// these patterns.
var refRes = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile("([\\{-\\~\\[-\\` -\\&\\(-\\+\\:-\\@\\/])"), " $1 "},
	{regexp.MustCompile(`([^0-9])([\.,])`), "$1 $2 "},
	{regexp.MustCompile(`([\.,])([^0-9])`), " $1 $2"},
	{regexp.MustCompile(`([0-9])(-)`), "$1 $2 "},
}

func refTokenize(line string) []string {
	line = strings.ReplaceAll(line, "<skipped>", "")
	line = strings.ReplaceAll(line, "-\n", "")
	line = strings.ReplaceAll(line, "\n", " ")
	if strings.Contains(line, "&") {
		line = strings.ReplaceAll(line, "&quot;", `"`)
		line = strings.ReplaceAll(line, "&amp;", "&")
		line = strings.ReplaceAll(line, "&lt;", "<")
		line = strings.ReplaceAll(line, "&gt;", ">")
	}
	line = " " + line + " "
	for _, r := range refRes {
		line = r.re.ReplaceAllString(line, r.repl)
	}
	return strings.FieldsFunc(line, isPySpace)
}

// refBLEU is sacreBLEU's compute_bleu with smooth_method="none", written
// without sharing code with Corpus.
func refBLEU(hyps, refs []string) (bleu float64, prec [4]float64, bp float64) {
	var correct, total [4]int
	sysLen, refLen := 0, 0
	for i := range hyps {
		h, r := refTokenize(hyps[i]), refTokenize(refs[i])
		sysLen += len(h)
		refLen += len(r)
		for n := 1; n <= 4; n++ {
			rc := map[string]int{}
			for j := 0; j+n <= len(r); j++ {
				rc[strings.Join(r[j:j+n], "\x00")]++
			}
			hc := map[string]int{}
			for j := 0; j+n <= len(h); j++ {
				hc[strings.Join(h[j:j+n], "\x00")]++
				total[n-1]++
			}
			for g, c := range hc {
				correct[n-1] += min(c, rc[g])
			}
		}
	}
	logSum := 0.0
	for n := range 4 {
		if total[n] > 0 && correct[n] > 0 {
			prec[n] = 100 * float64(correct[n]) / float64(total[n])
			logSum += math.Log(prec[n])
		} else {
			logSum += -9999999999 // sacreBLEU's my_log(0)
		}
	}
	bp = 1
	if sysLen < refLen {
		bp = 0
		if sysLen > 0 {
			bp = math.Exp(1 - float64(refLen)/float64(sysLen))
		}
	}
	return bp * math.Exp(logSum/4), prec, bp
}

func TestCorpusHandComputed(t *testing.T) {
	long := "the quick brown fox jumps over the lazy dog"
	tests := []struct {
		name       string
		hyps, refs []string
		want       string
	}{
		{"perfect", []string{long, "Ich gebe mein Bestes für Äpfel."}, []string{long, "Ich gebe mein Bestes für Äpfel."},
			"BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 16 ref_len = 16)"},
		{"no overlap", []string{"a b c d e"}, []string{"v w x y z"},
			"BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 5 ref_len = 5)"},
		// No 4-gram matches: 0 without smoothing even though 1–3-grams match.
		{"no 4-gram", []string{"a b c x d e f"}, []string{"a b c y d e f"},
			"BLEU = 0.00 85.7/66.7/40.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 7 ref_len = 7)"},
		// Too short for any 4-gram: a perfect but 3-token corpus scores 0.
		{"short", []string{"a b c"}, []string{"a b c"},
			"BLEU = 0.00 100.0/100.0/100.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 3 ref_len = 3)"},
		// Worked example. hyp "the cat sat on the mat" (6 tokens), ref "the
		// cat sat on a red mat" (7 tokens).
		//   unigrams: the(2, clipped to 1) cat sat on mat → 5/6
		//   bigrams: the cat, cat sat, sat on match; on the, the mat do not → 3/5
		//   trigrams: the cat sat, cat sat on → 2/4
		//   4-grams: the cat sat on → 1/3
		//   geometric mean = (5/6 · 3/5 · 2/4 · 1/3)^(1/4) = (1/12)^(1/4) = 0.537285
		//   BP = exp(1 − 7/6) = 0.846482
		//   BLEU = 100 · 0.846482 · 0.537285 = 45.48
		{"worked", []string{"the cat sat on the mat"}, []string{"the cat sat on a red mat"},
			"BLEU = 45.48 83.3/60.0/50.0/33.3 (BP = 0.846 ratio = 0.857 hyp_len = 6 ref_len = 7)"},
		// The hypothesis is longer than the reference: no brevity penalty;
		// the extra token lowers the precisions instead:
		// (6/7 · 5/6 · 4/5 · 3/4)^(1/4) = (3/7)^(1/4) = 0.8091.
		{"long hyp", []string{"the cat sat on the mat today"}, []string{"the cat sat on the mat"},
			"BLEU = 80.91 85.7/83.3/80.0/75.0 (BP = 1.000 ratio = 1.167 hyp_len = 7 ref_len = 6)"},
		{"empty hyp", []string{""}, []string{"a b c d"},
			"BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 0.000 ratio = 0.000 hyp_len = 0 ref_len = 4)"},
		// Cross-check: this corpus was scored by a reconstruction of
		// sacreBLEU 2.x (Tokenizer13a and compute_bleu, smooth "none"),
		// which printed exactly this line (BLEU 72.18255545581638).
		{"sacrebleu", []string{
			"It's 3.5 km to the U.S.A., isn't it?",
			"The price rose by 1,000 dollars (10%) in 1990-2000.",
			`He said: "Don't go!" & left.`,
			"Well-known facts — e.g. the sky is blue.",
			"I'll do my very best.",
		}, []string{
			"It is 3.5 km to the U.S.A., isn't it?",
			"The price rose by 1,000 dollars (10 %) between 1990-2000.",
			`He said: "Do not go!" and left.`,
			"Well-known facts, e.g. the sky is blue.",
			"I will do my very best.",
		}, "BLEU = 72.18 89.8/81.5/71.4/63.6 (BP = 0.950 ratio = 0.952 hyp_len = 59 ref_len = 62)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Corpus(tt.hyps, tt.refs)
			if err != nil {
				t.Fatal(err)
			}
			if s.String() != tt.want {
				t.Errorf("Corpus = %s\nwant     %s", s, tt.want)
			}
			if want, _, _ := refBLEU(tt.hyps, tt.refs); math.Abs(s.BLEU-want) > 1e-9 {
				t.Errorf("BLEU = %v, reference implementation %v", s.BLEU, want)
			}
		})
	}
	s, _ := Corpus([]string{"the cat sat on the mat"}, []string{"the cat sat on a red mat"})
	if want := 100 * math.Exp(-1.0/6) * math.Pow(1.0/12, 0.25); math.Abs(s.BLEU-want) > 1e-9 {
		t.Errorf("worked example BLEU = %v, want %v", s.BLEU, want)
	}
	if s.Matches != [4]int{5, 3, 2, 1} || s.Totals != [4]int{6, 5, 4, 3} {
		t.Errorf("counts %v/%v, want [5 3 2 1]/[6 5 4 3]", s.Matches, s.Totals)
	}
}

// TestCorpusSums checks that BLEU is a corpus statistic, not an average of
// sentence scores: the second sentence alone has no 4-gram and would score
// 0, yet the corpus sums matches and n-grams over both before dividing.
func TestCorpusSums(t *testing.T) {
	hyps := []string{"a b c d e", "f g h"}
	refs := []string{"a b c d x", "f g h"}
	s, err := Corpus(hyps, refs)
	if err != nil {
		t.Fatal(err)
	}
	// 1-grams 7/8, 2-grams 5/6, 3-grams 3/4, 4-grams 1/2.
	want := 100 * math.Pow(7.0/8*5.0/6*3.0/4*1.0/2, 0.25)
	if math.Abs(s.BLEU-want) > 1e-9 {
		t.Errorf("BLEU = %v, want %v", s.BLEU, want)
	}
}

func TestCorpusErrors(t *testing.T) {
	if _, err := Corpus([]string{"a"}, []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "1 hypotheses but 2 references") {
		t.Errorf("mismatched lengths: err = %v", err)
	}
	if _, err := Corpus(nil, nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty corpus: err = %v, want ErrEmpty", err)
	}
}

// TestCorpusRandom compares Corpus with the reference implementation on
// random corpora over a small vocabulary, where partial matches, clipping
// and both brevity cases all occur.
func TestCorpusRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := []string{"a", "b", "c", "d", "the", "1.5", "x,", "y.", "(z)", "-", "1-2", "don't"}
	sent := func() string {
		w := make([]string, rng.IntN(12))
		for i := range w {
			w[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(w, " ")
	}
	for range 300 {
		n := 1 + rng.IntN(6)
		hyps, refs := make([]string, n), make([]string, n)
		for i := range hyps {
			hyps[i], refs[i] = sent(), sent()
		}
		s, err := Corpus(hyps, refs)
		if err != nil {
			t.Fatal(err)
		}
		bleu, prec, bp := refBLEU(hyps, refs)
		if math.Abs(s.BLEU-bleu) > 1e-9 || s.Precisions != prec || math.Abs(s.BP-bp) > 1e-12 {
			t.Fatalf("Corpus(%q, %q) = %v, reference BLEU %v %v BP %v", hyps, refs, s, bleu, prec, bp)
		}
	}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"", "Hello, world!", "3.5-4,5", "&amp;lt; <skipped> -\n", "It’s „Ja“", "\xff\xfe", "a\u2028b\x1c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks := Tokenize(s)
		for _, tok := range toks {
			if tok == "" || strings.IndexFunc(tok, isPySpace) >= 0 || !utf8.ValidString(tok) {
				t.Fatalf("Tokenize(%q) has token %q", s, tok)
			}
		}
		if utf8.ValidString(s) {
			if ref := refTokenize(s); !slices.Equal(toks, ref) {
				t.Fatalf("Tokenize(%q) = %q, reference %q", s, toks, ref)
			}
		}
	})
}
