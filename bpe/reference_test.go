package bpe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds deliberately simple reference implementations, written
// from the package doc rather than from the fast code, that the tests
// compare the trainer and encoder against. They work on token strings, not
// ids, and recompute everything at every step.

// refSym is one symbol of a word: a token string, and whether it is a byte
// token (which never merges).
type refSym struct {
	s     string
	isByt bool
}

// refWords splits s into words: a word begins at every space.
func refWords(s string) []string {
	parts := strings.Split(s, " ")
	var words []string
	if parts[0] != "" {
		words = append(words, parts[0])
	}
	for _, p := range parts[1:] {
		words = append(words, " "+p)
	}
	return words
}

// refCandidate returns the alphabet character that would represent the
// input character of the given UTF-8 encoding, if any.
func refCandidate(enc string) (string, bool) {
	r, size := utf8.DecodeRuneInString(enc)
	switch {
	case enc == " ":
		return "▁", true
	case enc == "▁":
		return "", false
	case r == utf8.RuneError && size == 1:
		return "", false
	case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
		return "", false
	}
	return enc, true
}

// refChars splits a word into the UTF-8 encodings of its characters, an
// invalid byte counting as one character.
func refChars(w string) []string {
	var out []string
	for len(w) > 0 {
		_, size := utf8.DecodeRuneInString(w)
		out = append(out, w[:size])
		w = w[size:]
	}
	return out
}

// refSymbols gives the initial symbols of word w for the alphabet.
func refSymbols(w string, alphabet map[string]bool) []refSym {
	var out []refSym
	for _, enc := range refChars(w) {
		if c, ok := refCandidate(enc); ok && alphabet[c] {
			out = append(out, refSym{s: c})
			continue
		}
		for i := 0; i < len(enc); i++ {
			out = append(out, refSym{s: fmt.Sprintf("<0x%02X>", enc[i]), isByt: true})
		}
	}
	return out
}

// refEncoder encodes with nothing but the token strings of the alphabet and
// the merges.
type refEncoder struct {
	alphabet map[string]bool
	rank     map[[2]string]int
}

func newRefEncoder(tok *Tokenizer) *refEncoder {
	e := &refEncoder{alphabet: map[string]bool{}, rank: map[[2]string]int{}}
	for id := alphaBase; id < alphaBase+tok.numAlpha; id++ {
		e.alphabet[tok.tokens[id]] = true
	}
	for r, m := range tok.merges {
		e.rank[[2]string{tok.tokens[m[0]], tok.tokens[m[1]]}] = r
	}
	return e
}

// encode returns the token strings of s: in each word, merge the leftmost
// adjacent pair of lowest rank until none is left.
func (e *refEncoder) encode(s string) []string {
	var out []string
	for _, w := range refWords(s) {
		syms := refSymbols(w, e.alphabet)
		for {
			best, pos := -1, -1
			for i := 0; i+1 < len(syms); i++ {
				if syms[i].isByt || syms[i+1].isByt {
					continue
				}
				if r, ok := e.rank[[2]string{syms[i].s, syms[i+1].s}]; ok && (best < 0 || r < best) {
					best, pos = r, i
				}
			}
			if pos < 0 {
				break
			}
			syms[pos].s += syms[pos+1].s
			syms = append(syms[:pos+1], syms[pos+2:]...)
		}
		for _, s := range syms {
			out = append(out, s.s)
		}
	}
	return out
}

// refTrain trains by recounting every pair of every word at every step.
// It returns the alphabet and the merges as strings.
func refTrain(texts []string, vocabSize, minFreq int) ([]string, [][2]string) {
	freq := map[string]int{}
	for _, t := range texts {
		for _, w := range refWords(t) {
			freq[w]++
		}
	}
	chars := map[string]int{}
	for w, f := range freq {
		for _, enc := range refChars(w) {
			if c, ok := refCandidate(enc); ok {
				chars[c] += f
			}
		}
	}
	alphabet := map[string]bool{}
	var alpha []string
	for c, n := range chars {
		if n >= minFreq {
			alphabet[c] = true
			alpha = append(alpha, c)
		}
	}
	sortStrings(alpha)
	vocab := map[string]bool{"<pad>": true, "<s>": true, "</s>": true, "<unk>": true}
	for b := range 256 {
		vocab[fmt.Sprintf("<0x%02X>", b)] = true
	}
	for _, c := range alpha {
		vocab[c] = true
	}
	type word struct {
		syms []refSym
		freq int
	}
	var words []word
	for w, f := range freq {
		words = append(words, word{refSymbols(w, alphabet), f})
	}
	var merges [][2]string
	for len(vocab) < vocabSize {
		counts := map[[2]string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.syms); i++ {
				if !w.syms[i].isByt && !w.syms[i+1].isByt {
					counts[[2]string{w.syms[i].s, w.syms[i+1].s}] += w.freq
				}
			}
		}
		var best [2]string
		bestN := 0
		for p, n := range counts {
			if vocab[p[0]+p[1]] {
				continue
			}
			if n > bestN || n == bestN && (p[0] < best[0] || p[0] == best[0] && p[1] < best[1]) {
				best, bestN = p, n
			}
		}
		if bestN == 0 || bestN < minFreq {
			break
		}
		merges = append(merges, best)
		vocab[best[0]+best[1]] = true
		for wi := range words {
			s := words[wi].syms
			var out []refSym
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && !s[i].isByt && !s[i+1].isByt && s[i].s == best[0] && s[i+1].s == best[1] {
					out = append(out, refSym{s: best[0] + best[1]})
					i++
				} else {
					out = append(out, s[i])
				}
			}
			words[wi].syms = out
		}
	}
	return alpha, merges
}

// sortStrings is an insertion sort, to keep the reference free of the
// sorting the fast code uses.
func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// tokAlphabet and tokMerges return what a Tokenizer learned, as strings.
func tokAlphabet(tok *Tokenizer) []string {
	return append([]string(nil), tok.tokens[alphaBase:alphaBase+tok.numAlpha]...)
}

func tokMerges(tok *Tokenizer) [][2]string {
	var out [][2]string
	for _, m := range tok.merges {
		out = append(out, [2]string{tok.tokens[m[0]], tok.tokens[m[1]]})
	}
	return out
}
