package fileio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, fifo, "/dev/zero", "/dev/null"} {
		done := make(chan error, 1)
		go func() { _, err := ReadRegular(p, 1<<20); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("ReadRegular(%s) = %v, want ErrNotRegular", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadRegular(%s) blocked", p)
		}
		if err := CheckRegular(p); !errors.Is(err, ErrNotRegular) {
			t.Errorf("CheckRegular(%s) = %v, want ErrNotRegular", p, err)
		}
	}
	if err := CheckRegular(filepath.Join(dir, "absent")); err != nil {
		t.Errorf("a missing path is for writers to create: %v", err)
	}
	if err := WriteFileAtomic("/dev/full", []byte("x")); !errors.Is(err, ErrNotRegular) {
		t.Errorf("WriteFileAtomic(/dev/full) = %v, want ErrNotRegular", err)
	}
}

func TestReadCapAndAtomicWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := WriteFileAtomic(p, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	b, err := ReadRegular(p, 5)
	if err != nil || string(b) != "hello" {
		t.Fatalf("ReadRegular = %q, %v", b, err)
	}
	if _, err := ReadRegular(p, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("cap 4 on 5 bytes: %v, want ErrTooLarge", err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

// TestAtomicWriteThroughSymlink: writing a symbolic link (absolute or
// relative, or a link to a link) replaces its target and keeps the link,
// leaving no temporary file in either directory.
func TestAtomicWriteThroughSymlink(t *testing.T) {
	for _, tc := range []struct {
		name string
		link func(t *testing.T, target, linkDir string) string
	}{
		{"absolute", func(t *testing.T, target, linkDir string) string {
			l := filepath.Join(linkDir, "l")
			if err := os.Symlink(target, l); err != nil {
				t.Fatal(err)
			}
			return l
		}},
		{"relative, through a second link", func(t *testing.T, target, linkDir string) string {
			rel, err := filepath.Rel(linkDir, target)
			if err != nil {
				t.Fatal(err)
			}
			first, second := filepath.Join(linkDir, "l1"), filepath.Join(linkDir, "l2")
			if err := os.Symlink(rel, first); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("l1", second); err != nil {
				t.Fatal(err)
			}
			return second
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			targetDir, linkDir := t.TempDir(), t.TempDir()
			target := filepath.Join(targetDir, "r.jsonl")
			if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			link := tc.link(t, target, linkDir)
			if err := WriteFileAtomic(link, []byte("new")); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("the link was replaced: %v, %v", fi.Mode(), err)
			}
			if b, err := os.ReadFile(target); err != nil || string(b) != "new" {
				t.Fatalf("target reads %q, %v; want the new bytes", b, err)
			}
			for _, dir := range []string{targetDir, linkDir} {
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					if strings.Contains(e.Name(), ".tmp-") {
						t.Errorf("temporary file left behind in %s: %s", dir, e.Name())
					}
				}
			}
		})
	}
}
