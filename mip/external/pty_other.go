//go:build !linux

package external

import (
	"errors"
	"os"
)

// openPTY reports that this build offers no pseudo-terminal: cbc's output
// goes through a pipe, where C stdio buffers it (see the Linux version).
func openPTY() (master, slave *os.File, err error) {
	return nil, nil, errors.New("external: no pseudo-terminal on this system")
}
