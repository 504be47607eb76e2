package experiment

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/model"
)

// maxSentencesFile caps a sentences file: a text attack runs for minutes
// per sentence, so a larger file is a mistake, not a run.
const maxSentencesFile = 16 << 20

// ReadSentences reads a file of source sentences, one per line (blank
// lines skipped, a final newline optional, "\r\n" endings accepted).
// Errors name the file and line.
func ReadSentences(path string) ([]string, error) {
	b, err := fileio.ReadRegular(path, maxSentencesFile)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, line := range strings.Split(string(bytes.TrimSuffix(b, []byte("\n"))), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if !utf8.ValidString(line) {
			return nil, fmt.Errorf("%s:%d: not valid UTF-8", path, i+1)
		}
		if strings.ContainsFunc(line, model.IsControl) {
			return nil, fmt.Errorf("%s:%d: holds control characters (NUL, ESC, DEL…)", path, i+1)
		}
		if !model.Blank(line) {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no sentences (one per line)", path)
	}
	return out, nil
}

// Sentences is the user's own source sentences as text-attack data for
// model d, as Inputs is for images: each a text on one line that the model
// reads (not blank, within its max_source_len). There is no reference
// translation (RefText empty). The data's identity in the records' keys is
// name (where the sentences came from: a file's base name, or "args") and
// the sha256 of the sentences, so the same sentences give the same keys
// and an edited file starts afresh.
func Sentences(texts []string, name string, d model.Decoder[float32]) (TextData, error) {
	if len(texts) == 0 {
		return TextData{}, errors.New("no sentences")
	}
	h := sha256.New()
	pairs := make([]corpus.Pair, len(texts))
	for i, s := range texts {
		switch {
		case !utf8.ValidString(s):
			return TextData{}, fmt.Errorf("sentence %d is not valid UTF-8", i+1)
		case strings.ContainsAny(s, "\r\n"):
			return TextData{}, fmt.Errorf("sentence %d spans several lines", i+1)
		case strings.ContainsFunc(s, model.IsControl):
			return TextData{}, fmt.Errorf("sentence %d holds control characters (NUL, ESC, DEL…)", i+1)
		case model.Blank(s):
			return TextData{}, fmt.Errorf("sentence %d is blank", i+1)
		}
		pairs[i] = corpus.Pair{Src: s}
		h.Write([]byte(s))
		h.Write([]byte{'\n'})
	}
	td, err := Translations(pairs, "sentences", filepath.Base(name), 0, d)
	if err != nil {
		return TextData{}, err
	}
	if max := d.Input().MaxLen; max > 0 {
		for i, src := range td.Sources {
			if len(src) > max {
				return TextData{}, fmt.Errorf("sentence %d: %w", i+1, &model.SourceTooLongError{Tokens: len(src), Max: max})
			}
		}
	}
	td.Ref.SHA256 = hex.EncodeToString(h.Sum(nil))
	return td, nil
}
