package bpe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lenspec/lenspec/internal/fileio"
)

// File names inside a tokenizer directory, as Hugging Face spells them.
const (
	VocabFile  = "vocab.json"
	MergesFile = "merges.txt"
)

// mergesHeader is the first line of merges.txt written by Hugging Face
// tokenizers and expected by their readers.
const mergesHeader = "#version: 0.2"

// maxFileSize caps what Load reads: an 8,000-token tokenizer takes about
// 200 KB, so anything near the cap is not a tokenizer file.
const maxFileSize = 64 << 20

// FormatError reports a tokenizer file whose content Load refuses.
type FormatError struct {
	Path string // the file
	Line int    // 1-based line of merges.txt, or 0 if not about one line
	Msg  string // the problem
}

// Error returns the problem as one line, "bpe: path line N: msg".
func (e *FormatError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("bpe: %s line %d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("bpe: %s: %s", e.Path, e.Msg)
}

// Save writes dir/vocab.json and dir/merges.txt, creating dir if needed.
// The output depends only on the tokenizer, so equal tokenizers give equal
// files.
func (t *Tokenizer) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bpe: %w", err)
	}
	if err := fileio.WriteFileAtomic(filepath.Join(dir, VocabFile), t.vocabJSON()); err != nil {
		return fmt.Errorf("bpe: %w", err)
	}
	if err := fileio.WriteFileAtomic(filepath.Join(dir, MergesFile), t.mergesText()); err != nil {
		return fmt.Errorf("bpe: %w", err)
	}
	return nil
}

// vocabJSON returns the content of vocab.json: one token per line, in id
// order, so that files diff well.
func (t *Tokenizer) vocabJSON() []byte {
	var b []byte
	b = append(b, "{\n"...)
	for id, tok := range t.tokens {
		b = append(b, "  "...)
		b = appendJSONString(b, tok)
		b = append(b, ": "...)
		b = strconv.AppendInt(b, int64(id), 10)
		if id < len(t.tokens)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	return append(b, "}\n"...)
}

// mergesText returns the content of merges.txt.
func (t *Tokenizer) mergesText() []byte {
	var b []byte
	b = append(b, mergesHeader+"\n"...)
	for _, p := range t.merges {
		b = append(b, t.tokens[p[0]]...)
		b = append(b, ' ')
		b = append(b, t.tokens[p[1]]...)
		b = append(b, '\n')
	}
	return b
}

// appendJSONString appends s as a JSON string, escaping only what JSON
// requires so that "<s>" and "▁" stay readable.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// Load reads a tokenizer saved by Save (or written by another tool in the
// same layout) from dir, checking it strictly; see the package doc.
func Load(dir string) (*Tokenizer, error) {
	vpath := filepath.Join(dir, VocabFile)
	mpath := filepath.Join(dir, MergesFile)
	vdata, err := fileio.ReadRegular(vpath, maxFileSize)
	if err != nil {
		return nil, fmt.Errorf("bpe: %w", err)
	}
	mdata, err := fileio.ReadRegular(mpath, maxFileSize)
	if err != nil {
		return nil, fmt.Errorf("bpe: %w", err)
	}
	return parse(vpath, vdata, mpath, mdata)
}

// parse builds a Tokenizer from the contents of vocab.json and merges.txt,
// naming vpath and mpath in errors.
func parse(vpath string, vdata []byte, mpath string, mdata []byte) (*Tokenizer, error) {
	tokens, ids, err := parseVocab(vpath, vdata)
	if err != nil {
		return nil, err
	}
	merges, numAlpha, err := parseMerges(mpath, mdata, tokens, ids)
	if err != nil {
		return nil, err
	}
	for id := alphaBase; id < alphaBase+numAlpha; id++ {
		tok := tokens[id]
		r, size := utf8.DecodeRuneInString(tok)
		if size != len(tok) || r == utf8.RuneError && size < 2 {
			return nil, &FormatError{Path: vpath, Msg: fmt.Sprintf(
				"token %q (id %d) is neither one character nor the result of a merge in %s", tok, id, MergesFile)}
		}
		if !alphabetRune(r) {
			return nil, &FormatError{Path: vpath, Msg: fmt.Sprintf(
				"token %q (id %d) is a space, control or line-separator character, which only byte tokens may stand for", tok, id)}
		}
	}
	return newTokenizer(tokens, ids, numAlpha, merges), nil
}

// parseVocab decodes vocab.json into the tokens by id.
func parseVocab(path string, data []byte) ([]string, map[string]int32, error) {
	fail := func(format string, args ...any) ([]string, map[string]int32, error) {
		return nil, nil, &FormatError{Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	// encoding/json would silently replace invalid UTF-8.
	if !utf8.Valid(data) {
		return fail("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	jsonErr := func(err error) ([]string, map[string]int32, error) {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fail("invalid JSON near byte %d: %v", dec.InputOffset(), err)
	}
	tok, err := dec.Token()
	if err != nil {
		return jsonErr(err)
	}
	if tok != json.Delim('{') {
		return fail("want a JSON object mapping tokens to ids")
	}
	type entry struct {
		tok string
		id  int
	}
	var entries []entry
	ids := make(map[string]int32)
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return jsonErr(err)
		}
		key, ok := kt.(string)
		if !ok {
			return jsonErr(fmt.Errorf("object key is not a string"))
		}
		if _, dup := ids[key]; dup {
			return fail("token %q appears twice", key)
		}
		vt, err := dec.Token()
		if err != nil {
			return jsonErr(err)
		}
		num, ok := vt.(json.Number)
		id, convErr := strconv.Atoi(string(num))
		if !ok || convErr != nil || id < 0 || !isPlainInt(string(num)) {
			return fail("id of %q is %s, not a non-negative integer", key, describeJSON(vt))
		}
		ids[key] = 0 // real ids are set once checked
		entries = append(entries, entry{key, id})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return jsonErr(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("data after the JSON object")
	}

	n := len(entries)
	tokens := make([]string, n)
	set := make([]bool, n)
	for _, e := range entries {
		if e.id >= n {
			return fail("ids must be 0…%d with no gaps, but %q has id %d", n-1, e.tok, e.id)
		}
		if set[e.id] {
			return fail("tokens %q and %q both have id %d", tokens[e.id], e.tok, e.id)
		}
		tokens[e.id], set[e.id] = e.tok, true
		ids[e.tok] = int32(e.id)
	}
	if n < alphaBase {
		return fail("%d tokens, fewer than the %d special and byte tokens every vocabulary starts with", n, alphaBase)
	}
	for id := range numSpecial {
		if want := specialToken(id); tokens[id] != want {
			return fail("id %d is %q, want the special token %q", id, tokens[id], want)
		}
	}
	for b := range 256 {
		if want := byteToken(byte(b)); tokens[byteBase+b] != want {
			return fail("id %d is %q, want the byte token %q", byteBase+b, tokens[byteBase+b], want)
		}
	}
	return tokens, ids, nil
}

// isPlainInt reports whether s is digits without a leading zero, refusing
// the "1.0", "1e3" and "-0" that JSON numbers also allow.
func isPlainInt(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// describeJSON names a JSON value for an error message.
func describeJSON(v json.Token) string {
	switch v := v.(type) {
	case json.Number:
		return string(v)
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	}
	return "not a number"
}

// parseMerges decodes merges.txt against the vocabulary and returns the
// merges with the alphabet size they imply.
func parseMerges(path string, data []byte, tokens []string, ids map[string]int32) ([][2]int32, int, error) {
	lines := strings.Split(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the final newline
	}
	if len(lines) == 0 || lines[0] != mergesHeader {
		first := ""
		if len(lines) > 0 {
			first = lines[0]
		}
		return nil, 0, &FormatError{Path: path, Line: 1, Msg: fmt.Sprintf("%s: want %q", quoteLine(first), mergesHeader)}
	}
	lines = lines[1:]
	numAlpha := len(tokens) - alphaBase - len(lines)
	if numAlpha < 0 {
		return nil, 0, &FormatError{Path: path, Msg: fmt.Sprintf(
			"%d merges, but %s has only %d tokens after the byte tokens", len(lines), VocabFile, len(tokens)-alphaBase)}
	}
	merges := make([][2]int32, len(lines))
	for i, line := range lines {
		fail := func(format string, args ...any) ([][2]int32, int, error) {
			return nil, 0, &FormatError{Path: path, Line: i + 2, Msg: quoteLine(line) + ": " + fmt.Sprintf(format, args...)}
		}
		parts := strings.Split(line, " ")
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			return fail("want two tokens separated by one space")
		}
		want := int32(alphaBase + numAlpha + i)
		var pair [2]int32
		for j, p := range parts {
			id, ok := ids[p]
			switch {
			case !ok:
				return fail("%q is not in %s", p, VocabFile)
			case id < alphaBase:
				return fail("%q is a special or byte token, which no merge may use", p)
			case id >= want:
				return fail("%q (id %d) is made by a later merge", p, id)
			}
			pair[j] = id
		}
		result := parts[0] + parts[1]
		id, ok := ids[result]
		if !ok {
			return fail("the result %q is not in %s", result, VocabFile)
		}
		if id != want {
			return fail("the result %q has id %d in %s, want %d (merge results follow the alphabet in merge order)", result, id, VocabFile, want)
		}
		merges[i] = pair
	}
	return merges, numAlpha, nil
}

// quoteLine quotes a line for an error message, shortening a long one.
func quoteLine(s string) string {
	const max = 80
	if len(s) > max {
		return strconv.Quote(s[:max]) + "…"
	}
	return strconv.Quote(s)
}
