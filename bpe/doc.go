// Package bpe is a byte-pair-encoding subword tokenizer (Sennrich, Haddow and
// Birch 2016) with SentencePiece-style whitespace handling and byte fallback,
// stored in the vocab.json and merges.txt files Hugging Face tokenizers use.
//
// # Text model
//
// Text is a sequence of Unicode code points. Every space U+0020 is written as
// the meta symbol "▁" (U+2581) and starts a new word: "Guten Tag." is the
// words "Guten" and "▁Tag.", and "a", two spaces and "b" are the words "a",
// "▁" and "▁b". Merges never cross a word boundary. Punctuation is not split
// off, as in SentencePiece: merges learn where it attaches. No "▁" is put in front of the text, so that decoding gives back
// exactly what was encoded; the price is that a text-initial word is spelled
// differently ("Tag" versus "▁Tag"). Callers who want them to share tokens
// prepend a space to every text, before training and encoding alike, and
// strip it after decoding.
//
// Only U+0020 is a word boundary; every other character is an ordinary part
// of a word, except that some characters never become alphabet tokens:
//
//   - control characters (tab, newline, carriage return, NUL, DEL, the C1
//     controls) and U+2028/U+2029, so that no token holds a character that a
//     line-oriented reader of merges.txt could split on;
//   - a literal "▁" in the input, because the token "▁" decodes to a space.
//
// Those characters, characters seen fewer than MinFrequency times in
// training, and bytes that are not valid UTF-8 are encoded with the byte
// tokens "<0x00>"…"<0xFF>": one per byte of the character's UTF-8 encoding,
// or the invalid byte itself. This is the Llama convention ("\n" is "<0x0A>").
// Byte tokens never take part in merges, and Decode emits their bytes as they
// are, without the "▁" to space replacement, so a literal "▁" and invalid
// UTF-8 come back unchanged: Decode(Encode(s)) == s for every string s. The
// only cost is that a tab or newline takes one token that no merge can absorb,
// which for sentence-per-line corpora is immaterial.
//
// # Vocabulary
//
// Ids are laid out as
//
//	0 "<pad>", 1 "<s>", 2 "</s>", 3 "<unk>"   (PadID, BOSID, EOSID, UnkID)
//	4…259 "<0x00>"…"<0xFF>"                   byte tokens
//	260…  the alphabet, one character each, in code point order
//	then  one token per merge, in merge order
//
// Encode never emits a special token: byte fallback covers every input, so
// "<unk>" is there only because models and tools expect the slot, and adding
// "<s>" and "</s>" around a sequence is the caller's business. Decode writes
// nothing for the four special tokens, so that a model's output (padding and
// end marker included) can be decoded whole, and refuses ids outside the
// vocabulary with an error rather than guessing. Its result is not valid
// UTF-8 when the ids hold an invalid byte sequence (as a model may produce);
// use strings.ToValidUTF8 where that matters.
//
// Tokens other than byte and special tokens contain no U+0020, no control
// character and no line separator, so a merges.txt line "a b" is unambiguous.
//
// # Training
//
// Train counts words, keeps as the alphabet the characters seen at least
// MinFrequency times, and then repeatedly merges the most frequent adjacent
// pair of tokens within words until the vocabulary holds VocabSize tokens or
// no pair is seen at least MinFrequency times (so Size may be smaller than
// VocabSize on a small corpus). Ties between equally frequent pairs go to the
// pair whose left token, then right token, is smallest in byte order (which
// is code point order), so that the result depends only on the multiset of
// texts, never on their order or on map iteration. A merge occurrence is
// replaced left to right ("aaa" with the pair "a a" becomes "aa a"), exactly
// as Encode does, so the trainer's segmentation of its corpus is Encode's.
//
// A pair whose concatenation is already a token is never merged. This
// happens when text spells a special or byte token ("<s" and ">" would give
// "<s>"), and would happen if two merge paths led to one string; skipping
// such pairs keeps one token per merge and every token string unique, as
// the file format requires.
//
// Training uses the usual word-frequency table, pair counts updated
// incrementally for just the words a merge touches (found through an index
// from each pair to the words containing it) and a max-heap of pairs with
// lazily corrected counts, so each merge costs time proportional to the
// words it changes.
//
// # Encoding
//
// Within each word, Encode repeatedly merges the adjacent pair of lowest merge
// rank, leftmost first. Words of up to a few dozen symbols use a simple scan;
// longer ones a heap, so that adversarial input (a megabyte without spaces)
// stays O(n log n). Results for words of up to 64 bytes are kept in a cache
// of at most 65,536 words, emptied when full, so a long-running service does
// not grow without bound. A Tokenizer is safe for concurrent use.
//
// # Files
//
// Save writes dir/vocab.json, a JSON object from token to id listing every
// token in id order, and dir/merges.txt, the line "#version: 0.2" followed by
// one merge per line, the two tokens separated by one space. Each file is
// replaced atomically (temporary file, sync, rename); the pair is not.
//
// Load checks the files strictly and reports the first problem as one line
// naming the file (and line of merges.txt). It refuses anything but a regular
// file (a FIFO or directory named vocab.json is refused without blocking),
// files over 64 MiB, JSON that is invalid, not UTF-8, not one object, or has
// duplicate keys, ids that are not integers 0…n-1 each used once, special and
// byte tokens not at their fixed ids, a missing version line, a merge line
// that is not two tokens separated by one space, merges using a special or
// byte token or a token made by a later merge, merge results missing from
// vocab.json or not at the id following the previous merge's, and alphabet
// entries that are not one allowed character. Errors for malformed content
// are *FormatError; the others wrap the underlying error (a missing file
// gives one matching fs.ErrNotExist).
package bpe
