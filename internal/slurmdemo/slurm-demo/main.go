// Command slurm-demo is make slurm-demo: it starts the one-host Slurm
// cluster of scripts/slurm-local.sh, runs a small verification grid as the
// job array of docs/slurm/mmnist-verify.sbatch — cancelling one task and
// requeueing another in the middle of a unit, rerunning the cancelled one —
// merges and summarises it with docs/slurm/merge.sbatch, checks the merged
// records against an unsharded run of the same units, and stops the
// cluster. Run it from the repository's root.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/lenspec/lenspec/internal/slurmdemo"
)

func main() {
	var c slurmdemo.Config
	var keep bool
	flag.StringVar(&c.Dir, "dir", "demo-out/slurm", "work directory: job logs, out/ (the array's run), ref/ (the unsharded run)")
	flag.StringVar(&c.Lenspec, "lenspec", "bin/lenspec", "the lenspec binary")
	flag.StringVar(&c.Model, "model", "models/mmnist-rnn-ibp", "model directory")
	flag.IntVar(&c.Images, "images", 8, "random test images")
	flag.StringVar(&c.Eps, "eps", "0.001,0.5", "radius grid")
	flag.IntVar(&c.Tasks, "tasks", 4, "array tasks (shards)")
	flag.StringVar(&c.Timeout, "timeout", "600s", "time limit per unit (long: no verdict may depend on the machine's load)")
	flag.StringVar(&c.MNISTDir, "mnist-dir", "", "MNIST directory (default lenspec's data cache)")
	flag.BoolVar(&keep, "keep", false, "leave the cluster running")
	flag.Parse()
	if err := run(c, keep); err != nil {
		fmt.Fprintf(os.Stderr, "slurm-demo: %v\n", err)
		os.Exit(1)
	}
}

func run(c slurmdemo.Config, keep bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	repo, err := os.Getwd()
	if err != nil {
		return err
	}
	for _, p := range []*string{&c.Dir, &c.Lenspec, &c.Model} {
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	dir := os.Getenv("SLURM_LOCAL_DIR")
	if dir == "" {
		dir = filepath.Join(repo, ".slurm")
	}
	cl := &slurmdemo.Cluster{Script: filepath.Join(repo, "scripts", "slurm-local.sh"), Dir: dir, Log: os.Stderr}
	fmt.Println("== Starting the one-host Slurm cluster (scripts/slurm-local.sh start)")
	err = cl.Start(ctx)
	if !keep || err != nil {
		// Also after a failed start, which may have left daemons up.
		defer func() {
			fmt.Println("\n== Stopping the cluster (scripts/slurm-local.sh stop)")
			if err := cl.Stop(context.Background()); err != nil {
				fmt.Fprintf(os.Stderr, "slurm-demo: %v\n", err)
			}
		}()
	}
	if err != nil {
		return err
	}
	c.Repo, c.Env, c.Log = repo, cl.Env(), os.Stdout
	t0 := time.Now()
	rep, err := slurmdemo.Run(ctx, c)
	if err != nil {
		return err
	}
	fmt.Printf("\n== Done in %.0f s: %d units in %d shards.\n", time.Since(t0).Seconds(), rep.Units, c.Tasks)
	for _, it := range []struct {
		what string
		i    slurmdemo.Interruption
	}{{"scancel", rep.Cancelled}, {"scontrol requeue", rep.Requeued}} {
		fmt.Printf("%s of task %d in the middle of %s: lenspec stopped %.1f s later keeping %d of %d records; the shard finished in %d runs with each unit once.\n",
			it.what, it.i.Task, it.i.Unit, it.i.Stop.Seconds(), it.i.Kept, it.i.Of, it.i.Runs)
	}
	fmt.Printf("Merged: %d records, %d duplicates; equal to the unsharded run's but for timings (witness files byte for byte).\n", rep.Merged, rep.MergeDuplicate)
	return nil
}
