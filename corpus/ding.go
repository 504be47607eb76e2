package corpus

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lenspec/lenspec/internal/fileio"
)

// DingPath is where Debian's trans-de-en package installs the Ding
// German–English dictionary.
const DingPath = "/usr/share/trans/de-en"

// DingSHA256 is the SHA-256 of the dictionary file of DingPackage. Results
// are only comparable on the same data, and the dictionary changes with
// every release, so experiments verify it (VerifyDing) before reading.
const DingSHA256 = "34052c6021d09eadfee7a893a789204265954df70fe9c36d38fa00058d79d326"

// DingPackage names the release DingSHA256 was pinned for.
const DingPackage = "trans-de-en 1.9-6 (Debian 12)"

// DefaultMinWords is the default DingOptions.MinWords. Two rather than
// three because two-word pairs ("kalter Tee" → "cold tea") are the bulk of the dictionary's multi-word knowledge and the
// corpus is small; a caller wanting longer phrases sets MinWords.
const DefaultMinWords = 2

// DingOptions selects what ReadDing and ParseDingLine keep.
type DingOptions struct {
	// MinWords is the least number of words each side of a phrase pair
	// needs; 0 means DefaultMinWords. Sentence pairs need only two words
	// a side whatever MinWords is, because they are the evaluation data.
	MinWords int
}

func (o DingOptions) minWords() int {
	if o.MinWords <= 0 {
		return DefaultMinWords
	}
	return o.MinWords
}

// DingStats counts what ReadDing saw and why it dropped what it dropped,
// so that the documentation of an experiment can state its data exactly.
type DingStats struct {
	Lines    int // physical lines
	Comments int // lines starting with '#'
	Blank    int // empty or white-space lines
	// Entries are "German :: English" lines; Malformed lines are neither
	// comments, blank, nor have exactly one " :: ".
	Entries, Malformed int
	// MisalignedEntries have different numbers of " | " sub-entries on
	// the two sides; MisalignedSubEntries is the larger count summed over
	// them. They are skipped whole.
	MisalignedEntries, MisalignedSubEntries int
	// SubEntryPairs are the aligned German–English sub-entry pairs.
	SubEntryPairs int
	// Candidates are the alternative pairs formed from them (see the
	// package documentation).
	Candidates int
	// Sentences and Phrases are the pairs kept, before deduplication.
	Sentences, Phrases int
	// Candidates dropped: a side with no letter or digit after cleaning,
	// unbalanced brackets or leftover separators, a free-standing " / "
	// alternative, or fewer than MinWords words and not a sentence pair.
	// A candidate failing on both sides is counted by its German side.
	SkippedEmpty, SkippedMarkup, SkippedSlash, SkippedShort int
}

// VerifyDing checks that the file at path is the pinned dictionary by its
// SHA-256, reading it as a stream. The error names the file, both hashes
// and the release the hash belongs to.
func VerifyDing(path string) error {
	f, err := fileio.Open(path)
	if err != nil {
		return fmt.Errorf("corpus: verify Ding dictionary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("corpus: verify Ding dictionary %s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != DingSHA256 {
		return fmt.Errorf("corpus: %s has sha256 %s, want %s (the dictionary of %s)", path, got, DingSHA256, DingPackage)
	}
	return nil
}

// ReadDing reads a Ding dictionary file (such as DingPath) and returns its
// sentence and phrase pairs in file order, without removing repeats (see
// Dedup). It does not check the hash: callers that need the pinned data
// call VerifyDing. It refuses files that are not regular or are larger
// than MaxFileSize, invalid UTF-8 (older Ding releases were Latin-1; a
// silently skipped umlaut line would bias the corpus), and files without
// any entry.
func ReadDing(path string, opt DingOptions) ([]Pair, DingStats, error) {
	var st DingStats
	b, err := fileio.ReadRegular(path, MaxFileSize)
	if err != nil {
		return nil, st, fmt.Errorf("corpus: read Ding dictionary: %w", err)
	}
	text := strings.TrimPrefix(string(b), "\ufeff")
	var pairs []Pair
	minWords := opt.minWords()
	for n := 1; text != ""; n++ {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		st.Lines++
		if !utf8.ValidString(line) {
			return nil, st, fmt.Errorf("corpus: %s:%d: invalid UTF-8 (a Ding file must be UTF-8; convert a Latin-1 one with iconv)", path, n)
		}
		pairs = parseLine(pairs, line, minWords, &st)
	}
	if st.Entries == 0 {
		return nil, st, fmt.Errorf("corpus: %s: no dictionary entries (lines \"German :: English\")", path)
	}
	return pairs, st, nil
}

// ParseDingLine returns the pairs ReadDing keeps from one line of a Ding
// file, with or without its line ending; nil for comments, malformed lines
// and invalid UTF-8.
func ParseDingLine(line string, opt DingOptions) []Pair {
	if !utf8.ValidString(line) {
		return nil
	}
	var st DingStats
	return parseLine(nil, line, opt.minWords(), &st)
}

// parseLine appends the pairs of one valid UTF-8 line to pairs.
func parseLine(pairs []Pair, line string, minWords int, st *DingStats) []Pair {
	line = normSpace(line) // also drops the "\r" of CRLF files
	if line == "" {
		st.Blank++
		return pairs
	}
	if line[0] == '#' {
		st.Comments++
		return pairs
	}
	// Separators are the words "::" and "|": matching " | " in the text
	// would miss an empty sub-entry at either end ("x ::  | y").
	sides := splitAtWord(line, "::")
	if len(sides) != 2 {
		st.Malformed++
		return pairs
	}
	st.Entries++
	deSubs, enSubs := splitAtWord(sides[0], "|"), splitAtWord(sides[1], "|")
	if len(deSubs) != len(enSubs) {
		st.MisalignedEntries++
		st.MisalignedSubEntries += max(len(deSubs), len(enSubs))
		return pairs
	}
	for i := range deSubs {
		st.SubEntryPairs++
		// Each alternative is cleaned once: one may be paired with many.
		deAlts, enAlts := cleanAll(splitAlternatives(deSubs[i])), cleanAll(splitAlternatives(enSubs[i]))
		for _, ij := range pairAlternatives(len(deAlts), len(enAlts)) {
			st.Candidates++
			src, tgt := deAlts[ij[0]], enAlts[ij[1]]
			why := src.why
			if why == keep {
				why = tgt.why
			}
			switch {
			case why == dropEmpty:
				st.SkippedEmpty++
			case why == dropMarkup:
				st.SkippedMarkup++
			case why == dropSlash:
				st.SkippedSlash++
			case src.sentence && tgt.sentence:
				st.Sentences++
				pairs = append(pairs, Pair{src.text, tgt.text})
			case src.words >= minWords && tgt.words >= minWords:
				st.Phrases++
				pairs = append(pairs, Pair{src.text, tgt.text})
			default:
				st.SkippedShort++
			}
		}
	}
	return pairs
}

// alternative is a cleaned alternative with what parseLine needs to know
// about it.
type alternative struct {
	text     string
	why      verdict
	sentence bool
	words    int
}

func cleanAll(alts []string) []alternative {
	out := make([]alternative, len(alts))
	for i, a := range alts {
		text, why := cleanAlternative(a)
		out[i] = alternative{text, why, isSentence(text), countWords(text)}
	}
	return out
}

// pairAlternatives returns the index pairs of the alternatives to pair.
func pairAlternatives(nd, ne int) [][2]int {
	var out [][2]int
	if nd == ne {
		for i := range nd {
			out = append(out, [2]int{i, i})
		}
		return out
	}
	out = append(out, [2]int{0, 0})
	for i := 1; i < nd; i++ {
		out = append(out, [2]int{i, 0})
	}
	for j := 1; j < ne; j++ {
		out = append(out, [2]int{0, j})
	}
	return out
}

// splitAtWord splits the single-spaced s at each space-separated word
// equal to sep, dropping the spaces around it.
func splitAtWord(s, sep string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); {
		j := strings.IndexByte(s[i:], ' ')
		if j < 0 {
			j = len(s)
		} else {
			j += i
		}
		if s[i:j] == sep {
			out = append(out, strings.TrimSpace(s[start:i]))
			start = min(j+1, len(s))
		}
		i = j + 1
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// splitAlternatives splits a sub-entry at "; " outside brackets: remarks
// such as "(Wasser; Luft)" hold semicolons that do not separate
// alternatives. It always returns at least one element.
func splitAlternatives(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth = max(depth-1, 0)
		case ';':
			if depth == 0 && i+1 < len(s) && s[i+1] == ' ' {
				out = append(out, s[start:i])
				start = i + 2
			}
		}
	}
	return append(out, s[start:])
}

// verdict says whether a cleaned alternative is kept and, if not, why.
type verdict int

const (
	keep verdict = iota
	dropEmpty
	dropMarkup
	dropSlash
)

// cleanAlternative strips an alternative's annotations and resolves its
// slash alternatives as the package documentation describes.
func cleanAlternative(s string) (string, verdict) {
	s, ok := stripBrackets(s)
	if !ok {
		return "", dropMarkup
	}
	toks := strings.Fields(s)
	var out strings.Builder
	// attach glues punctuation to the previous token, so that removing a
	// word or remark before it does not leave "word ." behind.
	attach := func(p string) {
		if out.Len() > 0 {
			out.WriteString(p)
		}
	}
	add := func(tok string) {
		switch {
		case strings.Trim(tok, ",.;:!?") == "":
			attach(tok)
		case out.Len() > 0:
			out.WriteByte(' ')
			fallthrough
		default:
			out.WriteString(tok)
		}
	}
	skipNext := false
	for _, tok := range toks {
		if skipNext {
			skipNext = false
			continue
		}
		if !strings.Contains(tok, "/") {
			add(tok)
			continue
		}
		if strings.Trim(tok, "/") == "" {
			return "", dropSlash
		}
		if core := strings.TrimRight(tok, ",.;:!?"); len(core) >= 3 && core[0] == '/' && core[len(core)-1] == '/' {
			attach(tok[len(core):]) // "/GFK/": an abbreviation
			continue
		}
		if keepSlashes(tok) {
			add(tok)
			continue
		}
		if tok[0] == '/' {
			continue // "centre /center": an alternative to the word before
		}
		parts := strings.Split(tok, "/")
		if parts[len(parts)-1] == "" {
			skipNext = true // "sb./ sth."
		}
		last := ""
		for _, p := range parts {
			if p != "" {
				last = p
			}
		}
		tail := last[len(strings.TrimRight(last, closingPunct)):]
		add(strings.TrimRight(parts[0], closingPunct) + tail)
	}
	s = strings.TrimLeft(out.String(), ",;: ")
	s = strings.TrimRight(s, ",;: ")
	switch {
	case strings.IndexFunc(s, isWordRune) < 0:
		return "", dropEmpty
	case strings.ContainsAny(s, "{}[]()<>"), strings.Contains(s, " | "), strings.Contains(s, " :: "):
		return "", dropMarkup
	}
	return s, keep
}

// closingPunct is punctuation that ends a word and is shared by all slash
// alternatives of a token.
const closingPunct = ".,;:!?…\"'”’»"

// keepSlashes reports tokens whose slashes are part of a term: every slash
// has digits on both sides ("1/2", "24/7") or upper-case letters on both
// sides ("I/O", "TCP/IP"), or the token is a URL.
func keepSlashes(tok string) bool {
	if strings.Contains(tok, "://") || strings.HasPrefix(tok, "www.") {
		return true
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] != '/' {
			continue
		}
		before, _ := utf8.DecodeLastRuneInString(tok[:i])
		after, _ := utf8.DecodeRuneInString(tok[i+1:])
		digits := unicode.IsDigit(before) && unicode.IsDigit(after)
		upper := unicode.IsUpper(before) && unicode.IsUpper(after)
		if !digits && !upper {
			return false
		}
	}
	return true
}

// stripBrackets removes bracketed annotations, reporting false for
// unbalanced or crossed brackets. Angle brackets count only outside other
// brackets, where Ding uses them for spellings; inside a remark "<" and ">"
// are comparisons ("(Dicke < 1 mm)").
func stripBrackets(s string) (string, bool) {
	if !strings.ContainsAny(s, "()[]{}<>") {
		return s, true
	}
	var b strings.Builder
	var stack []rune // expected closers
	var prev rune    // last rune written
	for _, r := range s {
		if len(stack) == 0 {
			switch r {
			case '(':
				stack = append(stack, ')')
			case '[':
				stack = append(stack, ']')
			case '{':
				stack = append(stack, '}')
			case '<':
				stack = append(stack, '>')
			case ')', ']', '}', '>':
				return "", false
			default:
				b.WriteRune(r)
				prev = r
			}
			continue
		}
		top := stack[len(stack)-1]
		switch {
		case r == top:
			stack = stack[:len(stack)-1]
		case top == '>':
			// Inside <…> only '>' matters.
		case r == '(':
			stack = append(stack, ')')
		case r == '[':
			stack = append(stack, ']')
		case r == '{':
			stack = append(stack, '}')
		case r == ')', r == ']', r == '}':
			return "", false
		}
		if len(stack) == 0 && !isWordRune(prev) {
			// A remark glued to a word ("colo(u)r") leaves nothing,
			// any other a space.
			b.WriteByte(' ')
			prev = ' '
		}
	}
	if len(stack) > 0 {
		return "", false
	}
	return b.String(), true
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// countWords counts the white-space separated tokens that hold a letter or
// digit, so that "…" or "–" are not words.
func countWords(s string) int {
	n := 0
	for _, tok := range strings.Fields(s) {
		if strings.IndexFunc(tok, isWordRune) >= 0 {
			n++
		}
	}
	return n
}

// IsSentence reports whether both sides of p are sentences. Sentence pairs
// are what the translator is evaluated on (see SplitSentences).
//
// A text is a sentence when it has at least two words (tokens with a
// letter or digit); its first letter or digit, after any opening quotes,
// dashes, ¡ or ¿, is an upper-case letter or a digit; it ends, before any
// closing quotes, in '.', '!' or '?'; and its last word is not one of the
// dictionary's placeholders etw. jdn. jdm. jds. jd. sb. sth. or usw. etc.,
// which end phrases such as "Pflege von jdm." rather than sentences.
// A German noun phrase may start with a capital and end in "." too, so
// the English side, whose phrases start in lower case, usually decides.
func IsSentence(p Pair) bool { return isSentence(p.Src) && isSentence(p.Tgt) }

func isSentence(s string) bool {
	if countWords(s) < 2 {
		return false
	}
	first, _ := utf8.DecodeRuneInString(strings.TrimLeft(s, "„“‚‘\"'«»¡¿–—- "))
	if !unicode.IsUpper(first) && !unicode.IsTitle(first) && !unicode.IsDigit(first) {
		return false
	}
	body := strings.TrimRight(s, "“”‘’\"'»« ")
	last, _ := utf8.DecodeLastRuneInString(body)
	if last != '.' && last != '!' && last != '?' {
		return false
	}
	w := strings.ToLower(body[strings.LastIndexByte(body, ' ')+1:])
	switch w {
	case "etw.", "jdn.", "jdm.", "jds.", "jd.", "sb.", "sth.", "usw.", "etc.":
		return false
	}
	return true
}

func init() {
	Register(Source{Name: "ding", Help: "the Ding dictionary",
		Location: "Debian's trans-de-en, pinned by sha256", LocationFlag: "ding",
		DefaultPath: func() (string, error) { return DingPath, nil },
		Load:        LoadDing})
}
