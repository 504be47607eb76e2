package experiment

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lenspec/lenspec/model"
)

func TestReadSentences(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []string
		err        string
	}{
		{"lines", "Das Haus.\nEin Hund.\n", []string{"Das Haus.", "Ein Hund."}, ""},
		{"no final newline, CRLF, blanks", "Das Haus.\r\n\n  \r\nEin Hund.", []string{"Das Haus.", "Ein Hund."}, ""},
		{"empty", "", nil, "no sentences"},
		{"blank lines only", "\n \n\t\n", nil, "no sentences"},
		{"invalid UTF-8", "gut\n\xff\n", nil, ":2: not valid UTF-8"},
		{"NUL bytes", "gut\n\x00\x00\x00\n", nil, ":2: holds control characters"},
		{"escape", "Ein \x1b[31mHund\n", nil, ":1: holds control characters"},
	} {
		p := filepath.Join(t.TempDir(), "s.txt")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadSentences(p)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), p) {
				t.Errorf("%s: error %v, want one naming %s and %q", c.name, err, p, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	if _, err := ReadSentences(t.TempDir()); err == nil {
		t.Error("read a directory")
	}
}

// FuzzReadSentences: any file reads without a panic, to sentences that
// are valid UTF-8 on one line and not blank, or to an error.
func FuzzReadSentences(f *testing.F) {
	for _, s := range []string{"Das Haus.\n", "a\r\n\r\nb", "", "\xff", "\r\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "s.txt")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadSentences(p)
		if err != nil {
			return
		}
		if len(got) == 0 {
			t.Fatal("no sentences and no error")
		}
		for _, s := range got {
			if !utf8.ValidString(s) || strings.Contains(s, "\n") || strings.TrimSpace(s) == "" || strings.ContainsFunc(s, model.IsControl) {
				t.Fatalf("sentence %q", s)
			}
		}
	})
}

// TestSentences: the user's sentences become text-attack data keyed by
// their name and content; texts the model cannot read are refused.
func TestSentences(t *testing.T) {
	m := tinyTextModel(t)
	texts := []string{"Das Haus ist klein.", "Ein kleines Haus."}
	a, err := Sentences(texts, "/some/dir/mine.txt", m.D32)
	if err != nil {
		t.Fatal(err)
	}
	if a.Ref.Name != "sentences" || a.Ref.Split != "mine.txt" || len(a.Ref.SHA256) != 64 || len(a.Sources) != 2 || a.Pairs[1].Src != texts[1] || a.Redact {
		t.Fatalf("data %+v", a)
	}
	b, _ := Sentences(texts[:1], "mine.txt", m.D32)
	c, _ := Sentences([]string{texts[1], texts[0]}, "mine.txt", m.D32)
	if b.Ref.SHA256 == a.Ref.SHA256 || c.Ref.SHA256 == a.Ref.SHA256 {
		t.Fatal("other sentences, or the same in another order, share the data's identity")
	}
	for _, bad := range [][]string{nil, {"gut", " "}, {"a\nb"}, {"\xff"}, {"gut", "\x00\x00"}, {"Ein \x7fHund"}} {
		if _, err := Sentences(bad, "x", m.D32); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
