//go:build unix && !linux

package external

import "syscall"

// sysProcAttr starts the solver in a process group of its own, which
// Solve signals and kills as a whole. Unlike on Linux, nothing kills the
// solver if this process dies without cleaning up.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
