package bpe

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Fixed ids of the special tokens, the same in every vocabulary so that model
// code can use them without a tokenizer at hand.
const (
	PadID = 0 // "<pad>", fills batches of unequal length
	BOSID = 1 // "<s>", starts a sequence
	EOSID = 2 // "</s>", ends a sequence
	UnkID = 3 // "<unk>", never produced by Encode (see the package doc)
)

const (
	numSpecial = 4
	// byteBase is the id of "<0x00>"; byte b has id byteBase+b.
	byteBase = numSpecial
	// alphaBase is the id of the first alphabet token.
	alphaBase = byteBase + 256

	// spaceSymbol stands for U+0020 inside tokens.
	spaceSymbol = '▁'

	// Cache limits: short words are the frequent ones worth caching, and a
	// bounded cache cannot grow without limit on endless varied input.
	maxCachedWordLen = 64
	maxCacheEntries  = 1 << 16

	// Words with more symbols than this are merged with a heap, whose
	// set-up cost only pays off for long words.
	heapThreshold = 32
)

// specialToken returns the spelling of special id (0 ≤ id < numSpecial).
func specialToken(id int) string {
	switch id {
	case PadID:
		return "<pad>"
	case BOSID:
		return "<s>"
	case EOSID:
		return "</s>"
	default:
		return "<unk>"
	}
}

// byteToken returns the spelling of the byte-fallback token for b, as used by
// Llama and Hugging Face byte_fallback vocabularies.
func byteToken(b byte) string {
	return fmt.Sprintf("<0x%02X>", b)
}

// baseTokens returns the specials followed by the byte tokens, the first
// alphaBase tokens of every vocabulary.
func baseTokens() []string {
	t := make([]string, alphaBase)
	for i := range numSpecial {
		t[i] = specialToken(i)
	}
	for b := range 256 {
		t[byteBase+b] = byteToken(byte(b))
	}
	return t
}

// alphabetRune reports whether r may be an alphabet token. "▁" may (it
// stands for a space); U+0020 itself, control characters and line
// separators may not, so tokens stay unambiguous on a merges.txt line.
func alphabetRune(r rune) bool {
	return r != ' ' && !unicode.IsControl(r) && r != '\u2028' && r != '\u2029'
}

// symbolRune maps an input character, as decoded by utf8.DecodeRuneInString
// with its size, to the alphabet character that would represent it, or
// reports false if the character always goes through byte fallback.
func symbolRune(r rune, size int) (rune, bool) {
	switch {
	case r == ' ':
		return spaceSymbol, true
	case r == spaceSymbol:
		return 0, false // a literal ▁ would decode to a space
	case r == utf8.RuneError && size == 1:
		return 0, false // invalid UTF-8; a valid U+FFFD is ordinary
	}
	return r, alphabetRune(r)
}

// alphabet maps input characters to alphabet token ids.
type alphabet struct {
	ascii [utf8.RuneSelf]int32 // -1 if not in the alphabet; ' ' maps to "▁"
	other map[rune]int32
}

// newAlphabet indexes the alphabet tokens tokens[alphaBase:alphaBase+n],
// which must each be one allowed character.
func newAlphabet(tokens []string, n int) *alphabet {
	a := &alphabet{other: make(map[rune]int32)}
	for i := range a.ascii {
		a.ascii[i] = -1
	}
	for id := alphaBase; id < alphaBase+n; id++ {
		r, _ := utf8.DecodeRuneInString(tokens[id])
		switch {
		case r == spaceSymbol:
			a.ascii[' '] = int32(id)
		case r < utf8.RuneSelf:
			a.ascii[r] = int32(id)
		default:
			a.other[r] = int32(id)
		}
	}
	return a
}

// appendSymbols appends the initial symbols of word w to dst: alphabet ids
// where possible, byte tokens otherwise.
func (a *alphabet) appendSymbols(dst []int32, w string) []int32 {
	for i := 0; i < len(w); {
		c := w[i]
		if c < utf8.RuneSelf {
			if id := a.ascii[c]; id >= 0 {
				dst = append(dst, id)
			} else {
				dst = append(dst, byteBase+int32(c))
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(w[i:])
		if r != spaceSymbol && (r != utf8.RuneError || size > 1) {
			if id, ok := a.other[r]; ok {
				dst = append(dst, id)
				i += size
				continue
			}
		}
		for _, b := range []byte(w[i : i+size]) {
			dst = append(dst, byteBase+int32(b))
		}
		i += size
	}
	return dst
}

// forEachWord calls f for each word of s: the text is cut before every space.
func forEachWord(s string, f func(w string)) {
	start := 0
	for i := 1; i < len(s); i++ {
		if s[i] == ' ' {
			f(s[start:i])
			start = i
		}
	}
	if len(s) > 0 {
		f(s[start:])
	}
}

// pairKey packs two token ids into a map key.
func pairKey(a, b int32) uint64 {
	return uint64(uint32(a))<<32 | uint64(uint32(b))
}

// Tokenizer encodes text to token ids and back. Create one with Train or
// Load; it is immutable apart from an internal cache and safe for concurrent
// use.
type Tokenizer struct {
	tokens   []string
	surface  []string // decoded text of each token; "" for special and byte tokens
	ids      map[string]int32
	numAlpha int
	alpha    *alphabet
	merges   [][2]int32       // the parts of each merge, by rank
	ranks    map[uint64]int32 // pair of ids → merge rank
	// mergeBase is the id made by the merge of rank 0; rank r makes
	// mergeBase+r.
	mergeBase int32
	cache     wordCache
}

// newTokenizer builds a Tokenizer from a validated vocabulary.
func newTokenizer(tokens []string, ids map[string]int32, numAlpha int, merges [][2]int32) *Tokenizer {
	t := &Tokenizer{
		tokens:    tokens,
		surface:   make([]string, len(tokens)),
		ids:       ids,
		numAlpha:  numAlpha,
		alpha:     newAlphabet(tokens, numAlpha),
		merges:    merges,
		ranks:     make(map[uint64]int32, len(merges)),
		mergeBase: int32(alphaBase + numAlpha),
	}
	for id := alphaBase; id < len(tokens); id++ {
		t.surface[id] = strings.ReplaceAll(tokens[id], string(spaceSymbol), " ")
	}
	for r, m := range merges {
		t.ranks[pairKey(m[0], m[1])] = int32(r)
	}
	t.cache.m = make(map[string][]int32)
	t.cache.limit = maxCacheEntries
	return t
}

// Size returns the number of tokens, so valid ids are 0 ≤ id < Size().
func (t *Tokenizer) Size() int { return len(t.tokens) }

// Token returns the string of token id as it appears in vocab.json (with "▁"
// for spaces and "<0xNN>" for bytes), or "" if id is out of range; no token
// is empty, so "" is unambiguous.
func (t *Tokenizer) Token(id int) string {
	if id < 0 || id >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// ID returns the id of token, spelled as in vocab.json.
func (t *Tokenizer) ID(token string) (int, bool) {
	id, ok := t.ids[token]
	return int(id), ok
}

// Encode returns the token ids of s. It never fails and never emits a
// special token; add BOSID and EOSID yourself where a model wants them.
func (t *Tokenizer) Encode(s string) []int {
	out := make([]int, 0, len(s)/3+1)
	var scratch []int32
	forEachWord(s, func(w string) {
		for _, id := range t.encodeWord(w, &scratch) {
			out = append(out, int(id))
		}
	})
	return out
}

// EncodePieces returns the token strings of s, for display and debugging:
// Token applied to each id of Encode(s).
func (t *Tokenizer) EncodePieces(s string) []string {
	out := make([]string, 0, len(s)/3+1)
	var scratch []int32
	forEachWord(s, func(w string) {
		for _, id := range t.encodeWord(w, &scratch) {
			out = append(out, t.tokens[id])
		}
	})
	return out
}

// Decode returns the text of ids. Special tokens contribute nothing, byte
// tokens their byte, other tokens their string with "▁" read as a space. An
// id outside 0…Size()-1 is an error, since it means the ids came from a
// different vocabulary.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	var b strings.Builder
	for i, id := range ids {
		switch {
		case id < 0 || id >= len(t.tokens):
			return "", fmt.Errorf("bpe: Decode: id %d at index %d is outside the vocabulary of %d tokens", id, i, len(t.tokens))
		case id < byteBase:
		case id < alphaBase:
			b.WriteByte(byte(id - byteBase))
		default:
			b.WriteString(t.surface[id])
		}
	}
	return b.String(), nil
}

// encodeWord returns the ids of word w. The result is valid until the next
// call with the same scratch and must not be modified.
func (t *Tokenizer) encodeWord(w string, scratch *[]int32) []int32 {
	cacheable := len(w) <= maxCachedWordLen
	if cacheable {
		if ids, ok := t.cache.get(w); ok {
			return ids
		}
	}
	syms := t.alpha.appendSymbols((*scratch)[:0], w)
	syms = t.mergeWord(syms)
	*scratch = syms[:0]
	if cacheable {
		// Clone the key: w may be a slice of a huge input string.
		t.cache.put(strings.Clone(w), slices.Clone(syms))
	}
	return syms
}

// mergeWord applies the merges to the symbols of one word in place: the
// adjacent pair of lowest rank first, the leftmost of equal pairs first.
func (t *Tokenizer) mergeWord(s []int32) []int32 {
	if len(s) > heapThreshold {
		return t.mergeLong(s)
	}
	return t.mergeShort(s)
}

// mergeShort is mergeWord by rescanning the word after each merge, which is
// quadratic but allocation-free and fastest for the usual short word.
func (t *Tokenizer) mergeShort(s []int32) []int32 {
	for len(s) > 1 {
		best, pos := int32(math.MaxInt32), -1
		for i := 0; i+1 < len(s); i++ {
			if r, ok := t.ranks[pairKey(s[i], s[i+1])]; ok && r < best {
				best, pos = r, i
			}
		}
		if pos < 0 {
			break
		}
		s[pos] = t.mergeBase + best
		s = append(s[:pos+1], s[pos+2:]...)
	}
	return s
}

// mergeCand is a possible merge of the symbol at pos with its successor.
type mergeCand struct{ rank, pos int32 }

func candLess(a, b mergeCand) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

// mergeLong is mergeWord in O(n log n): symbols form a linked list, and a
// min-heap by (rank, position) holds candidate merges, checked for
// staleness when popped. Since a rank identifies its pair and positions keep
// their order, it merges in exactly mergeShort's order.
func (t *Tokenizer) mergeLong(s []int32) []int32 {
	n := len(s)
	next := make([]int32, n) // -1 at the end; -2 once merged away
	prev := make([]int32, n)
	for i := range n {
		next[i], prev[i] = int32(i+1), int32(i-1)
	}
	next[n-1] = -1
	var h []mergeCand
	for i := 0; i+1 < n; i++ {
		if r, ok := t.ranks[pairKey(s[i], s[i+1])]; ok {
			h = append(h, mergeCand{r, int32(i)})
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	for len(h) > 0 {
		c := h[0]
		last := len(h) - 1
		h[0] = h[last]
		h = h[:last]
		siftDown(h, 0)

		p := c.pos
		nx := next[p]
		if nx < 0 {
			continue // merged away, or the last symbol
		}
		if r, ok := t.ranks[pairKey(s[p], s[nx])]; !ok || r != c.rank {
			continue // a neighbour changed since this candidate was pushed
		}
		s[p] = t.mergeBase + c.rank
		nn := next[nx]
		next[nx] = -2
		next[p] = nn
		if nn >= 0 {
			prev[nn] = p
			if r, ok := t.ranks[pairKey(s[p], s[nn])]; ok {
				h = pushCand(h, mergeCand{r, p})
			}
		}
		if pp := prev[p]; pp >= 0 {
			if r, ok := t.ranks[pairKey(s[pp], s[p])]; ok {
				h = pushCand(h, mergeCand{r, pp})
			}
		}
	}
	out := s[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, s[i]) // i ≥ len(out), so this never overwrites unread symbols
	}
	return out
}

func pushCand(h []mergeCand, c mergeCand) []mergeCand {
	h = append(h, c)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !candLess(h[i], h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
	return h
}

func siftDown(h []mergeCand, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && candLess(h[r], h[l]) {
			m = r
		}
		if !candLess(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// wordCache maps words to their ids. It is bounded, and simply emptied when
// full: cheap, and on natural text the frequent words return at once.
type wordCache struct {
	mu    sync.RWMutex
	m     map[string][]int32
	limit int // entries; a field so that tests can make it small
}

func (c *wordCache) get(w string) ([]int32, bool) {
	c.mu.RLock()
	ids, ok := c.m[w]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int32) {
	c.mu.Lock()
	if len(c.m) >= c.limit {
		clear(c.m)
	}
	c.m[w] = ids
	c.mu.Unlock()
}
