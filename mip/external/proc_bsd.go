//go:build unix && !linux

package external

import (
	"syscall"
	"time"
)

// sysProcAttr starts the solver in a process group of its own, which
// Solve signals and kills as a whole. Unlike on Linux, nothing kills the
// solver if this process dies without cleaning up; the next Solve's sweep
// kills its group (see sweepStale).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// procTimes says procStat reports no start or CPU times here.
const procTimes = false

// procStat reports whether a process with the given pid exists; this
// system offers no start time or CPU time without cgo.
func procStat(pid int) (start uint64, cpu time.Duration, ok bool) {
	return 0, 0, processAlive(pid)
}
