// The purego pass of make test would run this again unchanged: it builds
// its own lenspec binary, without that tag.
//go:build !purego

package slurmdemo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestSlurm runs the demonstration of make slurm-demo on a cluster of its
// own (scripts/slurm-local.sh, in a temporary directory, on free ports):
// the verification array of docs/slurm/mmnist-verify.sbatch on 8 images ×
// 2 radii in 4 tasks, one cancelled and one requeued in the middle of a
// unit, the cancelled one rerun, the merge job of docs/slurm/merge.sbatch,
// and every merged record compared with an unsharded run's. A shard that
// loses, repeats or changes a unit, a merge that does, a rerun that takes
// another shard, or a SIGTERM that does not end a unit cleanly fails it.
// About two minutes on two idle cores.
func TestSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Slurm cluster and a verification grid for minutes")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "lenspec")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	build := exec.Command(goTool, "build", "-o", bin, "./cmd/lenspec")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building lenspec: %v\n%s", err, out)
	}
	cl, log := newTestCluster(t, repo, filepath.Join(tmp, "slurm"))
	// End in time to stop the cluster: a test binary killed by go test's
	// -timeout would leave its daemons running.
	deadline := time.Now().Add(20 * time.Minute)
	if d, ok := t.Deadline(); ok && d.Add(-2*time.Minute).Before(deadline) {
		deadline = d.Add(-2 * time.Minute)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	t0 := time.Now()
	startTestCluster(ctx, t, cl, log)
	started := time.Since(t0)
	work := filepath.Join(tmp, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	c := Config{Repo: repo, Lenspec: bin, Dir: work, Model: filepath.Join(repo, "models", "mmnist-rnn-ibp"),
		Images: 8, Eps: "0.001,0.5", Tasks: 4, Timeout: "600s", Env: cl.Env(), Log: log}
	rep, err := Run(ctx, c)
	if err != nil {
		for _, f := range []string{"slurmctld.log", "slurmd.log"} {
			if b, rerr := os.ReadFile(filepath.Join(cl.Dir, "log", f)); rerr == nil {
				log.WriteString("\n--- " + f + "\n")
				log.Write(b[max(0, len(b)-4000):])
			}
		}
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Logf("cluster up in %.0f s; %d units; reference %.0f s, array %.0f s; scancel kept %d of %d (lenspec stopped in %.1f s), requeue kept %d of %d (%.1f s); merged %d records; %.0f s in all",
		started.Seconds(), rep.Units, rep.Reference.Seconds(), rep.Array.Seconds(), rep.Cancelled.Kept, rep.Cancelled.Of, rep.Cancelled.Stop.Seconds(),
		rep.Requeued.Kept, rep.Requeued.Of, rep.Requeued.Stop.Seconds(), rep.Merged, time.Since(t0).Seconds())
}
