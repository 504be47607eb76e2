package corpus

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/lenspec/lenspec/internal/fileio"
)

// Splits is a corpus prepared for a translator: deduplicated and split
// (SplitSentences), with where it came from.
type Splits struct {
	Train, Dev, Test []Pair
	// Path and SHA256 name the source file; Format is "ding" or "tsv".
	Path, SHA256, Format string
	// Ding holds ReadDing's counts for a Ding source.
	Ding *DingStats
	// Restricted is set when the corpus's text may not be copied out of
	// it (Multi30k states no licence): results that would quote its
	// sentences point into it instead.
	Restricted bool
}

// LoadDing reads the Ding dictionary at path, refusing any file but the
// pinned one (VerifyDing: another release changes every split), and
// prepares it with the split seed and the default dev and test fractions.
func LoadDing(path string, seed uint64) (*Splits, error) {
	if err := VerifyDing(path); err != nil {
		return nil, err
	}
	pairs, stats, err := ReadDing(path, DingOptions{})
	if err != nil {
		return nil, err
	}
	s, err := prepare(pairs, seed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.Path, s.SHA256, s.Format, s.Ding = path, DingSHA256, "ding", &stats
	return s, nil
}

// LoadTSV reads a corpus of "source<TAB>target" lines (ReadTSV) and
// prepares it as LoadDing does; its sha256 is recorded, not pinned.
func LoadTSV(path string, seed uint64) (*Splits, error) {
	pairs, err := ReadTSV(path)
	if err != nil {
		return nil, err
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return nil, err
	}
	s, err := prepare(pairs, seed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.Path, s.SHA256, s.Format = path, sum, "tsv"
	return s, nil
}

func prepare(pairs []Pair, seed uint64) (*Splits, error) {
	train, dev, test, err := SplitSentences(Dedup(pairs), seed, DefaultDevFrac, DefaultTestFrac)
	if err != nil {
		return nil, err
	}
	if len(train) == 0 || len(dev) == 0 || len(test) == 0 {
		return nil, fmt.Errorf("%d training, %d dev and %d test pairs: a corpus needs all three (dev and test take sentences only)", len(train), len(dev), len(test))
	}
	return &Splits{Train: train, Dev: dev, Test: test}, nil
}

func fileSHA256(path string) (string, error) {
	f, err := fileio.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, MaxFileSize+1)); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
