// Package results stores the records of long runs (attacks, verification) as
// JSON Lines, one record per unit of work, so that a run can be interrupted
// and resumed with the same output file.
//
// Each record carries a key (for example "image=3 eps=0.1 method=\"pgd\"")
// derived from its own JSON text. Opening an existing file marks the keys of
// its records as done, so a resumed run skips them. A record is written with a
// single write call followed by fsync; an interrupted write can therefore
// leave at most one incomplete last line, which Open removes.
//
// A results file must be written by one process at a time; goroutines of that
// process may share one File.
package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// ErrDuplicate is returned by Append for a key that is already done. A
// resumed run is expected to check Done first; writing a key twice would give
// readers two records for one unit of work.
var ErrDuplicate = errors.New("key already done")

// File is a JSON Lines results file opened for appending. Its methods are safe
// for concurrent use.
type File struct {
	path string
	key  func(json.RawMessage) (string, error)

	// Truncated is the number of bytes of an incomplete last line that Open
	// removed, zero if the file ended cleanly. It is set once by Open and
	// never changed, so reading it needs no lock.
	Truncated int64

	mu   sync.Mutex
	f    *os.File // nil once closed
	size int64    // bytes of complete lines in the file
	done map[string]bool
	n    int
	err  error // sticky: set when the file may hold a partial line
}

// Open opens the results file at path for appending, creating it if needed.
//
// Every complete line of an existing file must be a JSON value from which key
// derives the record's key; those keys count as done. Lines holding only
// white space are skipped. A malformed line, or one key rejects, is an error
// naming the file and the 1-based line number. A last line without a
// trailing newline is what an interrupted write leaves behind: it is removed
// from the file, even if it happens to be valid JSON, and its length is
// reported in File.Truncated. The unit of work it belonged to is then not
// done and will be redone.
func Open(path string, key func(raw json.RawMessage) (string, error)) (*File, error) {
	if key == nil {
		return nil, fmt.Errorf("open results %s: nil key function", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open results: %w", err)
	}
	rf := &File{path: path, key: key, f: f, done: make(map[string]bool)}
	size, err := scanLines(f, func(lineNo int, line []byte) error {
		if isBlank(line) {
			return nil
		}
		k, err := lineKey(key, line)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, lineNo, err)
		}
		rf.done[k] = true
		rf.n++
		return nil
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open results %w", err)
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open results %s: %w", path, err)
	}
	if end != size {
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, fmt.Errorf("open results %s: remove incomplete last line: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("open results %s: %w", path, err)
		}
		rf.Truncated = end - size
	}
	rf.size = size
	return rf, nil
}

// Path returns the path the file was opened with.
func (f *File) Path() string { return f.path }

// Done reports whether a record with the given key is in the file.
func (f *File) Done(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done[key]
}

// Len returns the number of records in the file.
func (f *File) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// Append writes rec, encoded with encoding/json, as one line and syncs it to
// disk before marking key done. The key the file's key function derives from
// the encoded record must equal key: otherwise a resumed run would not
// recognise the record, so the mismatch is reported as an error and nothing is
// written. Appending a key that is already done returns an error wrapping
// ErrDuplicate.
func (f *File) Append(key string, rec any) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("append to %s: encode record %q: %w", f.path, key, err)
	}
	// encoding/json compacts its output, custom marshalers included, so a
	// newline here can only mean a broken encoder; it would split the record.
	if bytes.IndexByte(line, '\n') >= 0 {
		return fmt.Errorf("append to %s: record %q encodes with a newline", f.path, key)
	}
	got, err := f.key(line)
	if err != nil {
		return fmt.Errorf("append to %s: record %q: %w", f.path, key, err)
	}
	if got != key {
		return fmt.Errorf("append to %s: record has key %q, want %q", f.path, got, key)
	}
	line = append(line, '\n')

	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return fmt.Errorf("append to %s: file closed", f.path)
	}
	if f.err != nil {
		return fmt.Errorf("append to %s: earlier failure: %w", f.path, f.err)
	}
	if f.done[key] {
		return fmt.Errorf("append to %s: %q: %w", f.path, key, ErrDuplicate)
	}
	if _, err := f.f.Write(line); err != nil {
		// A short write leaves a partial line that would glue onto the next
		// record; cut it off, and refuse further appends if that fails.
		if terr := f.f.Truncate(f.size); terr != nil {
			f.err = errors.Join(err, terr)
		}
		return fmt.Errorf("append to %s: %w", f.path, err)
	}
	f.size += int64(len(line))
	if err := f.f.Sync(); err != nil {
		// The line may or may not be on disk; treat it as written, since it
		// is in the file as far as this process can tell.
		f.done[key] = true
		f.n++
		return fmt.Errorf("append to %s: sync: %w", f.path, err)
	}
	f.done[key] = true
	f.n++
	return nil
}

// Close closes the file. Closing twice is an error.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return fmt.Errorf("close %s: already closed", f.path)
	}
	err := f.f.Close()
	f.f = nil
	if err != nil {
		return fmt.Errorf("close %s: %w", f.path, err)
	}
	return nil
}

// Read decodes every record of the results file at path into a T. As in Open,
// blank lines are skipped and an incomplete last line (no trailing newline) is
// not a record, so Read sees what a resumed run would keep. An error names the
// file and the 1-based line number.
func Read[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	defer f.Close()
	var out []T
	_, err = scanLines(f, func(lineNo int, line []byte) error {
		if isBlank(line) {
			return nil
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			return fmt.Errorf("%s:%d: %w", path, lineNo, err)
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read results %w", err)
	}
	return out, nil
}

// KeyFields returns a key function for Open that joins the named top-level
// fields of a JSON object as name=value, separated by spaces, for example
// `image=3 eps=0.1 method="pgd"`.
//
// Each value is its raw JSON text (compacted), not a decoded value: 0.1 and
// 0.10 give different keys, as do 1 and 1.0. Writers must therefore encode a
// field the same way every time; encoding/json is deterministic for a given
// Go value, so records written by Append from the same types are consistent.
// Since a JSON value's extent is unambiguous, distinct value tuples always give
// distinct keys. A missing field, or a line that is not a JSON object, is an
// error.
func KeyFields(fields ...string) func(json.RawMessage) (string, error) {
	names := append([]string(nil), fields...)
	return func(raw json.RawMessage) (string, error) {
		if len(names) == 0 {
			return "", errors.New("key: no fields named")
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return "", fmt.Errorf("key: %w", err)
		}
		if obj == nil {
			return "", errors.New("key: record is null, want an object")
		}
		var b strings.Builder
		var buf bytes.Buffer
		for i, name := range names {
			v, ok := obj[name]
			if !ok {
				return "", fmt.Errorf("key: missing field %q", name)
			}
			buf.Reset()
			if err := json.Compact(&buf, v); err != nil {
				return "", fmt.Errorf("key: field %q: %w", name, err)
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(name)
			b.WriteByte('=')
			b.Write(buf.Bytes())
		}
		return b.String(), nil
	}
}

// lineKey validates one complete line and derives its key.
func lineKey(key func(json.RawMessage) (string, error), line []byte) (string, error) {
	if !json.Valid(line) {
		// Decode to get encoding/json's description of the problem.
		var v any
		err := json.Unmarshal(line, &v)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return "", err
	}
	return key(json.RawMessage(line))
}

// scanLines calls fn for every newline-terminated line of r, without the
// newline, and returns the number of bytes in those lines. Bytes after the
// last newline are not passed to fn. Lines may be of any length; a carriage
// return before the newline is left in place, as JSON treats it as white space.
func scanLines(r io.Reader, fn func(lineNo int, line []byte) error) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var n int64
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n += int64(len(line))
		if err := fn(lineNo, line[:len(line)-1]); err != nil {
			return n, err
		}
	}
}

func isBlank(line []byte) bool {
	return len(bytes.TrimSpace(line)) == 0
}
