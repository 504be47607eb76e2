package corpus

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lenspec/lenspec/internal/fileio"
)

// Multi30k task 1 (Elliott et al., 2016, "Multi30K: Multilingual
// English-German Image Descriptions"): German descriptions of Flickr30k
// images with their English translations, in fixed splits. lenspec uses
// train for training, val for model selection and test_2016_flickr for
// reported figures, and no other of its test sets. The dataset states no
// licence, so none of its text is ever part of lenspec: ImportMulti30k
// copies the raw files (multi30k/dataset, data/task1/raw/) from a directory
// the user points to into the data cache, checking each against its pinned
// sha256, and LoadMulti30k reads them from there.

// Multi30kSplits names Multi30k's parts in the order Splits holds them:
// training, dev (val) and test.
var Multi30kSplits = [3]string{"train", "val", "test_2016_flickr"}

// pinnedSplits is a corpus of fixed splits in pinned gzip files,
// <split>.de.gz and <split>.en.gz: Multi30k, or a test's fixture.
type pinnedSplits struct {
	name   string
	splits [3]string
	files  map[string]string // file name → sha256
	pairs  [3]int            // pairs per split
}

// multi30k pins the raw gzip files: a changed file would change every
// figure measured on it.
var multi30k = pinnedSplits{
	name:   "multi30k",
	splits: Multi30kSplits,
	pairs:  Multi30kPairs,
	files:  multi30kFiles,
}

var multi30kFiles = map[string]string{
	"train.de.gz":            "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
	"train.en.gz":            "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
	"val.de.gz":              "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
	"val.en.gz":              "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
	"test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
	"test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
}

// Multi30kSHA256 names the whole pinned corpus in records and model
// configs: the sha256 of its sha256sum listing (files in name order).
var Multi30kSHA256 = pinSetDigest(multi30kFiles)

// Multi30kPairs are the pinned splits' sizes (train, val, test).
var Multi30kPairs = [3]int{29000, 1014, 1000}

// ErrNotImported is returned (wrapped) when the data cache does not hold
// a corpus of pinned files yet: the caller should import it
// (ImportMulti30k).
var ErrNotImported = errors.New("not in the data cache")

// DefaultMulti30kDir is where ImportMulti30k puts the files unless told
// otherwise: $LENSPEC_DATA/multi30k, or lenspec/multi30k in the user's
// cache directory.
func DefaultMulti30kDir() (string, error) {
	if d := os.Getenv("LENSPEC_DATA"); d != "" {
		return filepath.Join(d, "multi30k"), nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("multi30k: no data directory: set LENSPEC_DATA: %w", err)
	}
	return filepath.Join(cache, "lenspec", "multi30k"), nil
}

// ImportMulti30k copies the six pinned files from src (a copy or clone of
// multi30k/dataset's data/task1/raw/, or a directory holding those files)
// into dir, checking each file's sha256 before it is installed under its
// final name (written atomically). A file of dir that already verifies is
// kept. Every missing or mismatching file is named in the error.
func ImportMulti30k(src, dir string) error { return multi30k.importFrom(src, dir) }

func (ps pinnedSplits) importFrom(src, dir string) error {
	if fi, err := os.Stat(src); err != nil {
		return fmt.Errorf("%s: %w", ps.name, err)
	} else if !fi.IsDir() {
		return fmt.Errorf("%s: %s is not a directory", ps.name, src)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", ps.name, err)
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(ps.files)) {
		if ps.verifyPinned(filepath.Join(dir, name), ps.files[name]) == nil {
			continue
		}
		from := filepath.Join(src, name)
		data, err := fileio.ReadRegular(from, MaxFileSize)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ps.name, err))
			continue
		}
		if err := ps.checkPinned(from, data, ps.files[name]); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := fileio.WriteFileAtomic(filepath.Join(dir, name), data); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ps.name, err))
		}
	}
	return oneLine(errs)
}

// oneLine joins errors into one error on one line (errors.Join's breaks
// lines), keeping each for errors.Is.
func oneLine(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return &joined{strings.Join(msgs, "; "), errs}
}

type joined struct {
	msg  string
	errs []error
}

func (j *joined) Error() string   { return j.msg }
func (j *joined) Unwrap() []error { return j.errs }

// VerifyMulti30k checks that dir holds the six pinned files.
func VerifyMulti30k(dir string) error { return multi30k.verify(dir) }

func (ps pinnedSplits) verify(dir string) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(ps.files)) {
		if err := ps.verifyPinned(filepath.Join(dir, name), ps.files[name]); err != nil {
			errs = append(errs, err)
		}
	}
	return oneLine(errs)
}

// LoadMulti30k reads Multi30k's three splits from dir (where
// ImportMulti30k put them), each file checked against its pin. Text is
// single-spaced (as every reader of this package returns it) and nothing
// else is changed: the splits are the dataset's own, not deduplicated, so
// figures compare with published ones.
func LoadMulti30k(dir string) (*Splits, error) { return multi30k.load(dir) }

func (ps pinnedSplits) load(dir string) (*Splits, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %s: %w (lenspec data %s --from DIR imports it)", ps.name, dir, ErrNotImported, ps.name)
	}
	var parts [3][]Pair
	for i, split := range ps.splits {
		p, err := ps.readSplit(dir, split)
		if err != nil {
			return nil, err
		}
		if len(p) != ps.pairs[i] {
			return nil, fmt.Errorf("%s: %s: %d pairs, want %d", ps.name, split, len(p), ps.pairs[i])
		}
		parts[i] = p
	}
	return &Splits{Train: parts[0], Dev: parts[1], Test: parts[2], Path: dir, SHA256: pinSetDigest(ps.files), Format: ps.name, Restricted: true}, nil
}

// readSplit reads one split's German and English files line by line.
func (ps pinnedSplits) readSplit(dir, split string) ([]Pair, error) {
	var sides [2][]string
	for k, lang := range []string{"de", "en"} {
		name := split + "." + lang + ".gz"
		path := filepath.Join(dir, name)
		data, err := fileio.ReadRegular(path, MaxFileSize)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %s: %w (lenspec data %s --from DIR imports it)", ps.name, path, ErrNotImported, ps.name)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ps.name, err)
		}
		if err := ps.checkPinned(path, data, ps.files[name]); err != nil {
			return nil, err
		}
		if sides[k], err = gunzipLines(path, data); err != nil {
			return nil, fmt.Errorf("%s: %w", ps.name, err)
		}
	}
	return pairLines(ps.name+": "+split, sides[0], sides[1])
}

// pairLines pairs the German and English lines of one split; what names
// it in errors.
func pairLines(what string, de, en []string) ([]Pair, error) {
	if len(de) != len(en) {
		return nil, fmt.Errorf("%s: %d German and %d English lines", what, len(de), len(en))
	}
	pairs := make([]Pair, len(de))
	for i := range de {
		p := Pair{Src: normSpace(de[i]), Tgt: normSpace(en[i])}
		if p.Src == "" || p.Tgt == "" {
			return nil, fmt.Errorf("%s line %d: an empty side", what, i+1)
		}
		pairs[i] = p
	}
	return pairs, nil
}

// gunzipLines decompresses a gzip file's data into its lines (without
// their line ends); a last line without a newline counts.
func gunzipLines(path string, data []byte) ([]string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(zr, MaxFileSize))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, strings.TrimRight(sc.Text(), "\r"))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return lines, nil
}

// verifyPinned checks the file at path against its pinned sha256.
func (ps pinnedSplits) verifyPinned(path, want string) error {
	data, err := fileio.ReadRegular(path, MaxFileSize)
	if err != nil {
		return fmt.Errorf("%s: %w", ps.name, err)
	}
	return ps.checkPinned(path, data, want)
}

func (ps pinnedSplits) checkPinned(path string, data []byte, want string) error {
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != want {
		return fmt.Errorf("%s: %s: sha256 %s, want %s (not the pinned file)", ps.name, path, got, want)
	}
	return nil
}

// pinSetDigest is the sha256 of "hash  name\n" lines in name order (the
// sha256sum format), so one hash names a set of pinned files.
func pinSetDigest(pins map[string]string) string {
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(pins)) {
		fmt.Fprintf(h, "%s  %s\n", pins[name], name)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func init() {
	Register(Source{Name: "multi30k", Help: "Multi30k task 1, imported by lenspec data multi30k",
		Location: "where lenspec data multi30k put it (default: $LENSPEC_DATA/multi30k or the user cache dir)", LocationFlag: "multi30k-dir",
		DefaultPath: DefaultMulti30kDir,
		Load:        func(dir string, _ uint64) (*Splits, error) { return LoadMulti30k(dir) }})
}
