package safetensors

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sealedFile() *File {
	return &File{Metadata: map[string]string{"epoch": "3", "setting.lr": "0.001"}, Tensors: []Tensor{
		F32("w", []int{2, 3}, []float32{1, 2, 3, 4, 5, 6}),
		F32("adam.m.w", []int{2, 3}, []float32{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}),
	}}
}

// TestSealed: a sealed file holds the sha256 of its bytes with the digits
// zeroed, reads back with every tensor and metadata entry, and fails to
// read, naming the checksum or the format, if any one of its bytes is
// changed; without the seal most such changes read silently.
func TestSealed(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSealed(&b, sealedFile()); err != nil {
		t.Fatal(err)
	}
	file := b.Bytes()
	f, err := Read(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	sum := f.Metadata[ChecksumKey]
	zeroed := bytes.Replace(file, []byte(sum), bytes.Repeat([]byte("0"), 64), 1)
	if h := sha256.Sum256(zeroed); hex.EncodeToString(h[:]) != sum || f.Metadata["epoch"] != "3" || len(f.Tensors) != 2 {
		t.Fatalf("checksum %s, metadata %v, %d tensors", sum, f.Metadata, len(f.Tensors))
	}
	var plain bytes.Buffer
	if err := Write(&plain, sealedFile()); err != nil {
		t.Fatal(err)
	}
	unnoticed := 0
	for i := range file {
		for _, flip := range []byte{0x01, 0x80} {
			bad := bytes.Clone(file)
			bad[i] ^= flip
			_, err := Read(bytes.NewReader(bad))
			if err == nil || !errors.Is(err, ErrFormat) {
				t.Fatalf("byte %d ^ %#x: read %v, want a format or checksum error", i, flip, err)
			}
			if i >= len(file)-48 && !errors.Is(err, ErrChecksum) { // the tensors' data
				t.Fatalf("data byte %d ^ %#x: %v, want a checksum mismatch", i, flip, err)
			}
			if i < plain.Len() {
				bad := bytes.Clone(plain.Bytes())
				bad[i] ^= flip
				if _, err := Read(bytes.NewReader(bad)); err == nil {
					unnoticed++
				}
			}
		}
	}
	if unnoticed < 96 {
		t.Fatalf("only %d flips of the unsealed file read silently: the test proves little", unnoticed)
	}
	// ReadFile checks it too, naming the file.
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	if err := WriteFileSealed(path, sealedFile()); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	raw[len(raw)-1] ^= 0x10
	os.WriteFile(path, raw, 0o644)
	if _, err := ReadFile(path); err == nil || !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("flipped file: %v", err)
	}
	// A sealed file read and written plainly is a plain file; sealing it
	// again gives the same bytes.
	b.Reset()
	if err := Write(&b, f); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), plain.Bytes()) {
		t.Fatal("writing a sealed file's content plainly kept its checksum")
	}
	b.Reset()
	if err := WriteSealed(&b, f); err != nil || !bytes.Equal(b.Bytes(), file) {
		t.Fatalf("sealing again: %v, same bytes %v", err, bytes.Equal(b.Bytes(), file))
	}
	// A checksum entry lenspec did not write is refused.
	for _, bad := range []string{"xyz", strings.Repeat("A", 64)} {
		g := sealedFile()
		g.Metadata[ChecksumKey] = bad
		b.Reset()
		writeRaw(t, &b, g)
		if _, err := Read(&b); err == nil || !errors.Is(err, ErrFormat) {
			t.Fatalf("checksum %q: %v", bad, err)
		}
	}
}

// writeRaw writes f with its metadata as given, ChecksumKey included.
func writeRaw(t *testing.T, b *bytes.Buffer, f *File) {
	t.Helper()
	sum := f.Metadata[ChecksumKey]
	g := *f
	g.Metadata = map[string]string{}
	for k, v := range f.Metadata {
		g.Metadata[k] = v
	}
	g.Metadata["x"+ChecksumKey] = sum // same length, renamed back below
	if err := Write(b, &g); err != nil {
		t.Fatal(err)
	}
	raw := bytes.Replace(b.Bytes(), []byte(`"x`+ChecksumKey+`"`), []byte(`"`+ChecksumKey+`" `), 1)
	b.Reset()
	b.Write(raw)
}
