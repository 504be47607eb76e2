package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/lenspec/lenspec/internal/fileio"
)

// Drop removes from the results file at path every record for which drop
// returns true, so that the next run redoes those units, and returns their
// keys. It is how a unit recorded as failed is retried: one that was
// recorded as crashed because the machine running it was killed twice, say.
//
// Drop holds the file's lock throughout (it fails with ErrLocked while a
// run is writing the file), clears the dropped keys' attempts in the
// sidecar, so a retried unit gets its full count of attempts again, and
// replaces the file atomically: an interrupted Drop leaves the file as it
// was or without the dropped records, never a partial one.
func Drop(path string, key func(raw json.RawMessage) (string, error), drop func(raw json.RawMessage) bool) ([]string, error) {
	f, err := Open(path, key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("drop from %s: %w", path, err)
	}
	var keep bytes.Buffer
	var dropped []string
	if _, err := scanLines(io.LimitReader(f.f, f.size), func(_ int, line []byte) error {
		if isBlank(line) {
			return nil
		}
		if !drop(json.RawMessage(line)) {
			keep.Write(line)
			keep.WriteByte('\n')
			return nil
		}
		k, err := lineKey(key, line)
		if err != nil {
			return err
		}
		dropped = append(dropped, k)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("drop from %s: %w", path, err)
	}
	if len(dropped) == 0 {
		return nil, nil
	}
	// The sidecar first, while the path still names the locked file: once
	// it is replaced, another writer may open it (and the sidecar).
	for _, k := range dropped {
		for f.Attempts(k) > 0 {
			if err := f.EndAttempt(k); err != nil {
				return nil, fmt.Errorf("drop from %s: %w", path, err)
			}
		}
	}
	if err := fileio.WriteFileAtomic(path, keep.Bytes()); err != nil {
		return nil, fmt.Errorf("drop from %s: %w", path, err)
	}
	return dropped, nil
}
