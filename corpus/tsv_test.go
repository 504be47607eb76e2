package corpus

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lenspec/lenspec/internal/fileio"
)

func TestReadTSV(t *testing.T) {
	p := filepath.Join(t.TempDir(), "corpus.tsv")
	content := "\ufeffDas Haus.\tThe house.\r\n" +
		"\n" +
		"   \r\n" +
		"#hashtag  heute\t #hashtag\ttoday\n" + // '#' starts a pair, not a comment
		"ein  \u00a0 Buch \t a book \n" +
		"ohne Zeilenende\tno line end"
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadTSV(p)
	if err == nil || !strings.Contains(err.Error(), p+":4: 2 tabs") {
		t.Fatalf("ReadTSV = %v, want the two tabs of line 4 reported", err)
	}
	content = strings.Replace(content, "\t #hashtag\ttoday", "\t #hashtag today", 1)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTSV(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []Pair{
		{"Das Haus.", "The house."},
		{"#hashtag heute", "#hashtag today"},
		{"ein Buch", "a book"},
		{"ohne Zeilenende", "no line end"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadTSV = %q, want %q", got, want)
	}
}

func TestReadTSVErrors(t *testing.T) {
	dir, write, fifo := fixtureDir(t)
	tests := []struct {
		name, path, want string
		is               error
	}{
		{"missing", filepath.Join(dir, "absent"), "", os.ErrNotExist},
		{"directory", dir, "", fileio.ErrNotRegular},
		{"FIFO", fifo, "", fileio.ErrNotRegular},
		{"device", "/dev/zero", "", fileio.ErrNotRegular},
		{"no tab", write("notab", "a\tb\nc d\n"), ":2: 0 tabs, want one", nil},
		{"two tabs", write("twotabs", "a\tb\tc\n"), ":1: 2 tabs, want one", nil},
		{"invalid UTF-8", write("latin1", "a\tb\nGr\xfc\xdfe\tgreetings\n"), ":2: invalid UTF-8", nil},
		{"empty source", write("nosrc", " \tb\n"), ":1: empty source", nil},
		{"empty target", write("notgt", "a\t\r\n"), ":1: empty target", nil},
		{"empty file", write("empty", "\n\n"), ": no pairs", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := ReadTSV(tt.path); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("ReadTSV(%s) blocked", tt.path)
			}
			if err == nil || !strings.Contains(err.Error(), tt.path+tt.want) || strings.Contains(err.Error(), "\n") ||
				(tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("ReadTSV(%s) = %v, want a one-line error with %q", tt.path, err, tt.path+tt.want)
			}
		})
	}
}

func FuzzReadTSV(f *testing.F) {
	for _, s := range []string{"a\tb\n", "\ufeffa\tb\r\nc\td", "a\tb\tc", "\xff\tb", "\n\n", " \t ", "#x\ty\n\n\tz"} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content []byte) {
		p := filepath.Join(dir, "corpus.tsv")
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		pairs, err := ReadTSV(p)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(pairs) == 0 {
			t.Fatal("no error and no pairs")
		}
		for _, pr := range pairs {
			for _, s := range []string{pr.Src, pr.Tgt} {
				if s == "" || s != normSpace(s) || strings.ContainsAny(s, "\t\n\r") {
					t.Fatalf("pair side %q", s)
				}
			}
		}
	})
}

// fixtureDir returns a temporary directory, a function writing a file
// into it, and a FIFO in it (a non-regular file the readers must refuse).
func fixtureDir(t *testing.T) (dir string, write func(name, content string) string, fifo string) {
	t.Helper()
	dir = t.TempDir()
	write = func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo = filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, write, fifo
}
