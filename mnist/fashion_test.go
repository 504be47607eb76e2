package mnist

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadFashion reads Debian's dataset-fashion-mnist, which make setup
// installs (scripts/setup.sh): the pinned hashes must match it.
func TestLoadFashion(t *testing.T) {
	train, test, err := LoadFashion(FashionDir)
	if err != nil {
		t.Fatalf("%v (make setup installs %s)", err, FashionPackage)
	}
	if train.N != 60000 || test.N != 10000 || train.Validate() != nil || test.Validate() != nil {
		t.Fatalf("Fashion-MNIST: %d train, %d test images", train.N, test.N)
	}
	if err := VerifyFashion(FashionDir); err != nil {
		t.Fatal(err)
	}
}

func TestLoadFashionRejects(t *testing.T) {
	files := fashionFiles()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  []string
	}{
		{"missing", func(*testing.T, string) {}, []string{"fashion-mnist: ", TrainImagesFile, "install the Debian package " + FashionPackage}},
		{"wrong size", func(t *testing.T, dir string) {
			writeSplit(t, dir, TrainImagesFile, TrainLabelsFile, randomSet(2, 1), true)
		}, []string{"fashion-mnist: " + filepath.Join("DIR", TrainImagesFile+".gz"), "1584 bytes, want 47040016", "not the file from " + FashionPackage}},
		{"not gzip", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, TrainImagesFile+".gz"), []byte{0x1f, 0x8b, 1, 2, 3})
		}, []string{"fashion-mnist: " + filepath.Join("DIR", TrainImagesFile+".gz"), "gzip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			_, _, err := LoadFashion(dir)
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "DIR", dir); err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("LoadFashion = %v, want an error containing %q", err, w)
				}
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error on several lines: %q", err)
			}
		})
	}
	// The right size and the wrong content: the hash tells.
	dir := t.TempDir()
	pf := files[3]
	writeFile(t, filepath.Join(dir, pf.name+".gz"), gzipBytes(t, bytes.Repeat([]byte{1}, int(pf.size))))
	_, err := readPinned(dir, pf)
	if err == nil || !strings.Contains(err.Error(), "sha256 ") || !strings.Contains(err.Error(), "want "+pf.sum) {
		t.Errorf("readPinned(same size, other content) = %v, want a sha256 mismatch", err)
	}
}
