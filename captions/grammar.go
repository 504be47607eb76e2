package captions

import (
	"errors"
	"fmt"
	"strings"
)

// Kind says which data set an item comes from.
type Kind uint8

const (
	// Digit items are MNIST digits, named by their number spelled out.
	Digit Kind = iota
	// Fashion items are Fashion-MNIST articles of clothing.
	Fashion
)

// Phrase is what a caption says of one item: which object, and whether it
// is small. Its noun phrase is "a"/"an", "small" if Small, and the noun.
type Phrase struct {
	Kind  Kind
	Class int // the label in its data set, 0..9
	Small bool
}

// Relation joins two consecutive items of a caption.
type Relation uint8

const (
	// And joins items whose columns are two or more apart.
	And Relation = iota
	// Above joins an item to the one below it in the same column.
	Above
	// LeftOf joins an item to the one in the next column.
	LeftOf
)

// digitWords name the digits, by label.
var digitWords = [10]string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}

// fashionWords name Fashion-MNIST's classes, by label; "ankle boot" is two
// words.
var fashionWords = [10][]string{{"top"}, {"trouser"}, {"pullover"}, {"dress"}, {"coat"}, {"sandal"}, {"shirt"}, {"sneaker"}, {"bag"}, {"ankle", "boot"}}

// relationWords spell each relation.
var relationWords = [...][]string{And: {"and"}, Above: {"above"}, LeftOf: {"to", "the", "left", "of"}}

// EOS is the end-of-sequence token's string.
const EOS = "<eos>"

// Vocab is the captions' vocabulary: every word the grammar uses, then
// EOS. A caption's tokens are indices into it.
var Vocab = func() []string {
	v := []string{"a", "an", "small"}
	v = append(v, digitWords[:]...)
	for _, w := range fashionWords {
		v = append(v, w...)
	}
	for _, w := range relationWords {
		v = append(v, w...)
	}
	return append(v, EOS)
}()

// EOSID is EOS's index in Vocab.
var EOSID = len(Vocab) - 1

// tokenID maps each word to its index in Vocab.
var tokenID = func() map[string]int {
	m := make(map[string]int, len(Vocab))
	for i, w := range Vocab {
		m[w] = i
	}
	return m
}()

// noun returns the phrase's noun, one or two words.
func (p Phrase) noun() []string {
	if p.Kind == Digit {
		return []string{digitWords[p.Class]}
	}
	return fashionWords[p.Class]
}

// Words spells the phrase: its article, "small" if it is, and its noun.
func (p Phrase) Words() []string {
	rest := p.noun()
	if p.Small {
		rest = append([]string{"small"}, rest...)
	}
	return append([]string{article(rest[0])}, rest...)
}

// article is "an" before a word that starts with a vowel sound: in this
// vocabulary eight and ankle ("a one", as one starts with a w sound).
func article(next string) string {
	if next == "eight" || next == "ankle" {
		return "an"
	}
	return "a"
}

// Caption is a caption's structure: its phrases in order and the relation
// between each phrase and the next (len(Relations) = len(Phrases) − 1).
type Caption struct {
	Phrases   []Phrase
	Relations []Relation
}

// Words spells the caption:
//
//	caption  = phrase { relation phrase }
//	phrase   = article [ "small" ] noun
//	relation = "and" | "above" | "to the left of"
func (c Caption) Words() []string {
	var w []string
	for i, p := range c.Phrases {
		if i > 0 {
			w = append(w, relationWords[c.Relations[i-1]]...)
		}
		w = append(w, p.Words()...)
	}
	return w
}

// Tokens is the caption as indices into Vocab (no EOS).
func (c Caption) Tokens() []int {
	words := c.Words()
	ids := make([]int, len(words))
	for i, w := range words {
		ids[i] = tokenID[w]
	}
	return ids
}

// String is the caption as text, words separated by spaces.
func (c Caption) String() string { return strings.Join(c.Words(), " ") }

// ErrSyntax is wrapped by every error of Parse and ParseTokens.
var ErrSyntax = errors.New("not a caption of the grammar")

// Parse reads a caption's text (words separated by white space) back into
// its structure. It accepts exactly the captions Words spells.
func Parse(text string) (Caption, error) {
	return parseWords(strings.Fields(text))
}

// ParseTokens is Parse over token ids (no EOS).
func ParseTokens(ids []int) (Caption, error) {
	words := make([]string, len(ids))
	for i, id := range ids {
		if id < 0 || id >= EOSID {
			return Caption{}, fmt.Errorf("token %d at %d is not a word of the vocabulary: %w", id, i, ErrSyntax)
		}
		words[i] = Vocab[id]
	}
	return parseWords(words)
}

// parseWords is a recursive-descent parser of the grammar in Caption.Words.
func parseWords(words []string) (Caption, error) {
	var c Caption
	i := 0
	fail := func(what string) (Caption, error) {
		at := "the end"
		if i < len(words) {
			at = fmt.Sprintf("%q (word %d)", words[i], i+1)
		}
		return Caption{}, fmt.Errorf("want %s at %s: %w", what, at, ErrSyntax)
	}
	for {
		if len(c.Phrases) > 0 {
			if i == len(words) {
				return c, nil
			}
			r, n, ok := matchRelation(words[i:])
			if !ok {
				return fail("a relation (and, above, to the left of)")
			}
			c.Relations = append(c.Relations, r)
			i += n
		}
		if i == len(words) || (words[i] != "a" && words[i] != "an") {
			return fail("an article (a, an)")
		}
		art, at := words[i], i
		i++
		var p Phrase
		if i < len(words) && words[i] == "small" {
			p.Small = true
			i++
		}
		n, ok := matchNoun(words[i:], &p)
		if !ok {
			return fail("a digit or an article of clothing")
		}
		if want := article(words[at+1]); art != want {
			i = at
			return fail(fmt.Sprintf("the article %q", want))
		}
		i += n
		c.Phrases = append(c.Phrases, p)
	}
}

// matchRelation matches a relation at the start of words.
func matchRelation(words []string) (Relation, int, bool) {
	for r, rw := range relationWords {
		if hasPrefix(words, rw) {
			return Relation(r), len(rw), true
		}
	}
	return 0, 0, false
}

// matchNoun matches a noun at the start of words, setting p's kind and
// class.
func matchNoun(words []string, p *Phrase) (int, bool) {
	for c, w := range digitWords {
		if len(words) > 0 && words[0] == w {
			p.Kind, p.Class = Digit, c
			return 1, true
		}
	}
	for c, fw := range fashionWords {
		if hasPrefix(words, fw) {
			p.Kind, p.Class = Fashion, c
			return len(fw), true
		}
	}
	return 0, false
}

func hasPrefix(words, prefix []string) bool {
	if len(words) < len(prefix) {
		return false
	}
	for i, w := range prefix {
		if words[i] != w {
			return false
		}
	}
	return true
}
