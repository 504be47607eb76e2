package safetensors

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/lenspec/lenspec/internal/fileio"
)

// Write encodes f in the layout of the reference writer: tensors ordered by
// descending dtype rank (wider types first) and then by name, "__metadata__"
// first in the header with its keys sorted, the header padded with spaces to
// a multiple of 8 bytes, and the data packed without gaps. f is validated
// completely before anything is written. A ChecksumKey entry of f.Metadata
// (a sealed file's, read back) is left out: the file written is not sealed
// (see WriteSealed).
func Write(w io.Writer, f *File) error {
	header, order, err := encodeHeader(f, false)
	if err != nil {
		return err
	}
	prefix := lengthPrefix(header)
	return writeParts(w, prefix[:], header, order)
}

// lengthPrefix is the 8-byte little-endian length of header.
func lengthPrefix(header []byte) [8]byte {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	return n
}

// writeParts writes a file's length prefix, header and tensors' data.
func writeParts(w io.Writer, prefix, header []byte, order []*Tensor) error {
	if _, err := w.Write(prefix); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if _, err := w.Write(header); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	for _, t := range order {
		if _, err := w.Write(t.Data); err != nil {
			return fmt.Errorf("safetensors: %w", err)
		}
	}
	return nil
}

// WriteFile writes f to path with fileio.WriteAtomic: through a temporary
// file in the same directory, synced, made mode 0644 and renamed into place,
// so readers never see a partial file and a failed write leaves the old one.
// f is validated first, so an invalid File leaves no temporary file behind,
// and an existing path that is not a regular file is refused.
func WriteFile(path string, f *File) error {
	return writeFile(path, f, false)
}

func writeFile(path string, f *File, seal bool) error {
	if _, _, err := encodeHeader(f, seal); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	write := Write
	if seal {
		write = WriteSealed
	}
	return fileio.WriteAtomic(path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		if err := write(bw, f); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// encodeHeader validates f and returns the padded JSON header together with
// the tensors in data order. The metadata leaves out ChecksumKey, or with
// seal holds it with the placeholder value.
func encodeHeader(f *File, seal bool) ([]byte, []*Tensor, error) {
	if f == nil {
		return nil, nil, fmt.Errorf("%w: nil File", ErrFormat)
	}
	order := make([]*Tensor, len(f.Tensors))
	names := make(map[string]bool, len(f.Tensors))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		switch {
		case !utf8.ValidString(t.Name):
			return nil, nil, fmt.Errorf("%w: tensor name %q is not valid UTF-8", ErrFormat, t.Name)
		case t.Name == metadataKey:
			return nil, nil, fmt.Errorf("%w: tensor name %q is reserved", ErrFormat, t.Name)
		case names[t.Name]:
			return nil, nil, fmt.Errorf("%w: duplicate tensor name %q", ErrFormat, t.Name)
		}
		names[t.Name] = true
		if _, err := t.check(); err != nil {
			return nil, nil, err
		}
		order[i] = t
	}
	slices.SortFunc(order, func(a, b *Tensor) int {
		return cmp.Or(cmp.Compare(b.DType.rank(), a.DType.rank()), cmp.Compare(a.Name, b.Name))
	})

	meta := f.Metadata
	if _, ok := meta[ChecksumKey]; ok || seal {
		meta = maps.Clone(meta)
		delete(meta, ChecksumKey)
		if seal {
			if meta == nil {
				meta = map[string]string{}
			}
			meta[ChecksumKey] = string(placeholder)
		}
	}
	h := []byte{'{'}
	if meta != nil {
		keys := make([]string, 0, len(meta))
		for k, v := range meta {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return nil, nil, fmt.Errorf("%w: %s entry %q is not valid UTF-8", ErrFormat, metadataKey, k)
			}
			keys = append(keys, k)
		}
		// The reference iterates a hash map here; sorting makes our output
		// deterministic and equal to the reference's whenever it has at most
		// one key.
		slices.Sort(keys)
		h = appendString(h, metadataKey)
		h = append(h, ":{"...)
		for i, k := range keys {
			if i > 0 {
				h = append(h, ',')
			}
			h = appendString(h, k)
			h = append(h, ':')
			h = appendString(h, meta[k])
		}
		h = append(h, '}')
		if len(order) > 0 {
			h = append(h, ',')
		}
	}
	var offset uint64
	for i, t := range order {
		if i > 0 {
			h = append(h, ',')
		}
		end := offset + uint64(len(t.Data))
		h = appendString(h, t.Name)
		h = append(h, `:{"dtype":`...)
		h = appendString(h, string(t.DType))
		h = append(h, `,"shape":[`...)
		for j, d := range t.Shape {
			if j > 0 {
				h = append(h, ',')
			}
			h = strconv.AppendInt(h, int64(d), 10)
		}
		h = append(h, `],"data_offsets":[`...)
		h = strconv.AppendUint(h, offset, 10)
		h = append(h, ',')
		h = strconv.AppendUint(h, end, 10)
		h = append(h, "]}"...)
		offset = end
	}
	h = append(h, '}')
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	if len(h) > maxHeaderSize {
		return nil, nil, fmt.Errorf("%w: header of %d bytes exceeds the limit of %d", ErrFormat, len(h), maxHeaderSize)
	}
	return h, order, nil
}

// appendString appends s as a JSON string escaped the way serde_json does:
// only '"', '\\' and control characters are escaped, and non-ASCII text is
// written as UTF-8. encoding/json would also escape <, > and &, which would
// make our headers differ from the reference's.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}
