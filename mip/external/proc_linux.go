package external

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sysProcAttr starts the solver in a process group of its own, which
// Solve signals and kills as a whole, and has the kernel SIGKILL it when
// the thread that started it exits, which includes the death of this
// process by SIGKILL, when no cleanup runs. That thread is the one Solve
// keeps locked for the solver's lifetime (see Solver.run).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// procTimes says procStat reports start and CPU times.
const procTimes = true

// clockTick is the unit of /proc's times: USER_HZ, 100 on every Linux
// architecture Go supports.
const clockTick = 10 * time.Millisecond

// procStat reads a running process's start time (in clock ticks since
// boot: with the pid, it names the process, since a pid is reused only
// by a later process) and the CPU time it has used, from /proc. ok is
// false if the process does not exist or is a zombie (it runs no more).
func procStat(pid int) (start uint64, cpu time.Duration, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ... utime(14) stime(15) ... starttime(22);
	// comm may hold anything, so fields count from the last ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0, 0, false
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return start, time.Duration(utime+stime) * clockTick, true
}
