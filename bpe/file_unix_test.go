//go:build unix

package bpe

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestLoadFIFO checks that a FIFO in place of either file is refused at once
// instead of blocking Load until a writer appears.
func TestLoadFIFO(t *testing.T) {
	for _, name := range []string{VocabFile, MergesFile} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, VocabFile), []byte(vocabOf(validTokens())), 0o644)
			os.WriteFile(filepath.Join(dir, MergesFile), []byte(validMerges), 0o644)
			p := filepath.Join(dir, name)
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skip("mkfifo:", err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := Load(dir)
				done <- err
			}()
			select {
			case err := <-done:
				checkLoadError(t, err, p, "it is a FIFO")
			case <-time.After(5 * time.Second):
				t.Fatal("Load blocked on a FIFO")
			}
		})
	}
}
