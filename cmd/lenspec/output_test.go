package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lenspec/lenspec/multimnist"
)

// TestMain runs the test binary as lenspec itself when a test starts it so
// (lenspecCmd): signal handling (SIGPIPE, SIGINT) needs a process of its
// own.
func TestMain(m *testing.M) {
	if os.Getenv("LENSPEC_TEST_AS_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// lenspecCmd is lenspec run in a process of its own: main(), its signal
// handling included.
func lenspecCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "LENSPEC_TEST_AS_MAIN=1")
	return cmd
}

// waitExit waits at most d for cmd to end and returns its exit code (−1
// for a death by signal).
func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode()
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%v still running after %v", cmd.Args[1:], d)
		return 0
	}
}

// oneErrorLine checks that stderr holds exactly one "lenspec: " line and
// that it holds every want.
func oneErrorLine(t *testing.T, stderr string, want ...string) {
	t.Helper()
	var errs []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if strings.HasPrefix(l, "lenspec: ") {
			errs = append(errs, l)
		}
	}
	if len(errs) != 1 {
		t.Fatalf("stderr %q: want one error line", stderr)
	}
	for _, w := range want {
		if !strings.Contains(errs[0], w) {
			t.Fatalf("error line %q: want %q in it", errs[0], w)
		}
	}
}

// writeTestPNG writes an image the small captioner decodes.
func writeTestPNG(t *testing.T) string {
	t.Helper()
	pix := make([]uint8, multimnist.Height*multimnist.Width)
	for i := range pix {
		pix[i] = uint8(i % 251)
	}
	png := filepath.Join(t.TempDir(), "x.png")
	if err := multimnist.WritePNG(png, pix, multimnist.Height, multimnist.Width, 1); err != nil {
		t.Fatal(err)
	}
	return png
}

// TestOutputFullDisk: every command that prints, printing to a full disk
// (/dev/full), exits 1 with one line saying standard output could not be
// written, however it writes (text, JSON, cobra's help).
func TestOutputFullDisk(t *testing.T) {
	nmt := tinyTranslatorDir(t)
	capt := smallModel(t)
	png := writeTestPNG(t)
	tsv := toyCorpus(t)
	for _, c := range []struct {
		name, stdin string
		args        []string
	}{
		{"translate arguments", "", []string{"translate", "--model", nmt, "das haus"}},
		{"translate stdin", "das haus\nklein\n", []string{"translate", "--model", nmt}},
		{"translate --json", "das haus\n", []string{"translate", "--model", nmt, "--json"}},
		{"decode", "", []string{"decode", "--model", capt, "--image", png}},
		{"decode --json", "", []string{"decode", "--model", capt, "--image", png, "--json"}},
		{"attack", "", []string{"attack", "--model", capt, "--method", "random", "--eps", "0.1", "--index", "0", "--budget", "2", "--out", filepath.Join(t.TempDir(), "r.jsonl"), "-q"}},
		{"eval", "", []string{"eval", "--model", tinyTranslatorReading(t, 64), "--corpus", tsv, "-q"}},
		{"help", "", []string{"verify", "--help"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer full.Close()
			var errb bytes.Buffer
			a := &app{stdin: strings.NewReader(c.stdin), stdout: full, stderr: &errb}
			if code := run(context.Background(), a, c.args); code != 1 {
				t.Fatalf("exit %d, want 1 (stderr %q)", code, errb.String())
			}
			oneErrorLine(t, errb.String(), "cannot write standard output", "no space left on device")
		})
	}
}

// TestOutputClosedPipe: a command whose standard output is a pipe with no
// reader is not killed by SIGPIPE: it exits 1 with one line saying so.
func TestOutputClosedPipe(t *testing.T) {
	nmt := tinyTranslatorDir(t)
	capt := smallModel(t)
	png := writeTestPNG(t)
	for name, args := range map[string][]string{
		"translate":     {"translate", "--model", nmt, "das haus"},
		"decode":        {"decode", "--model", capt, "--image", png},
		"decode --json": {"decode", "--model", capt, "--image", png, "--json"},
	} {
		t.Run(name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			cmd := lenspecCmd(t, args...)
			var errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = w, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if code := waitExit(t, cmd, 2*time.Minute); code != 1 {
				t.Fatalf("exit %d (%v), want 1; stderr %q", code, cmd.ProcessState, errb.String())
			}
			oneErrorLine(t, errb.String(), "cannot write standard output", "broken pipe")
		})
	}
}

// TestOutputFIFOReaderGone: translate writing to a FIFO answers a line, and
// when the FIFO's reader goes away, the next line's answer fails: exit 1
// and one line saying why, with standard input still open.
func TestOutputFIFOReaderGone(t *testing.T) {
	nmt := tinyTranslatorDir(t)
	fifo := filepath.Join(t.TempDir(), "out")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := lenspecCmd(t, "translate", "--model", nmt)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := in.Write([]byte("das haus\n")); err != nil {
		t.Fatal(err)
	}
	r.SetReadDeadline(time.Now().Add(2 * time.Minute))
	if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
		cmd.Process.Kill()
		t.Fatalf("no answer to the first line: %v (stderr %q)", err, errb.String())
	}
	r.Close()
	if _, err := in.Write([]byte("klein\n")); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, 2*time.Minute); code != 1 {
		t.Fatalf("exit %d (%v), want 1; stderr %q", code, cmd.ProcessState, errb.String())
	}
	oneErrorLine(t, errb.String(), "cannot write standard output", "broken pipe")
}
