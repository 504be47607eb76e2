package bpe

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// DefaultMinFrequency is the MinFrequency used when TrainOptions leaves it
// zero: a character or pair seen once is more likely noise than vocabulary.
const DefaultMinFrequency = 2

// TrainOptions configure Train.
type TrainOptions struct {
	// VocabSize is the most tokens the vocabulary may hold, counting the 4
	// special and 256 byte tokens. It is required, and must leave room for
	// the alphabet: Train fails rather than exceed it, since model shapes
	// are built from it. Training stops early when no pair is frequent
	// enough, so Size() may come out smaller.
	VocabSize int
	// MinFrequency is how often a character must occur to enter the
	// alphabet, and a pair to be merged. Zero means DefaultMinFrequency.
	MinFrequency int
	// Progress, if not nil, is called after each merge with the number of
	// merges made so far and the most VocabSize allows, for progress bars.
	Progress func(merges, maxMerges int)
}

// VocabSizeError is Train's error when TrainOptions.VocabSize cannot hold
// the special, byte and alphabet tokens the texts need: callers that take
// the size from a user say which setting to raise, and by how much.
type VocabSizeError struct {
	VocabSize int
	// Alphabet counts the texts' characters frequent enough to be tokens.
	Alphabet int
}

// Need is the smallest VocabSize the texts allow.
func (e *VocabSizeError) Need() int { return alphaBase + e.Alphabet }

func (e *VocabSizeError) Error() string {
	return fmt.Sprintf("bpe: TrainOptions.VocabSize %d is below the %d tokens needed for the %d special, 256 byte and %d alphabet tokens; raise VocabSize or MinFrequency",
		e.VocabSize, e.Need(), numSpecial, e.Alphabet)
}

// Train learns a tokenizer from texts, the training split of a corpus (one
// sentence or line per string is typical; texts are never joined, so no word
// spans two of them). See the package doc for the algorithm.
func Train(texts []string, opt TrainOptions) (*Tokenizer, error) {
	return TrainContext(context.Background(), texts, opt)
}

// TrainContext is Train that gives up, returning ctx's error, when ctx is
// done.
func TrainContext(ctx context.Context, texts []string, opt TrainOptions) (*Tokenizer, error) {
	if opt.VocabSize <= 0 {
		return nil, errors.New("bpe: TrainOptions.VocabSize must be positive")
	}
	minFreq := int64(opt.MinFrequency)
	if minFreq < 0 {
		return nil, fmt.Errorf("bpe: TrainOptions.MinFrequency %d is negative", opt.MinFrequency)
	}
	if minFreq == 0 {
		minFreq = DefaultMinFrequency
	}

	wordFreq := make(map[string]int64)
	for _, text := range texts {
		forEachWord(text, func(w string) { wordFreq[w]++ })
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bpe: training: %w", err)
	}

	charCount := make(map[rune]int64)
	for w, f := range wordFreq {
		for i := 0; i < len(w); {
			r, size := utf8.DecodeRuneInString(w[i:])
			if c, ok := symbolRune(r, size); ok {
				charCount[c] += f
			}
			i += size
		}
	}
	var chars []rune
	for c, n := range charCount {
		if n >= minFreq {
			chars = append(chars, c)
		}
	}
	slices.Sort(chars)
	if alphaBase+len(chars) > opt.VocabSize {
		return nil, &VocabSizeError{VocabSize: opt.VocabSize, Alphabet: len(chars)}
	}
	tokens := baseTokens()
	for _, c := range chars {
		tokens = append(tokens, string(c))
	}
	// Capacity hints are capped: VocabSize may be far above what the corpus
	// supports.
	hint := min(opt.VocabSize, 1<<16)
	ids := make(map[string]int32, hint)
	for id, tok := range tokens {
		ids[tok] = int32(id)
	}
	alpha := newAlphabet(tokens, len(chars))

	// Words are processed in map order, which is random; nothing below
	// depends on it, as the determinism tests check.
	words := make([]trainWord, 0, len(wordFreq))
	var buf []int32
	for w, f := range wordFreq {
		start := len(buf)
		buf = alpha.appendSymbols(buf, w)
		if len(buf)-start < 2 {
			buf = buf[:start]
			continue
		}
		// Merges only shrink a word, so the full slice expression keeps
		// each word within its own part of buf.
		words = append(words, trainWord{syms: buf[start:len(buf):len(buf)], freq: f})
	}
	clear(wordFreq)

	counts := make(map[uint64]int64)
	where := make(map[uint64][]int32) // pair → words that contained it
	for wi := range words {
		w := &words[wi]
		for i := 0; i+1 < len(w.syms); i++ {
			x, y := w.syms[i], w.syms[i+1]
			if x < alphaBase || y < alphaBase {
				continue // byte tokens never merge
			}
			p := pairKey(x, y)
			counts[p] += w.freq
			if l := where[p]; len(l) == 0 || l[len(l)-1] != int32(wi) {
				where[p] = append(l, int32(wi))
			}
		}
	}
	h := &pairHeap{tokens: tokens, items: make([]pairEntry, 0, len(counts))}
	for p, c := range counts {
		h.items = append(h.items, pairEntry{p, c})
	}
	heap.Init(h)

	maxMerges := opt.VocabSize - len(tokens)
	merges := make([][2]int32, 0, min(maxMerges, hint))
	visited := make([]int, len(words)) // the merge that last visited each word
	var newPairs []uint64
	for pops := 0; len(merges) < maxMerges && h.Len() > 0; pops++ {
		if pops%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("bpe: training stopped after %d merges: %w", len(merges), err)
			}
		}
		top := heap.Pop(h).(pairEntry)
		cur := counts[top.key]
		if cur != top.count {
			// Counts of existing pairs only fall, so a stale entry is
			// re-queued at its true count and compared again.
			if cur > 0 {
				heap.Push(h, pairEntry{top.key, cur})
			}
			continue
		}
		if cur < minFreq {
			break // the most frequent pair is too rare
		}
		a, b := int32(top.key>>32), int32(uint32(top.key))
		tok := tokens[a] + tokens[b]
		if _, dup := ids[tok]; dup {
			continue // never merged; see the package doc
		}
		newID := int32(len(tokens))
		tokens = append(tokens, tok)
		h.tokens = tokens
		ids[tok] = newID
		merges = append(merges, [2]int32{a, b})

		step := len(merges)
		newPairs = newPairs[:0]
		for _, wi := range where[top.key] {
			if visited[wi] == step {
				continue
			}
			visited[wi] = step
			w := &words[wi]
			if !containsPair(w.syms, a, b) {
				continue // the pair left this word in an earlier merge
			}
			// Words are short: recounting the whole word is simpler than
			// patching the neighbours of each occurrence, and as fast.
			addPairs(counts, w.syms, -w.freq)
			w.syms = mergePair(w.syms, a, b, newID)
			addPairs(counts, w.syms, w.freq)
			for i := 0; i+1 < len(w.syms); i++ {
				x, y := w.syms[i], w.syms[i+1]
				if (x != newID && y != newID) || x < alphaBase || y < alphaBase {
					continue
				}
				p := pairKey(x, y)
				if l := where[p]; len(l) == 0 || l[len(l)-1] != int32(wi) {
					where[p] = append(l, int32(wi))
				}
				newPairs = append(newPairs, p)
			}
		}
		delete(where, top.key)
		// Pairs with the new token are new: their counts are final for
		// this merge and will only fall later.
		slices.Sort(newPairs)
		for _, p := range slices.Compact(newPairs) {
			heap.Push(h, pairEntry{p, counts[p]})
		}
		if opt.Progress != nil {
			opt.Progress(len(merges), maxMerges)
		}
	}
	return newTokenizer(tokens, ids, len(chars), merges), nil
}

// trainWord is a distinct word of the corpus as its current symbols.
type trainWord struct {
	syms []int32
	freq int64
}

// addPairs adds d to the count of every mergeable adjacent pair of s,
// deleting counts that reach zero.
func addPairs(counts map[uint64]int64, s []int32, d int64) {
	for i := 0; i+1 < len(s); i++ {
		x, y := s[i], s[i+1]
		if x < alphaBase || y < alphaBase {
			continue
		}
		p := pairKey(x, y)
		if c := counts[p] + d; c != 0 {
			counts[p] = c
		} else {
			delete(counts, p)
		}
	}
}

func containsPair(s []int32, a, b int32) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == a && s[i+1] == b {
			return true
		}
	}
	return false
}

// mergePair replaces the occurrences of a b in s by id, left to right, in
// place.
func mergePair(s []int32, a, b, id int32) []int32 {
	out := s[:0]
	for i := 0; i < len(s); i++ {
		if s[i] == a && i+1 < len(s) && s[i+1] == b {
			out = append(out, id)
			i++
		} else {
			out = append(out, s[i])
		}
	}
	return out
}

// pairEntry is a pair with its count when it was queued.
type pairEntry struct {
	key   uint64
	count int64
}

// pairHeap is a max-heap of pairs by count, ties going to the pair whose left
// then right token string is smallest.
type pairHeap struct {
	items  []pairEntry
	tokens []string
}

func (h *pairHeap) Len() int { return len(h.items) }

func (h *pairHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if a.count != b.count {
		return a.count > b.count
	}
	if la, lb := h.tokens[int32(a.key>>32)], h.tokens[int32(b.key>>32)]; la != lb {
		return la < lb
	}
	return h.tokens[int32(uint32(a.key))] < h.tokens[int32(uint32(b.key))]
}

func (h *pairHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }

func (h *pairHeap) Push(x any) { h.items = append(h.items, x.(pairEntry)) }

func (h *pairHeap) Pop() any {
	last := len(h.items) - 1
	x := h.items[last]
	h.items = h.items[:last]
	return x
}
