// Package corpus reads parallel German–English text for lenspec's
// translator, splits it for training and evaluation, and provides the
// dictionary-lookup baseline the translator is measured against.
//
// # Sources
//
// The main source is the Ding German–English dictionary that Debian ships
// in the package trans-de-en (ReadDing, pinned by DingSHA256). Its text is
// GPL-2+ and is never copied into lenspec: it is read from DingPath at run
// time. Users' own corpora are read with ReadTSV.
//
// # The Ding format and what ReadDing makes of it
//
// A line is "German :: English"; lines starting with '#' are comments. Each
// side is a list of sub-entries separated by " | " that align one-to-one
// across the sides (a headword, its inflected forms, example phrases and
// sentences). A line whose sides have different numbers of sub-entries
// cannot be aligned and is skipped whole (DingStats.MisalignedEntries; the
// pinned file has none). Inside a sub-entry, "; " separates alternatives.
//
// Alternatives: all alternatives of a sub-entry are synonyms, so any German
// one paired with any English one is a correct translation, but pairing
// all with all would turn one entry with n×m alternatives into n×m
// near-duplicate pairs that dominate training. So when both sides list the
// same number of alternatives they are paired i-th with i-th (Ding often
// lists parallel alternatives in parallel: "Eistee; kalter Tee :: iced
// tea; cold tea"); otherwise
// the first alternatives are paired and every further alternative of
// either side is paired with the first of the other side, its most common
// equivalent in Ding's ordering ("jdn. anrufen; jdn. telefonisch
// erreichen :: to phone sb." gives two pairs). Every alternative is used,
// and n+m−1 pairs at most are formed. Pairing only the first two when the
// counts differ would lose about 280,000 alternatives, a third of the
// phrase pairs and a tenth of the sentence pairs.
//
// Cleaning an alternative:
//   - annotations are removed: {…} (gender, part of speech), […] (register,
//     region, field), (…) remarks and optional words, and <…> alternative
//     spellings, nested or not. A bracket glued to the end of a word leaves
//     nothing ("colo(u)r" → "color", "Freund(e)" → "Freund"), any other
//     leaves a space. An alternative with unbalanced brackets is dropped
//     (DingStats.SkippedMarkup).
//   - a token "/ABC/" (an abbreviation following its term) is removed.
//   - slash alternatives inside a token keep the first: "hot/warm" →
//     "hot", "jdn./etw." → "jdn.", "I/he/she" → "I"; closing punctuation
//     of the last alternative is kept ("warm/hot." → "warm."). A token
//     starting with a slash is an alternative to the word before it and is
//     removed ("centre /center" → "centre"); after a token ending with a
//     slash the next token is removed ("sb./ sth." → "sb."). Slashes with a
//     digit on both sides ("1/2", "24/7") or an upper-case letter on both
//     sides ("I/O", "TCP/IP") are part of a term and kept, as are URLs.
//   - a free-standing " / " separates alternatives whose extent the text
//     does not show ("to walk / to run home", "in die Stadt / nach Hause
//     gehen"): guessing would create wrong sentences, so such
//     an alternative is dropped (DingStats.SkippedSlash).
//   - white space is collapsed to single spaces, spaces left before
//     , . ; : ! ? by a removal are closed, and leading or trailing , ; : are
//     trimmed. What has no letter or digit left is dropped
//     (DingStats.SkippedEmpty).
//
// What is kept: a pair is a sentence pair when both sides are sentences
// (see IsSentence); otherwise it is a phrase pair when both sides have at
// least DingOptions.MinWords words (default DefaultMinWords = 2); anything
// else, mostly single dictionary words, is dropped (DingStats.SkippedShort).
// Words are white-space separated tokens with a letter or digit.
//
// With the pinned file and the defaults, ReadDing reads 391,763 aligned
// sub-entry pairs and keeps 21,715 sentence pairs and 125,489 phrase pairs
// (21,694 and 124,727 unique after Dedup; with MinWords 3, 53,730 unique
// phrase pairs). Sentences average 7.2 German and 7.4 English words (99th
// percentile 17 and 18), phrases 3.0 and 3.5. SplitSentences with the
// default fractions and seed gives 1,092 dev and 1,018 test sentences and
// 144,155 training pairs; on that split the Lexicon baseline scores
// BLEU 7.6 on test (8.0 on dev).
//
// # Splitting
//
// Split and SplitSentences assign pairs to train, dev and test by a hash of
// the seed and the pair's normalised source text, so all pairs with one
// source land in the same part and a test source is never seen in
// training; see Split for the exact rule.
package corpus

import (
	"strings"
	"unicode"
)

// Pair is one aligned source–target pair: Src is German, Tgt English, each
// trimmed with single spaces. Readers of this package never return a pair
// with an empty side.
type Pair struct {
	Src, Tgt string
}

// MaxFileSize is the largest file ReadDing and ReadTSV accept. It guards
// against reading a device or a wrong multi-gigabyte file into memory,
// not against big corpora: the Ding dictionary is 25.6 MB.
const MaxFileSize = 256 << 20

// Dedup returns pairs without exact repeats of (Src, Tgt), keeping the
// first occurrence of each in the original order. Pairs with the same
// source and different targets are all kept: each is a correct
// translation worth training on, and the splitters keep them in one part.
func Dedup(pairs []Pair) []Pair {
	seen := make(map[Pair]bool, len(pairs))
	out := make([]Pair, 0, len(pairs))
	for _, p := range pairs {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// normSpace replaces every run of white space and control characters by
// one space and trims the ends: readers promise single-spaced text and a
// stray tab or NUL must not make two spellings of one sentence.
func normSpace(s string) string {
	isSep := func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }
	// Most text is already clean; checking is cheaper than rebuilding.
	clean, afterSpace := true, true
	for _, r := range s {
		switch {
		case r == ' ' && !afterSpace:
			afterSpace = true
		case r == ' ' || isSep(r):
			clean = false
		default:
			afterSpace = false
		}
		if !clean {
			break
		}
	}
	if s == "" || clean && !afterSpace {
		return s
	}
	return strings.Join(strings.FieldsFunc(s, isSep), " ")
}
