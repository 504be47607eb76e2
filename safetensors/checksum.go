package safetensors

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// ChecksumKey is the "__metadata__" key under which a sealed file holds
// its own sha256, in lowercase hex: the sha256 of the whole file with
// those 64 digits replaced by ASCII zeros. lenspec seals the files it
// writes to be read back by itself (training checkpoints); files written
// elsewhere (PyTorch's) carry no such key and read as before.
const ChecksumKey = "lenspec_sha256"

// ErrChecksum is wrapped, with ErrFormat, by the error for a file whose
// content does not match the checksum recorded for it: it changed after it
// was written (a flipped bit, an edit, a partial copy).
var ErrChecksum = errors.New("checksum mismatch")

// placeholder is the checksum's value while the file is hashed.
var placeholder = bytes.Repeat([]byte{'0'}, sha256.Size*2)

// sumEntry is how the checksum's metadata entry appears in a header
// written by Write, up to its value.
var sumEntry = []byte(`"` + ChecksumKey + `":"`)

// WriteSealed writes f as Write does, with its sha256 added under
// ChecksumKey (replacing any such entry of f.Metadata), so that Read and
// ReadFile refuse the file if any byte of it changes.
func WriteSealed(w io.Writer, f *File) error {
	header, order, err := encodeHeader(f, true)
	if err != nil {
		return err
	}
	prefix := lengthPrefix(header)
	h := sha256.New()
	h.Write(prefix[:])
	h.Write(header)
	for _, t := range order {
		h.Write(t.Data)
	}
	at := bytes.Index(header, append(append([]byte(nil), sumEntry...), placeholder...)) + len(sumEntry)
	hex.Encode(header[at:at+len(placeholder)], h.Sum(nil))
	return writeParts(w, prefix[:], header, order)
}

// WriteFileSealed is WriteFile for a sealed file (WriteSealed).
func WriteFileSealed(path string, f *File) error {
	return writeFile(path, f, true)
}

// checkSealed verifies the checksum of a sealed file, and refuses a file
// whose checksum entry's name is one byte off ChecksumKey: a flipped byte
// there would otherwise unseal the file.
func checkSealed(meta map[string]string, prefix, header, data []byte) error {
	if sum, ok := meta[ChecksumKey]; ok {
		return checkSum(prefix, header, data, sum)
	}
	for k := range meta {
		if len(k) == len(ChecksumKey) && oneByteOff(k, ChecksumKey) {
			return fmt.Errorf("%w: %w: metadata key %q is %s with a damaged byte", ErrFormat, ErrChecksum, k, ChecksumKey)
		}
	}
	return nil
}

func oneByteOff(a, b string) bool {
	n := 0
	for i := range len(a) {
		if a[i] != b[i] {
			n++
		}
	}
	return n == 1
}

// checkSum verifies a sealed file's checksum, given its length prefix,
// header and data as read and the value its metadata holds (want).
func checkSum(prefix, header, data []byte, want string) error {
	if len(want) != len(placeholder) || !isHex(want) {
		return fmt.Errorf("%w: %s %q is not a sha256 in lowercase hex", ErrFormat, ChecksumKey, want)
	}
	entry := append(append([]byte(nil), sumEntry...), want...)
	at := bytes.Index(header, entry)
	if at < 0 || bytes.Count(header, sumEntry) != 1 {
		return fmt.Errorf("%w: the %s entry is not written as lenspec writes it", ErrFormat, ChecksumKey)
	}
	at += len(sumEntry)
	zeroed := bytes.Clone(header)
	copy(zeroed[at:], placeholder)
	h := sha256.New()
	h.Write(prefix)
	h.Write(zeroed)
	h.Write(data)
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%w: %w: the content's sha256 is %s…, its %s says %s…: the file changed after it was written", ErrFormat, ErrChecksum, got[:12], ChecksumKey, want[:12])
	}
	return nil
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
