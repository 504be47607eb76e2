package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVerifyInterruptedRemovesSolverFiles: lenspec verify --solver external
// stopped by SIGINT or SIGTERM while its solver runs exits 130 or 143 and
// leaves no lenspec-mip-* directory in TMPDIR, even when the solver ignores
// the interrupt after reporting an incumbent, so that the verifier stops
// waiting for it before the solve's own cleanup has run: os.Exit runs no
// deferred function. Broken (no removal at exit), the directory stays.
func TestVerifyInterruptedRemovesSolverFiles(t *testing.T) {
	dir := smallModel(t)
	bin := t.TempDir()
	started := filepath.Join(bin, "started")
	solver := filepath.Join(bin, "stubborn-cbc")
	script := "#!/bin/sh\n" +
		"echo 'Cbc0012I Integer solution of 1000000 found by heuristic after 0 iterations and 0 nodes (0.00 seconds)'\n" +
		"trap '' INT TERM\n" +
		"touch \"$STUBBORN_STARTED\"\n" +
		"sleep 30\n"
	if err := os.WriteFile(solver, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		tmp := t.TempDir()
		os.Remove(started)
		cmd := lenspecCmd(t, "verify", "--model", dir, "--index", "0", "--eps", "0.5", "--max-len", "0", "--timeout", "20s",
			"--attack-steps", "0", "--bab=false", "--abstract=false", "--tokens=false",
			"--solver", "external", "--solver-binary", solver, "--out", filepath.Join(t.TempDir(), "v.jsonl"), "-q")
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp, "STUBBORN_STARTED="+started)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(started); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the solver did not start: %s", errb.String())
			}
		}
		cmd.Process.Signal(sig)
		if code := waitExit(t, cmd, time.Minute); code != want {
			t.Fatalf("%v: exit %d, want %d: %s", sig, code, want, errb.String())
		}
		ents, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "lenspec-mip-") {
				t.Errorf("%v: %s left in TMPDIR", sig, e.Name())
			}
		}
	}
}
