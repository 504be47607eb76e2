package fileio

import (
	"errors"
	"os"
	"path/filepath"
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
