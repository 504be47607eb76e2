package external

import "syscall"

// sysProcAttr starts the solver in a process group of its own, which
// Solve signals and kills as a whole, and has the kernel SIGKILL it when
// the thread that started it exits, which includes the death of this
// process by SIGKILL, when no cleanup runs. That thread is the one Solve
// keeps locked for the solver's lifetime (see Solver.run).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
