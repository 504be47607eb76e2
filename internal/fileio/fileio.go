// Package fileio holds the file handling every reader and writer of lenspec
// shares: refusing anything but regular files (a FIFO blocks a reader
// forever, /dev/zero never ends, /dev/full fails only after the work is
// done), reading with a size cap, and replacing a file atomically.
package fileio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotRegular is wrapped by the errors of this package for a path that
// names a directory, device, FIFO or socket.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by ReadRegular's error for a file above its cap.
var ErrTooLarge = errors.New("file too large")

// CheckRegular reports an error wrapping ErrNotRegular if path exists and
// is not a regular file (symbolic links are followed). A missing path is
// not an error: writers create it.
func CheckRegular(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return regular(path, fi)
}

func regular(path string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	kind := "a special file"
	switch m := fi.Mode(); {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a FIFO"
	case m&fs.ModeCharDevice != 0:
		kind = "a character device"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	}
	return fmt.Errorf("%s: %w (it is %s)", path, ErrNotRegular, kind)
}

// Open opens a regular file for reading. It never blocks on a FIFO: the
// file is opened non-blocking and checked before anything is read.
func Open(path string) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil {
		if err := regular(path, fi); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	// The path may have been replaced between Stat and Open.
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := regular(path, fi); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadRegular reads the whole regular file at path, refusing one larger
// than max bytes. Errors name the path.
func ReadRegular(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %w (%d bytes, at most %d expected)", path, ErrTooLarge, fi.Size(), max)
	}
	// The size may grow while reading; read at most max+1 bytes to notice.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w (more than %d bytes)", path, ErrTooLarge, max)
	}
	return b, nil
}

// WriteAtomic replaces path with what write produces: the bytes go to a
// temporary file in the same directory, synced, made world-readable like
// any file a user saves, then renamed over path, so a reader never sees a
// partial file and an interrupted write leaves the old one. An existing
// path that is not a regular file is refused before any work. A symbolic
// link to a file is written through, as a plain write would: its target
// is replaced (the temporary file in the target's directory) and the link
// kept.
func WriteAtomic(path string, write func(w io.Writer) error) (err error) {
	if err := CheckRegular(path); err != nil {
		return err
	}
	dst := path
	if target, err := filepath.EvalSymlinks(path); err == nil {
		dst = target
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// WriteFileAtomic is WriteAtomic for bytes already in memory.
func WriteFileAtomic(path string, data []byte) error {
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
