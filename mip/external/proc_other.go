//go:build !unix

package external

import (
	"os"
	"syscall"
)

// sysProcAttr returns nil: this system has no process groups, and Solve
// signals the solver alone.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup sends sig to the solver.
func signalGroup(p *os.Process, sig signal) {
	if sig == sigKill {
		p.Kill()
	} else {
		p.Signal(os.Interrupt)
	}
}

// processAlive reports true: without a cheap test, no directory is taken
// for stale.
func processAlive(int) bool { return true }
