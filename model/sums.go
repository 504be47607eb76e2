package model

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/safetensors"
)

// SumsFile lists the sha256 of a model directory's files, as sha256sum
// prints them ("<64 hex digits>  <name>" per line), so `sha256sum -c
// SHA256SUMS` in the directory checks them too. Save writes it last; Load
// refuses a directory whose files do not match it. A directory without it
// (a model exported from PyTorch) loads unchecked.
const SumsFile = "SHA256SUMS"

// ErrChecksum is wrapped by Load's error for a model file that does not
// match its checksum (the same error safetensors reports for a sealed
// file).
var ErrChecksum = safetensors.ErrChecksum

// modelFiles are the files of dir that make the model: config.json, the
// weights and, when present, the tokenizer's.
func modelFiles(dir string) []string {
	names := []string{ConfigFile, WeightsFile}
	for _, name := range []string{bpe.VocabFile, bpe.MergesFile} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			names = append(names, name)
		}
	}
	return names
}

// writeSums writes dir's SumsFile for the model files in it.
func writeSums(dir string) error {
	var b bytes.Buffer
	for _, name := range modelFiles(dir) {
		sum, err := fileSum(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, name)
	}
	return fileio.WriteFileAtomic(filepath.Join(dir, SumsFile), b.Bytes())
}

// checkSums checks dir's model files against its SumsFile, if it has one:
// every model file present must be listed, and every file listed must
// exist and match.
func checkSums(dir string) error {
	path := filepath.Join(dir, SumsFile)
	if _, err := os.Lstat(path); os.IsNotExist(err) {
		return nil
	}
	b, err := fileio.ReadRegular(path, 1<<16)
	if err != nil {
		return err
	}
	want := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		sum, name, ok := strings.Cut(line, " ")
		name = strings.TrimPrefix(strings.TrimPrefix(name, " "), "*") // text or binary mode
		if !ok || len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" || name == "" || strings.ContainsRune(name, '/') || want[name] != "" {
			return fmt.Errorf("%s: line %d: want \"<sha256 in hex>  <file name>\", each file once, got %q", path, n, line)
		}
		want[name] = sum
	}
	for _, name := range modelFiles(dir) {
		if want[name] == "" {
			return fmt.Errorf("%s: %s is not listed: add its sha256 (sha256sum %s >> %s) or delete %s", path, name, name, SumsFile, SumsFile)
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		file := filepath.Join(dir, name)
		got, err := fileSum(file)
		if err != nil {
			return fmt.Errorf("%s lists %s: %w", path, name, err)
		}
		if got != want[name] {
			return fmt.Errorf("%s: %w: its sha256 is %s…, %s says %s…: the file changed after it was saved; restore it, or if the change is meant, delete %s",
				file, ErrChecksum, got[:12], SumsFile, want[name][:12], path)
		}
	}
	return nil
}

// fileSum is the sha256 of the regular file at path, in hex.
func fileSum(path string) (string, error) {
	f, err := fileio.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
