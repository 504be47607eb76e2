package bleu

import (
	"strings"
	"unicode"
)

// Tokenize splits s the way sacreBLEU's default "13a" tokenizer (itself a
// port of mteval-v13a.pl, the WMT scorer) does, so that scores computed here
// can be compared with published sacreBLEU scores. It is case-sensitive.
//
// The rules, applied in this order to " " + s + " ":
//
//  1. "<skipped>" is deleted, "-\n" is deleted (a hyphenated line break),
//     "\n" becomes a space; if s contains "&", the entities &quot; &amp;
//     &lt; &gt; are replaced, in that order, by " & < >.
//  2. Each of the ASCII symbols { | } ~ [ \ ] ^ _ ` ! " # $ % & ( ) * + : ;
//     < = > ? @ / becomes a token of its own.
//  3. A period or comma is split off unless it sits between two digits
//     (3.5 and 1,000 stay whole); this is done as two left-to-right passes,
//     "not after a digit" then "not before a digit", exactly as 13a's
//     regular expressions do, so e.g. "a.5" and ".5" split but "3.5" does
//     not.
//  4. A hyphen after a digit is split off ("1990-2000" gives "1990 - 2000"),
//     any other hyphen stays inside its word ("well-known"), and the
//     apostrophe is never split ("don't", "it's", "Peter's" are one token).
//  5. The result is split at white space (Python's definition: Unicode
//     white space plus the separators U+001C–U+001F).
//
// Like 13a, non-ASCII punctuation (’ „ “ « » … – —) is not split off: "It’s"
// and "„Ja“" are single tokens. This is the only behaviour a reader might
// not expect, and it is kept because changing it would change the scores.
// The one deviation from sacreBLEU: invalid UTF-8 bytes, which a Python
// string cannot hold, are read as U+FFFD each.
func Tokenize(s string) []string {
	s = strings.ReplaceAll(s, "<skipped>", "")
	s = strings.ReplaceAll(s, "-\n", "")
	s = strings.ReplaceAll(s, "\n", " ")
	if strings.Contains(s, "&") {
		s = strings.ReplaceAll(s, "&quot;", `"`)
		s = strings.ReplaceAll(s, "&amp;", "&")
		s = strings.ReplaceAll(s, "&lt;", "<")
		s = strings.ReplaceAll(s, "&gt;", ">")
	}
	in := []rune(" " + s + " ")

	// Rule 2.
	r := make([]rune, 0, len(in)+len(in)/2)
	for _, c := range in {
		if isSymbol(c) {
			r = append(r, ' ', c, ' ')
		} else {
			r = append(r, c)
		}
	}
	// Rules 3 and 4: each is a two-character regular expression replaced
	// left to right without overlap, as Python's re.sub does.
	r = pairPass(r, func(a, b rune) bool { return !isDigit(a) && isPeriodComma(b) }, func(out []rune, a, b rune) []rune {
		return append(out, a, ' ', b, ' ') // ([^0-9])([\.,]) -> \1 \2 .
	})
	r = pairPass(r, func(a, b rune) bool { return isPeriodComma(a) && !isDigit(b) }, func(out []rune, a, b rune) []rune {
		return append(out, ' ', a, ' ', b) // ([\.,])([^0-9]) -> " \1 \2"
	})
	r = pairPass(r, func(a, b rune) bool { return isDigit(a) && b == '-' }, func(out []rune, a, b rune) []rune {
		return append(out, a, ' ', b, ' ') // ([0-9])(-) -> \1 \2 .
	})
	return strings.FieldsFunc(string(r), isPySpace)
}

// pairPass replaces every non-overlapping match of a two-rune pattern,
// scanning from the left like a regular-expression substitution.
func pairPass(in []rune, match func(a, b rune) bool, repl func(out []rune, a, b rune) []rune) []rune {
	out := make([]rune, 0, len(in)+len(in)/4)
	i := 0
	for i+1 < len(in) {
		if match(in[i], in[i+1]) {
			out = repl(out, in[i], in[i+1])
			i += 2
			continue
		}
		out = append(out, in[i])
		i++
	}
	return append(out, in[i:]...)
}

// isSymbol reports the characters of 13a's class [\{-\~\[-\` -\&\(-\+\:-\@\/].
func isSymbol(c rune) bool {
	switch {
	case c >= '{' && c <= '~', c >= '[' && c <= '`', c >= ' ' && c <= '&',
		c >= '(' && c <= '+', c >= ':' && c <= '@', c == '/':
		return true
	}
	return false
}

func isDigit(c rune) bool { return c >= '0' && c <= '9' }

func isPeriodComma(c rune) bool { return c == '.' || c == ',' }

// isPySpace is Python's str.isspace for one character, which sacreBLEU's
// final str.split() uses: Go's Unicode white space plus U+001C–U+001F.
func isPySpace(c rune) bool {
	return unicode.IsSpace(c) || (c >= 0x1c && c <= 0x1f)
}
