package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/lenspec/lenspec/internal/fileio"
)

// maxHeaderSize is the reference implementation's limit on the JSON header,
// which keeps a corrupt length prefix from demanding a huge allocation.
const maxHeaderSize = 100_000_000

// metadataKey is the reserved header key holding the string-to-string map.
const metadataKey = "__metadata__"

// Read reads a whole safetensors stream and validates it. It reads r to
// the end before checking anything, since a stream's size is not known in
// advance: use it only for input known to be finite and of sensible size.
// ReadFile, which reads no more than the header declares, is the choice for
// files. The tensors' Data slices share one buffer holding the stream.
func Read(r io.Reader) (*File, error) {
	buf, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return parse(buf)
}

// ReadFile reads and validates the safetensors file at path. Anything but a
// regular file (a directory, a FIFO, /dev/zero) is refused with an error
// wrapping fileio.ErrNotRegular before anything is read. The file's size is
// checked against the 8-byte length prefix, the header and the data size the
// header's offsets declare before the data is read, so a truncated file, one
// with trailing bytes or a huge wrong file fails at once instead of being read
// into memory first. Errors name path. The tensors' Data slices share one
// buffer holding the data.
func ReadFile(path string) (*File, error) {
	fd, err := fileio.Open(path)
	if err != nil {
		// The error already names path.
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := readSized(fd, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return f, nil
}

// readSized reads a file of the given size from r, which must be positioned
// at its start, applying the same checks as parse. Every read is bounded by
// a length that is checked against size first, so a corrupt length prefix
// or offset cannot make it allocate more than the file holds.
func readSized(r io.Reader, size int64) (*File, error) {
	var prefix [8]byte
	if size < 8 {
		return nil, fmt.Errorf("%w: %d bytes is too short for the 8-byte header length", ErrFormat, size)
	}
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return nil, shrank(err, size)
	}
	n, err := headerLength(prefix[:], uint64(size-8))
	if err != nil {
		return nil, err
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, shrank(err, size)
	}
	meta, entries, err := parseHeader(header)
	if err != nil {
		return nil, err
	}
	total, err := layout(entries)
	if err != nil {
		return nil, err
	}
	// The reference reader requires 8 + header + data to be the whole file
	// (MetadataIncompleteBuffer): no missing bytes and no trailing ones.
	declared, carry := bits.Add64(8+n, total, 0)
	if carry != 0 || declared != uint64(size) {
		what := "truncated"
		if carry == 0 && declared < uint64(size) {
			what = "trailing bytes"
		}
		decl := strconv.FormatUint(declared, 10)
		if carry != 0 {
			decl = "more than 2^64"
		}
		return nil, fmt.Errorf("%w: file is %d bytes, but its header declares %s (8 + %d header + %d data): %s",
			ErrFormat, size, decl, n, total, what)
	}
	data := make([]byte, total)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, shrank(err, size)
	}
	// A file appended to while being read would otherwise pass unnoticed.
	var one [1]byte
	if k, _ := r.Read(one[:]); k > 0 {
		return nil, fmt.Errorf("file grew beyond %d bytes while being read", size)
	}
	if err := checkSealed(meta, prefix[:], header, data); err != nil {
		return nil, err
	}
	return attach(meta, entries, data)
}

// shrank reports a short read of a file whose size was checked before: it
// was truncated while being read.
func shrank(err error, size int64) error {
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return fmt.Errorf("file shrank below %d bytes while being read", size)
	}
	return err
}

// headerLength decodes the 8-byte length prefix and checks it against the
// reference's limit and against avail, the number of bytes after the prefix.
func headerLength(prefix []byte, avail uint64) (uint64, error) {
	n := binary.LittleEndian.Uint64(prefix)
	if n > maxHeaderSize {
		return 0, fmt.Errorf("%w: header length %d exceeds the limit of %d bytes", ErrFormat, n, maxHeaderSize)
	}
	if n > avail {
		return 0, fmt.Errorf("%w: header length %d exceeds the %d bytes after the length prefix", ErrFormat, n, avail)
	}
	return n, nil
}

// entry is a tensor as described by the header, before its bytes are
// attached.
type entry struct {
	name       string
	dtype      DType
	shape      []int
	begin, end uint64
}

// parse decodes a complete file held in buf, applying the checks of the
// reference reader in the same order.
func parse(buf []byte) (*File, error) {
	if len(buf) < 8 {
		return nil, fmt.Errorf("%w: %d bytes is too short for the 8-byte header length", ErrFormat, len(buf))
	}
	n, err := headerLength(buf, uint64(len(buf)-8))
	if err != nil {
		return nil, err
	}
	header, data := buf[8:8+n], buf[8+n:]
	meta, entries, err := parseHeader(header)
	if err != nil {
		return nil, err
	}
	if _, err := layout(entries); err != nil {
		return nil, err
	}
	if err := checkSealed(meta, buf[:8], header, data); err != nil {
		return nil, err
	}
	return attach(meta, entries, data)
}

// layout sorts entries by offset and checks, as the reference's validate
// does before looking at the data, that each spans exactly the bytes its
// shape and dtype need and that together they tile [0, total) without gaps
// or overlaps. It returns total, the data size the header declares.
func layout(entries []entry) (uint64, error) {
	// Offsets may appear in any order in the header; the name breaks ties
	// between empty tensors so the result does not depend on key order.
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.begin, b.begin), cmp.Compare(a.end, b.end), cmp.Compare(a.name, b.name))
	})
	var pos uint64
	for _, e := range entries {
		switch {
		case e.begin > e.end:
			return 0, fmt.Errorf("%w: tensor %q: data_offsets [%d,%d] begin after they end", ErrFormat, e.name, e.begin, e.end)
		case e.begin > pos:
			return 0, fmt.Errorf("%w: tensor %q: data_offsets [%d,%d] leave a gap after offset %d", ErrFormat, e.name, e.begin, e.end, pos)
		case e.begin < pos:
			return 0, fmt.Errorf("%w: tensor %q: data_offsets [%d,%d] overlap the previous tensor ending at %d", ErrFormat, e.name, e.begin, e.end, pos)
		}
		pos = e.end
		t := Tensor{Name: e.name, DType: e.dtype, Shape: e.shape}
		want, err := t.numBytes(e.dtype.Size())
		if err != nil {
			return 0, err
		}
		if e.end-e.begin != want {
			return 0, fmt.Errorf("%w: tensor %q: data_offsets [%d,%d] span %d bytes, but shape %v of %s needs %d",
				ErrFormat, e.name, e.begin, e.end, e.end-e.begin, e.shape, e.dtype, want)
		}
	}
	return pos, nil
}

// attach builds the File from entries already checked and sorted by layout,
// pointing each tensor into data, which must be exactly the declared size.
func attach(meta map[string]string, entries []entry, data []byte) (*File, error) {
	f := &File{Metadata: meta, Tensors: make([]Tensor, len(entries))}
	var pos uint64
	for i, e := range entries {
		if e.end > uint64(len(data)) {
			return nil, fmt.Errorf("%w: tensor %q: data_offsets [%d,%d] run past the %d-byte data buffer", ErrFormat, e.name, e.begin, e.end, len(data))
		}
		pos = e.end
		// The capacity limit keeps an append to one tensor's Data from
		// overwriting the next tensor.
		f.Tensors[i] = Tensor{Name: e.name, DType: e.dtype, Shape: e.shape, Data: data[e.begin:e.end:e.end]}
	}
	if pos != uint64(len(data)) {
		return nil, fmt.Errorf("%w: tensors cover %d bytes, but the data buffer has %d", ErrFormat, pos, len(data))
	}
	return f, nil
}

// parseHeader decodes the JSON header. It is stricter than encoding/json's
// Unmarshal: duplicate keys are rejected rather than silently merged, and
// numbers must be plain non-negative integers.
func parseHeader(header []byte) (map[string]string, []entry, error) {
	if !utf8.Valid(header) {
		return nil, nil, fmt.Errorf("%w: header is not valid UTF-8", ErrFormat)
	}
	if len(header) == 0 || header[0] != '{' {
		return nil, nil, fmt.Errorf("%w: header does not start with '{'", ErrFormat)
	}
	dec := json.NewDecoder(bytes.NewReader(header))
	dec.UseNumber()
	jsonErr := func(err error) error {
		if errors.Is(err, ErrFormat) {
			return err
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%w: header is not valid JSON: %v", ErrFormat, err)
	}

	if _, err := dec.Token(); err != nil { // the '{' checked above
		return nil, nil, jsonErr(err)
	}
	var (
		meta    map[string]string
		entries []entry
		seen    = make(map[string]bool)
	)
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return nil, nil, jsonErr(err)
		}
		if seen[key] {
			return nil, nil, fmt.Errorf("%w: duplicate key %q in header", ErrFormat, key)
		}
		seen[key] = true
		if key == metadataKey {
			meta, err = parseMetadata(dec)
		} else {
			var e entry
			e, err = parseEntry(dec, key)
			entries = append(entries, e)
		}
		if err != nil {
			return nil, nil, jsonErr(err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, nil, jsonErr(err)
	}
	// Only whitespace may follow; the reference writer pads with spaces.
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, nil, jsonErr(err)
		}
		return nil, nil, fmt.Errorf("%w: header has data after the JSON object: %v", ErrFormat, tok)
	}
	return meta, entries, nil
}

// parseMetadata decodes the "__metadata__" value: an object of strings, or
// null, which the reference also accepts as absent.
func parseMetadata(dec *json.Decoder) (map[string]string, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, nil
	}
	if tok != json.Delim('{') {
		return nil, fmt.Errorf("%w: %s is not an object", ErrFormat, metadataKey)
	}
	meta := make(map[string]string)
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return nil, err
		}
		if _, dup := meta[key]; dup {
			return nil, fmt.Errorf("%w: duplicate key %q in %s", ErrFormat, key, metadataKey)
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		v, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%w: %s value for key %q is not a string", ErrFormat, metadataKey, key)
		}
		meta[key] = v
	}
	_, err = dec.Token()
	return meta, err
}

// parseEntry decodes one tensor's {"dtype", "shape", "data_offsets"} object.
// Unknown fields are skipped, as the reference does.
func parseEntry(dec *json.Decoder, name string) (entry, error) {
	e := entry{name: name}
	tok, err := dec.Token()
	if err != nil {
		return e, err
	}
	if tok != json.Delim('{') {
		return e, fmt.Errorf("%w: tensor %q: entry is not an object", ErrFormat, name)
	}
	var hasDType, hasShape, hasOffsets bool
	for dec.More() {
		field, err := stringToken(dec)
		if err != nil {
			return e, err
		}
		dup := false
		switch field {
		case "dtype":
			dup, hasDType = hasDType, true
			if !dup {
				err = parseDType(dec, &e)
			}
		case "shape":
			dup, hasShape = hasShape, true
			if !dup {
				err = parseShape(dec, &e)
			}
		case "data_offsets":
			dup, hasOffsets = hasOffsets, true
			if !dup {
				err = parseOffsets(dec, &e)
			}
		default:
			err = skipValue(dec)
		}
		if dup {
			return e, fmt.Errorf("%w: tensor %q: duplicate field %q", ErrFormat, name, field)
		}
		if err != nil {
			return e, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return e, err
	}
	switch {
	case !hasDType:
		return e, fmt.Errorf("%w: tensor %q: missing field \"dtype\"", ErrFormat, name)
	case !hasShape:
		return e, fmt.Errorf("%w: tensor %q: missing field \"shape\"", ErrFormat, name)
	case !hasOffsets:
		return e, fmt.Errorf("%w: tensor %q: missing field \"data_offsets\"", ErrFormat, name)
	}
	return e, nil
}

func parseDType(dec *json.Decoder, e *entry) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	s, ok := tok.(string)
	if !ok {
		return fmt.Errorf("%w: tensor %q: dtype is not a string", ErrFormat, e.name)
	}
	e.dtype = DType(s)
	if e.dtype.Size() == 0 {
		return fmt.Errorf("%w: tensor %q: unknown dtype %q", ErrFormat, e.name, s)
	}
	return nil
}

func parseShape(dec *json.Decoder, e *entry) error {
	dims, err := uintArray(dec)
	if err != nil {
		return fmt.Errorf("%w: tensor %q: shape: %v", ErrFormat, e.name, err)
	}
	e.shape = make([]int, len(dims))
	for i, d := range dims {
		if d > math.MaxInt {
			return fmt.Errorf("%w: tensor %q: shape dimension %d is too large", ErrFormat, e.name, d)
		}
		e.shape[i] = int(d)
	}
	return nil
}

func parseOffsets(dec *json.Decoder, e *entry) error {
	offs, err := uintArray(dec)
	if err == nil && len(offs) != 2 {
		err = fmt.Errorf("want [begin, end], got %d numbers", len(offs))
	}
	if err != nil {
		return fmt.Errorf("%w: tensor %q: data_offsets: %v", ErrFormat, e.name, err)
	}
	e.begin, e.end = offs[0], offs[1]
	return nil
}

// uintArray decodes an array of integers in [0, 2⁶⁴), rejecting fractions,
// exponents and signs as the reference's usize fields do.
func uintArray(dec *json.Decoder) ([]uint64, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('[') {
		return nil, fmt.Errorf("not an array")
	}
	out := []uint64{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, fmt.Errorf("element %d is not a number", len(out))
		}
		v, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("element %d: %s is not a non-negative 64-bit integer", len(out), num)
		}
		out = append(out, v)
	}
	_, err = dec.Token()
	return out, err
}

// stringToken reads an object key.
func stringToken(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		// The decoder only yields strings in key position.
		return "", fmt.Errorf("unexpected token %v", tok)
	}
	return s, nil
}

// skipValue consumes one JSON value of any kind.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
