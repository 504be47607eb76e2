package miptest

import (
	"io"
	"os"
	"syscall"
	"testing"
)

// CaptureStdout runs f with file descriptor 1 redirected to a pipe and
// returns what was written to it, by anyone in the process.
func CaptureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved, err := syscall.Dup(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Dup3(int(w.Fd()), 1, 0); err != nil {
		t.Fatal(err)
	}
	out := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	restored := false
	restore := func() {
		if !restored {
			restored = true
			syscall.Dup3(saved, 1, 0)
			syscall.Close(saved)
			w.Close()
		}
	}
	defer restore()
	f()
	restore()
	return <-out
}
