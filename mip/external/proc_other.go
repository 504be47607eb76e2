//go:build !unix

package external

import (
	"os"
	"syscall"
	"time"
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

// procTimes says procStat reports no start or CPU times here.
const procTimes = false

// procStat reports every process as running, with no start or CPU time.
func procStat(int) (start uint64, cpu time.Duration, ok bool) { return 0, 0, true }

// killGroup does nothing: this system has no process groups.
func killGroup(int) {}
