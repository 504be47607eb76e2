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
// process may share one File. Open enforces this with an exclusive flock(2)
// on the file, taken before it looks at the content and held until Close: a
// second writer that scanned the file while the first was mid-write would
// take the first's half-written line for an interrupted one and cut it off,
// losing a finished record. A second Open, from another process or from the
// same one, fails with ErrLocked instead. Read takes no lock: it only ever
// sees complete lines.
//
// Attempts: a unit of work that kills the whole process (a crash inside C
// code, say) leaves no record, so a resumed run would retry it, and crash,
// forever. Before starting a unit of work, a runner calls BeginAttempt, which
// appends {"key":…,"pid":…,"time":…} to the sidecar file path+".attempts"
// (created on first use, written with one write and fsync like the results
// file). On the next start, Attempts tells how often a key without a record
// was begun; the runner can record a key begun twice without a result as
// crashed rather than try it again. A unit of work stopped cleanly (the user
// interrupted the run) is not a crash: EndAttempt appends
// {"key":…,"ended":true,…}, which cancels one attempt. The sidecar is loaded by Open, which
// removes an incomplete last line from it as from the results file, and is
// covered by the results file's lock: only the File holding that lock reads
// or writes it.
//
// Only regular files are accepted: /dev/null would silently lose every
// record, /dev/full fails only after the work is done, and a FIFO blocks.
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
	"syscall"
	"time"

	"github.com/lenspec/lenspec/internal/fileio"
)

// ErrDuplicate is returned by Append for a key that is already done. A
// resumed run is expected to check Done first; writing a key twice would give
// readers two records for one unit of work.
var ErrDuplicate = errors.New("key already done")

// ErrLocked is wrapped by Open's error when the results file is already
// open for writing, by another process or by another File of this one.
var ErrLocked = errors.New("file locked")

// attemptsSuffix names the sidecar file of attempt markers: path+attemptsSuffix.
const attemptsSuffix = ".attempts"

// attempt is one line of the sidecar file. PID and Time are for a person
// reading the file after a crash; only Key is used.
type attempt struct {
	Key   string `json:"key"`
	Ended bool   `json:"ended,omitempty"`
	PID   int    `json:"pid"`
	Time  string `json:"time"`
}

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
	f    *os.File // nil once closed; its flock is the writer's lock
	size int64    // bytes of complete lines in the file
	done map[string]bool
	n    int
	err  error // sticky: set when the file may hold a partial line

	att      *os.File // sidecar of attempt markers; nil until it exists
	attSize  int64    // bytes of complete lines in the sidecar
	attempts map[string]int
	attErr   error // sticky, like err, for the sidecar
}

// Open opens the results file at path for appending, creating it if needed,
// and loads its attempt markers (see the package documentation).
//
// The file is locked for writing until Close. If another process, or another
// File of this process, has it open, Open fails at once with an error
// wrapping ErrLocked and leaves the file alone. A path that exists and is not
// a regular file (a directory, /dev/null, a FIFO) is refused with an error
// wrapping fileio.ErrNotRegular, without blocking; so is such a sidecar.
//
// Every complete line of an existing file must be a JSON value from which key
// derives the record's key; those keys count as done. Lines holding only
// white space are skipped. A malformed line, or one key rejects, is an error
// naming the file and the 1-based line number. A last line without a
// trailing newline is what an interrupted write leaves behind: it is removed
// from the file, even if it happens to be valid JSON, and its length is
// reported in File.Truncated. The unit of work it belonged to is then not
// done and will be redone. The sidecar is read the same way; each of its
// lines must be an object with a string field "key".
func Open(path string, key func(raw json.RawMessage) (string, error)) (*File, error) {
	if key == nil {
		return nil, fmt.Errorf("open results %s: nil key function", path)
	}
	f, err := openRegular(path, true)
	if err != nil {
		return nil, fmt.Errorf("open results: %w", err)
	}
	// Lock before reading anything: the scan below truncates what looks
	// like an incomplete last line, which in a file another writer is
	// appending to may be a record being written.
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("open results %s: another lenspec process is writing it (%w); "+
				"give each process its own --out, or wait for it to finish", path, ErrLocked)
		}
		return nil, fmt.Errorf("open results %s: lock: %w", path, err)
	}
	rf := &File{path: path, key: key, f: f, done: make(map[string]bool), attempts: make(map[string]int)}
	size, trunc, err := loadLines(f, path, func(line []byte) error {
		k, err := lineKey(key, line)
		if err != nil {
			return err
		}
		rf.done[k] = true
		rf.n++
		return nil
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open results: %w", err)
	}
	rf.size, rf.Truncated = size, trunc
	if err := rf.loadAttempts(); err != nil {
		f.Close()
		return nil, fmt.Errorf("open results: %w", err)
	}
	return rf, nil
}

// loadAttempts opens and reads the sidecar if it exists.
func (f *File) loadAttempts() error {
	path := f.path + attemptsSuffix
	att, err := openRegular(path, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	size, _, err := loadLines(att, path, func(line []byte) error {
		k, ended, err := attemptKey(line)
		if err != nil {
			return err
		}
		if !ended {
			f.attempts[k]++
		} else if f.attempts[k] > 0 {
			f.attempts[k]--
		}
		return nil
	})
	if err != nil {
		att.Close()
		return err
	}
	f.att, f.attSize = att, size
	return nil
}

// attemptKey validates one complete line of the sidecar and returns its key
// and whether it ends an attempt.
func attemptKey(line []byte) (string, bool, error) {
	var a struct {
		Key   *string `json:"key"`
		Ended bool    `json:"ended"`
	}
	if err := json.Unmarshal(line, &a); err != nil {
		return "", false, err
	}
	if a.Key == nil {
		return "", false, errors.New(`attempt has no string field "key"`)
	}
	return *a.Key, a.Ended, nil
}

// openRegular opens path for reading and appending, creating it if create is
// set, and refuses anything but a regular file. It checks the path first so
// that it never opens, let alone blocks on, a FIFO or a device, and the
// opened file again in case the path was replaced in between; O_NONBLOCK
// covers that window (it has no effect on a regular file). Errors name the
// path.
func openRegular(path string, create bool) (*os.File, error) {
	if err := fileio.CheckRegular(path); err != nil {
		return nil, err
	}
	flag := os.O_RDWR | os.O_APPEND | syscall.O_NONBLOCK
	if create {
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w (replaced while being opened)", path, fileio.ErrNotRegular)
	}
	return f, nil
}

// lockFile takes an exclusive flock on f without waiting. The lock belongs
// to f's open file description, so it conflicts with any other open of the
// file, in this process too, and goes away when f is closed, however the
// process ends. An error wrapping syscall.EWOULDBLOCK means it is held.
func lockFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if lerr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return lerr
}

// loadLines reads every line of f, calling fn for each complete non-blank
// one, and removes an incomplete last line from the file. It returns the size
// of the complete lines and the number of bytes removed. Errors of fn are
// prefixed with path and the 1-based line number; other errors name path.
func loadLines(f *os.File, path string, fn func(line []byte) error) (size, truncated int64, err error) {
	size, err = scanLines(f, func(lineNo int, line []byte) error {
		if isBlank(line) {
			return nil
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("%s:%d: %w", path, lineNo, err)
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	if end != size {
		if err := f.Truncate(size); err != nil {
			return 0, 0, fmt.Errorf("%s: remove incomplete last line: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", path, err)
		}
	}
	return size, end - size, nil
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

// BeginAttempt records that work on key is starting: it appends a line
// {"key":…,"pid":…,"time":…} (time in RFC 3339) to the sidecar file
// Path()+".attempts", creating it if needed, and syncs it to disk before the
// work can begin. It returns the number of attempts of key recorded before
// this one, by this and earlier runs, whether or not key is done: a runner
// checks Done first. If the marker cannot be written, the error names the
// sidecar and previous is still the count before this call.
func (f *File) BeginAttempt(key string) (previous int, err error) {
	return f.mark(attempt{Key: key})
}

// EndAttempt records that work on key stopped cleanly without a record (the
// run was interrupted), so that attempt does not count as a crash: it
// appends {"key":…,"ended":true,…} to the sidecar, and Attempts(key)
// drops by one.
func (f *File) EndAttempt(key string) error {
	_, err := f.mark(attempt{Key: key, Ended: true})
	return err
}

// mark appends one attempt line to the sidecar and updates the counts.
func (f *File) mark(a attempt) (previous int, err error) {
	path := f.path + attemptsSuffix
	a.PID, a.Time = os.Getpid(), time.Now().Format(time.RFC3339)
	line, err := json.Marshal(a)
	if err != nil {
		return 0, fmt.Errorf("record attempt in %s: %w", path, err)
	}
	line = append(line, '\n')

	f.mu.Lock()
	defer f.mu.Unlock()
	previous = f.attempts[a.Key]
	if f.f == nil {
		return previous, fmt.Errorf("record attempt in %s: file closed", path)
	}
	if f.attErr != nil {
		return previous, fmt.Errorf("record attempt in %s: earlier failure: %w", path, f.attErr)
	}
	if f.att == nil {
		// Created on first use, so runs that never call BeginAttempt leave
		// no empty sidecar behind. The results file's lock covers it.
		att, err := openRegular(path, true)
		if err != nil {
			return previous, fmt.Errorf("record attempt: %w", err)
		}
		f.att, f.attSize = att, 0
	}
	if _, err := f.att.Write(line); err != nil {
		// As in Append: cut off a partial line so the next one starts clean.
		if terr := f.att.Truncate(f.attSize); terr != nil {
			f.attErr = errors.Join(err, terr)
		}
		return previous, fmt.Errorf("record attempt in %s: %w", path, err)
	}
	f.attSize += int64(len(line))
	// Counted even if the sync fails: the line is in the file as far as
	// this process can tell, and overcounting only makes the runner give up
	// on a key sooner, never retry a crashing one forever.
	if !a.Ended {
		f.attempts[a.Key]++
	} else if f.attempts[a.Key] > 0 {
		f.attempts[a.Key]--
	}
	if err := f.att.Sync(); err != nil {
		return previous, fmt.Errorf("record attempt in %s: sync: %w", path, err)
	}
	return previous, nil
}

// Attempts returns the number of attempts of key recorded by BeginAttempt,
// in this run and in earlier ones (loaded by Open from the sidecar).
func (f *File) Attempts(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts[key]
}

// Close closes the file and its sidecar, releasing the lock taken by Open.
// Closing twice is an error.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return fmt.Errorf("close %s: already closed", f.path)
	}
	var errs []error
	// The sidecar first: it is only ours while the results file is locked.
	if f.att != nil {
		if err := f.att.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", f.path+attemptsSuffix, err))
		}
		f.att = nil
	}
	if err := f.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close %s: %w", f.path, err))
	}
	f.f = nil
	return errors.Join(errs...)
}

// Read decodes every record of the results file at path into a T. As in Open,
// blank lines are skipped and an incomplete last line (no trailing newline) is
// not a record, so Read sees what a resumed run would keep. An error names the
// file and the 1-based line number. Anything but a regular file is refused
// with an error wrapping fileio.ErrNotRegular, without blocking. Read takes no
// lock, so it may run while a writer appends.
func Read[T any](path string) ([]T, error) {
	return readN[T](path, -1)
}

// First decodes the first record of the results file at path into a T,
// reading no further, so a caller that only needs to know what a file
// holds does not decode all of it; ok is false for a file with no
// records. Blank lines, errors and the incomplete last line are as in Read.
func First[T any](path string) (v T, ok bool, err error) {
	recs, err := readN[T](path, 1)
	if err != nil || len(recs) == 0 {
		return v, false, err
	}
	return recs[0], true, nil
}

// readN decodes the first n records of the file at path (all of them for
// n < 0), stopping the scan once it has them.
func readN[T any](path string, n int) ([]T, error) {
	f, err := fileio.Open(path)
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
		if len(out) == n {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, fmt.Errorf("read results: %w", err)
	}
	return out, nil
}

// errStop ends a scanLines early without an error.
var errStop = errors.New("stop")

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
