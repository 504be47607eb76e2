package corpus

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lenspec/lenspec/bleu"
)

// DefaultIterations is the default number of EM iterations of
// TrainLexicon: IBM Model 1's likelihood changes little after five.
const DefaultIterations = 5

// LexiconOptions configures TrainLexicon.
type LexiconOptions struct {
	// Iterations of EM; 0 means DefaultIterations.
	Iterations int
}

// Lexicon is a word-by-word translator learnt from parallel text: the
// baseline a neural translator must beat to show it learnt more than a
// dictionary lookup.
//
// It is IBM Model 1 (Brown et al., 1993) trained by EM on lower-cased
// tokens (bleu.Tokenize) in the direction t(target word | source word),
// with a NULL source word that absorbs target words without a source
// counterpart ("the", "to"). A source word translates to its most probable
// target word, ties broken by the lexicographically smallest; unknown
// source words are copied unchanged. No source word is dropped: Model 1
// has no target NULL, and dropping words by their expected fertility
// (aligned target words per occurrence below 0.5) was measured to cost
// about 1.5 BLEU on the Ding test split through the brevity penalty, since
// English needs more words than German.
type Lexicon struct {
	best     map[string]string // lower-cased source word → lower-cased target word
	truecase map[string]string // lower-cased target word → its usual spelling
}

// TrainLexicon trains a Lexicon on pairs (normally the training split).
// It is deterministic.
func TrainLexicon(pairs []Pair, opt LexiconOptions) *Lexicon {
	iters := opt.Iterations
	if iters <= 0 {
		iters = DefaultIterations
	}
	srcIDs := map[string]int32{"": 0} // 0 is NULL
	srcWords := []string{""}
	tgtIDs := map[string]int32{}
	var tgtWords []string
	id := func(ids map[string]int32, words *[]string, w string) int32 {
		i, ok := ids[w]
		if !ok {
			i = int32(len(*words))
			ids[w] = i
			*words = append(*words, w)
		}
		return i
	}
	spellings := map[string]map[string]int{}
	srcs := make([][]int32, len(pairs))
	tgts := make([][]int32, len(pairs))
	for k, p := range pairs {
		s := []int32{0}
		for _, w := range bleu.Tokenize(p.Src) {
			s = append(s, id(srcIDs, &srcWords, strings.ToLower(w)))
		}
		var t []int32
		for j, w := range bleu.Tokenize(p.Tgt) {
			low := strings.ToLower(w)
			t = append(t, id(tgtIDs, &tgtWords, low))
			if j > 0 { // the first word's capital says nothing about the word
				if spellings[low] == nil {
					spellings[low] = map[string]int{}
				}
				spellings[low][w]++
			}
		}
		srcs[k], tgts[k] = s, t
	}

	// The parameters t(e|f) live in one slice indexed by the sorted
	// (f, e) keys of all co-occurring pairs; each sentence pair's cells
	// are precomputed indices into it, so EM touches no map.
	var keys []uint64
	for k := range pairs {
		for _, e := range tgts[k] {
			for _, f := range srcs[k] {
				keys = append(keys, uint64(f)<<32|uint64(e))
			}
		}
	}
	params := slices.Clone(keys)
	slices.Sort(params)
	params = slices.Compact(params)
	cells := make([]int32, len(keys))
	for i, key := range keys {
		j, _ := slices.BinarySearch(params, key)
		cells[i] = int32(j)
	}
	keys = nil

	prob := make([]float64, len(params))
	for i := range prob {
		prob[i] = 1
	}
	count := make([]float64, len(params))
	total := make([]float64, len(srcWords))
	for range iters {
		clear(count)
		clear(total)
		off := 0
		for k := range pairs {
			ns := len(srcs[k])
			for range tgts[k] {
				row := cells[off : off+ns]
				off += ns
				z := 0.0
				for _, c := range row {
					z += prob[c]
				}
				if z == 0 {
					continue
				}
				for i, c := range row {
					a := prob[c] / z
					count[c] += a
					total[srcs[k][i]] += a
				}
			}
		}
		for i, key := range params {
			if tot := total[key>>32]; tot > 0 {
				prob[i] = count[i] / tot
			}
		}
	}

	l := &Lexicon{best: map[string]string{}, truecase: map[string]string{}}
	for i := 0; i < len(params); {
		f := int32(params[i] >> 32)
		bestE, bestP := int32(-1), -1.0
		for ; i < len(params) && int32(params[i]>>32) == f; i++ {
			e, p := int32(params[i]&0xffffffff), prob[i]
			if p > bestP || (p == bestP && tgtWords[e] < tgtWords[bestE]) {
				bestE, bestP = e, p
			}
		}
		if f != 0 {
			l.best[srcWords[f]] = tgtWords[bestE]
		}
	}
	for low, forms := range spellings {
		l.truecase[low] = usualSpelling(low, forms)
	}
	return l
}

// usualSpelling returns the most frequent spelling, preferring the
// lower-case one and then the smallest on ties, so that "I" and "Monday"
// come out capitalised and ordinary words do not.
func usualSpelling(low string, forms map[string]int) string {
	best, n := "", -1
	for f, c := range forms {
		if c > n || c == n && (f == low || best != low && f < best) {
			best, n = f, c
		}
	}
	return best
}

// Translate translates src word by word. Casing: a word whose translation
// is itself (a name, a number) keeps the source's spelling, others take
// their usual spelling in the training targets, and the first word is
// capitalised when the source is a sentence (see IsSentence); a capital
// on the first German word alone says nothing, as German nouns have one.
// Tokens are joined with spaces, closing up punctuation (see detokenize).
func (l *Lexicon) Translate(src string) string {
	toks := bleu.Tokenize(src)
	out := make([]string, 0, len(toks))
	for _, tok := range toks {
		low := strings.ToLower(tok)
		e, known := l.best[low]
		switch {
		case !known, e == low:
			out = append(out, tok)
		default:
			if tc, ok := l.truecase[e]; ok {
				e = tc
			}
			out = append(out, e)
		}
	}
	if len(out) > 0 && isSentence(normSpace(src)) {
		r, n := utf8.DecodeRuneInString(out[0])
		out[0] = string(unicode.ToUpper(r)) + out[0][n:]
	}
	return detokenize(out)
}

// detokenize joins tokens with spaces except before closing punctuation
// and after opening brackets; straight double quotes alternate between
// opening and closing. It is enough for BLEU, which tokenises again.
func detokenize(toks []string) string {
	var b strings.Builder
	noSpace := true // no space before the next token
	quoteOpen := false
	for _, t := range toks {
		closing := false
		switch t {
		case ".", ",", "!", "?", ";", ":", ")", "]", "}", "%":
			closing = true
		case `"`:
			closing = quoteOpen
		}
		if !noSpace && !closing {
			b.WriteByte(' ')
		}
		b.WriteString(t)
		noSpace = false
		switch t {
		case "(", "[", "{":
			noSpace = true
		case `"`:
			quoteOpen = !quoteOpen
			noSpace = quoteOpen
		}
	}
	return b.String()
}

// Len returns the number of source words the lexicon knows.
func (l *Lexicon) Len() int { return len(l.best) }
