//go:build unix

package external

import (
	"os"
	"syscall"
)

// signalGroup sends sig to the solver's process group (its id is the
// solver's pid, see sysProcAttr). Callers do so only before the solver is
// reaped: until then its pid, and so the group's id, cannot be reused.
func signalGroup(p *os.Process, sig signal) {
	s := syscall.SIGINT
	if sig == sigKill {
		s = syscall.SIGKILL
	}
	syscall.Kill(-p.Pid, s)
}

// processAlive reports whether a process with the given pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// killGroup kills the process group pgid (whatever is left of a solver
// whose caller died).
func killGroup(pgid int) { syscall.Kill(-pgid, syscall.SIGKILL) }
