// Like TestSlurm, run once: the purego pass has nothing of its own to add.
//go:build !purego

package slurmdemo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// daemons lists the live munged, slurmctld and slurmd processes of the
// cluster in dir by name: those whose command line names its munge key or
// its slurm.conf, whatever their pid files say.
func daemons(t *testing.T, dir string) map[string][]int {
	t.Helper()
	conf, key := filepath.Join(dir, "etc", "slurm.conf"), "--key-file="+filepath.Join(dir, "munge", "munge.key")
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][]int{}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		comm, err1 := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
		cmdline, err2 := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err1 != nil || err2 != nil {
			continue // gone meanwhile
		}
		name := strings.TrimSpace(string(comm))
		want := conf
		switch name {
		case "munged":
			want = key
		case "slurmctld", "slurmd":
		default:
			continue
		}
		// A zombie's command line is empty.
		if slices.Contains(strings.Split(string(cmdline), "\x00"), want) {
			found[name] = append(found[name], pid)
		}
	}
	return found
}

// newTestCluster is a cluster in dir run by repo's
// scripts/slurm-local.sh on free ports, logging to the buffer returned.
func newTestCluster(t *testing.T, repo, dir string) (*Cluster, *bytes.Buffer) {
	t.Helper()
	port, err := FreePorts()
	if err != nil {
		t.Fatal(err)
	}
	log := new(bytes.Buffer)
	return &Cluster{Script: filepath.Join(repo, "scripts", "slurm-local.sh"), Dir: dir, Port: port, Log: log}, log
}

// startTestCluster starts cl (logging to log) for t: t is skipped where
// Slurm cannot run at all. When t ends cl is stopped, even after a failed
// start, which may have left daemons up, and a daemon of its directory
// still running then fails t and is killed, so that no test leaves one
// behind.
func startTestCluster(ctx context.Context, t *testing.T, cl *Cluster, log *bytes.Buffer) {
	t.Helper()
	err := cl.Start(ctx)
	if errors.Is(err, ErrCannotRun) {
		t.Skipf("%v\n%s", err, log.String())
	}
	t.Cleanup(func() {
		if err := cl.Stop(context.Background()); err != nil {
			t.Errorf("%v\n%s", err, log.String())
		}
		for name, pids := range daemons(t, cl.Dir) {
			t.Errorf("%s %v still running after stop: killing them", name, pids)
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	if err != nil {
		t.Fatalf("start: %v\n%s", err, log.String())
	}
}

// TestSlurmLocalScript runs scripts/slurm-local.sh's lifecycle on a
// directory with a space in its name: a start, a stop that cancels its
// jobs without waiting out its 45 s for them, two starts at once on the
// existing directory (both succeed, one set of daemons runs, one stop
// stops it all), and a start a second after slurmctld was killed, which
// must start it again rather than find it "already running". About 20 s.
func TestSlurmLocalScript(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "lenspec slurm")
	cl, log := newTestCluster(t, repo, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	startTestCluster(ctx, t, cl, log)
	one := func(when string) map[string][]int {
		t.Helper()
		d := daemons(t, dir)
		for _, name := range []string{"munged", "slurmctld", "slurmd"} {
			if len(d[name]) != 1 {
				t.Fatalf("%s: %s %v running, want one\n%s", when, name, d[name], log.String())
			}
		}
		return d
	}
	none := func(when string) {
		t.Helper()
		if d := daemons(t, dir); len(d) > 0 {
			t.Fatalf("%s: %v still running\n%s", when, d, log.String())
		}
	}
	one("after a start")

	// One job queued (it waits for its begin time) and one running that
	// takes 2 s to end after SIGTERM: stop cancels both and goes on as
	// soon as the queue is empty, not after its 45 s limit.
	slurm := func(name string, args ...string) string {
		t.Helper()
		c := exec.CommandContext(ctx, name, args...)
		c.Env = cl.Env()
		out, err := c.Output()
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return strings.TrimSpace(string(out))
	}
	slurm("sbatch", "--parsable", "--begin=now+1hour", "-o", "/dev/null", "--wrap", "sleep 600")
	id := slurm("sbatch", "--parsable", "-o", "/dev/null", "--wrap", `trap "sleep 2; exit 0" TERM; sleep 600 & wait`)
	for deadline := time.Now().Add(time.Minute); slurm("squeue", "-h", "-j", id, "-o", "%T") != "RUNNING"; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("job %s not running after a minute\n%s", id, log.String())
		}
	}
	t0 := time.Now()
	if err := cl.Stop(ctx); err != nil {
		t.Fatalf("stop: %v\n%s", err, log.String())
	}
	if s := time.Since(t0); s > 20*time.Second {
		t.Errorf("stop with a queued job and one ending in 2 s took %.0f s", s.Seconds())
	}
	none("after a stop")

	// Two starts at once on the existing directory.
	errs := make(chan error, 2)
	logs := make([]bytes.Buffer, 2)
	for i := range logs {
		c := *cl
		c.Log = &logs[i]
		go func() { errs <- c.Start(ctx) }()
	}
	for range logs {
		if err := <-errs; err != nil {
			t.Errorf("one of two starts at once: %v", err)
		}
	}
	log.Write(logs[0].Bytes())
	log.Write(logs[1].Bytes())
	d := one("after two starts at once")
	if err := cl.script(ctx, "status"); err != nil {
		t.Fatalf("status after two starts at once: %v\n%s", err, log.String())
	}

	// slurmctld killed: a start a second later starts it again.
	if err := syscall.Kill(d["slurmctld"][0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	n := log.Len()
	if err := cl.Start(ctx); err != nil {
		t.Fatalf("start after slurmctld was killed: %v\n%s", err, log.String())
	}
	if strings.Contains(log.String()[n:], "already running") {
		t.Errorf("start after slurmctld was killed says it is already running:\n%s", log.String()[n:])
	}
	if again := one("after slurmctld was killed and started again"); again["slurmctld"][0] == d["slurmctld"][0] {
		t.Errorf("slurmctld %d was killed and still counts", again["slurmctld"][0])
	}
	if err := cl.script(ctx, "status"); err != nil {
		t.Fatalf("status after slurmctld was started again: %v\n%s", err, log.String())
	}
	if err := cl.Stop(ctx); err != nil {
		t.Fatalf("stop: %v\n%s", err, log.String())
	}
	none("after the last stop")
}
