package corpus

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lenspec/lenspec/internal/fileio"
)

// ReadTSV reads a user's parallel corpus: UTF-8 text with one pair per
// line, "source<TAB>target". Line ends may be LF or CRLF, a leading byte
// order mark is ignored, blank lines are skipped, and white space inside
// each side is collapsed to single spaces. There is no comment syntax: a
// line starting with '#' is a pair like any other, as in the TSV files
// other translation tools read, since a sentence may start with '#'.
//
// A line without exactly one tab, with invalid UTF-8 or with an empty side
// is an error naming the file and line, as is a file without pairs: a
// corpus that silently loses lines would give misleading scores.
func ReadTSV(path string) ([]Pair, error) {
	b, err := fileio.ReadRegular(path, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("corpus: read TSV corpus: %w", err)
	}
	text := strings.TrimPrefix(string(b), "\ufeff")
	var pairs []Pair
	for n := 1; text != ""; n++ {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		line = strings.TrimSuffix(line, "\r")
		if !utf8.ValidString(line) {
			return nil, fmt.Errorf("corpus: %s:%d: invalid UTF-8", path, n)
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if tabs := strings.Count(line, "\t"); tabs != 1 {
			return nil, fmt.Errorf("corpus: %s:%d: %d tabs, want one (source<TAB>target)", path, n, tabs)
		}
		src, tgt, _ := strings.Cut(line, "\t")
		src, tgt = normSpace(src), normSpace(tgt)
		switch {
		case src == "":
			return nil, fmt.Errorf("corpus: %s:%d: empty source", path, n)
		case tgt == "":
			return nil, fmt.Errorf("corpus: %s:%d: empty target", path, n)
		}
		pairs = append(pairs, Pair{src, tgt})
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("corpus: %s: no pairs", path)
	}
	return pairs, nil
}
