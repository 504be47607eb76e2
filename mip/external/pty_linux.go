package external

import (
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// openPTY returns the two ends of a new pseudo-terminal with output
// processing off (so that "\n" stays "\n"), or an error if the system
// offers none (a container without devpts, say).
//
// cbc's standard output is a pseudo-terminal rather than a pipe because
// C stdio buffers output to a pipe in 4 KB blocks: its log, and so the
// events, would arrive late and in bursts, and a cbc killed at the time
// limit would take the block it had not yet written with it, root LP
// bound included. To a terminal, stdio writes line by line.
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			master.Close()
			if slave != nil {
				slave.Close()
			}
			master, slave = nil, nil
		}
	}()
	var unlock int32
	if err = ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		return
	}
	var n uint32
	if err = ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		return
	}
	// O_NOCTTY: the terminal must not become anybody's controlling
	// terminal, which would bring job control and SIGHUP into play.
	slave, err = os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return
	}
	var t syscall.Termios
	if err = ioctl(slave, syscall.TCGETS, unsafe.Pointer(&t)); err != nil {
		return
	}
	t.Oflag &^= syscall.OPOST
	t.Lflag &^= syscall.ECHO | syscall.ICANON | syscall.ISIG | syscall.IEXTEN
	err = ioctl(slave, syscall.TCSETS, unsafe.Pointer(&t))
	return
}

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	err = rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg))
	})
	if err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
