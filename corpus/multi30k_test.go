package corpus

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func gz(t testing.TB, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(text))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// fixture writes a small corpus of fixed splits into a new directory and
// returns it with the pins of its files.
func fixture(t *testing.T, files map[string]string) (string, pinnedSplits) {
	t.Helper()
	dir := t.TempDir()
	ps := pinnedSplits{name: "fixture", splits: [3]string{"a", "b", "c"}, pairs: [3]int{2, 1, 1}, files: map[string]string{}}
	for name, text := range files {
		data := gz(t, text)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		ps.files[name] = hex.EncodeToString(sum[:])
	}
	return dir, ps
}

var fixtureFiles = map[string]string{
	"a.de.gz": "Ein Hund läuft.\n  Zwei   Katzen\tschlafen.\r\n",
	"a.en.gz": "A dog runs.\nTwo cats sleep.\n",
	"b.de.gz": "Ein Mann.",
	"b.en.gz": "A man.\n",
	"c.de.gz": "Eine Frau.\n",
	"c.en.gz": "A woman.\n",
}

func TestPinnedSplitsImportAndLoad(t *testing.T) {
	src, ps := fixture(t, fixtureFiles)
	dir := filepath.Join(t.TempDir(), "cache")
	if _, err := ps.load(dir); !errors.Is(err, ErrNotImported) {
		t.Fatalf("load before import: %v, want ErrNotImported", err)
	}
	if err := ps.importFrom(src, dir); err != nil {
		t.Fatal(err)
	}
	if err := ps.verify(dir); err != nil {
		t.Fatal(err)
	}
	sp, err := ps.load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]Pair{
		{{"Ein Hund läuft.", "A dog runs."}, {"Zwei Katzen schlafen.", "Two cats sleep."}},
		{{"Ein Mann.", "A man."}},
		{{"Eine Frau.", "A woman."}},
	}
	for i, got := range [][]Pair{sp.Train, sp.Dev, sp.Test} {
		if len(got) != len(want[i]) {
			t.Fatalf("split %d: %q, want %q", i, got, want[i])
		}
		for j := range got {
			if got[j] != want[i][j] {
				t.Errorf("split %d pair %d: %q, want %q", i, j, got[j], want[i][j])
			}
		}
	}
	if sp.Format != "fixture" || sp.Path != dir || sp.SHA256 != pinSetDigest(ps.files) {
		t.Errorf("provenance %q %q %q", sp.Format, sp.Path, sp.SHA256)
	}
}

func TestPinnedSplitsErrors(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, src string, ps *pinnedSplits)
		want   string // in the error, with the file's name
	}{
		{"missing file", func(t *testing.T, src string, ps *pinnedSplits) {
			os.Remove(filepath.Join(src, "b.en.gz"))
		}, "b.en.gz"},
		{"changed file", func(t *testing.T, src string, ps *pinnedSplits) {
			os.WriteFile(filepath.Join(src, "c.de.gz"), gz(t, "Eine andere Frau.\n"), 0o644)
		}, "c.de.gz: sha256"},
		{"directory in place of a file", func(t *testing.T, src string, ps *pinnedSplits) {
			os.Remove(filepath.Join(src, "a.de.gz"))
			os.Mkdir(filepath.Join(src, "a.de.gz"), 0o755)
		}, "a.de.gz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, ps := fixture(t, fixtureFiles)
			tt.change(t, src, &ps)
			dir := t.TempDir()
			err := ps.importFrom(src, dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n\n") {
				t.Fatalf("import: %v, want an error naming %q", err, tt.want)
			}
			// What did verify was installed; the rest is still missing.
			if err := ps.verify(dir); err == nil {
				t.Fatal("verify passes after a failed import")
			}
		})
	}
	if _, ps := fixture(t, fixtureFiles); ps.importFrom(filepath.Join(t.TempDir(), "none"), t.TempDir()) == nil {
		t.Error("import from a missing directory succeeded")
	}
}

// TestPinnedSplitsContent: files that pass their pins but do not make a
// corpus are refused with the split and line named.
func TestPinnedSplitsContent(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"line counts differ", map[string]string{"a.en.gz": "A dog runs.\n"}, "fixture: a: 2 German and 1 English lines"},
		{"empty side", map[string]string{"a.en.gz": "A dog runs.\n \n"}, "fixture: a line 2: an empty side"},
		{"wrong size", map[string]string{"b.de.gz": "Ein Mann.\nNoch einer.\n", "b.en.gz": "A man.\nOne more.\n"}, "fixture: b: 2 pairs, want 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range fixtureFiles {
				files[k] = v
			}
			for k, v := range tt.files {
				files[k] = v
			}
			dir, ps := fixture(t, files)
			if _, err := ps.load(dir); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("load: %v, want %q", err, tt.want)
			}
		})
	}
	// Not gzip at all (pinned as it is).
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x.de.gz"), []byte("plain text\n"), 0o644)
	sum := sha256.Sum256([]byte("plain text\n"))
	ps := pinnedSplits{name: "fixture", files: map[string]string{"x.de.gz": hex.EncodeToString(sum[:])}}
	if _, err := ps.readSplit(dir, "x"); err == nil || !strings.Contains(err.Error(), "x.de.gz") {
		t.Fatalf("a file that is not gzip: %v", err)
	}
}

// TestMulti30kPins: the pins are the published files' (their sha256sum
// listing), and the corpus digest recorded in models is that listing's.
func TestMulti30kPins(t *testing.T) {
	if len(multi30kFiles) != 6 {
		t.Fatalf("%d pinned files", len(multi30kFiles))
	}
	for _, split := range Multi30kSplits {
		for _, lang := range []string{"de", "en"} {
			if h := multi30kFiles[split+"."+lang+".gz"]; len(h) != 64 {
				t.Errorf("%s.%s.gz: pin %q", split, lang, h)
			}
		}
	}
	listing := ""
	for _, name := range []string{"test_2016_flickr.de.gz", "test_2016_flickr.en.gz", "train.de.gz", "train.en.gz", "val.de.gz", "val.en.gz"} {
		listing += multi30kFiles[name] + "  " + name + "\n"
	}
	sum := sha256.Sum256([]byte(listing))
	if Multi30kSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("Multi30kSHA256 %s is not the listing's sha256", Multi30kSHA256)
	}
}

func FuzzPairLines(f *testing.F) {
	f.Add([]byte("Ein Hund.\nZwei.\n"), []byte("A dog.\nTwo.\n"))
	f.Add([]byte("\x1f\x8b"), []byte(""))
	f.Fuzz(func(t *testing.T, de, en []byte) {
		zde, zen := gz(t, string(de)), gz(t, string(en))
		des, err := gunzipLines("de", zde)
		if err != nil {
			return
		}
		ens, err := gunzipLines("en", zen)
		if err != nil {
			return
		}
		pairs, err := pairLines("fuzz", des, ens)
		if err != nil {
			return
		}
		for _, p := range pairs {
			if p.Src == "" || p.Tgt == "" || p.Src != strings.TrimSpace(p.Src) {
				t.Fatalf("pair %q", p)
			}
		}
		// Raw bytes that are not gzip never panic.
		gunzipLines("raw", de)
	})
}
