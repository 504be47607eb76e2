// Package slurmdemo runs lenspec's Slurm job scripts (docs/slurm) on a
// real Slurm cluster and checks what docs/scale-out.md promises of them:
// the array's shards, merged, hold exactly the records of an unsharded run
// of the same units; a task cancelled mid-run keeps its finished units and
// its rerun does only the rest; a task requeued mid-run resumes the same
// way; the dependent merge job runs only when every shard succeeded. make
// slurm-demo and its test run it on scripts/slurm-local.sh's cluster.
package slurmdemo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Config is one demonstration: a verification grid, its shards, and where
// everything goes.
type Config struct {
	Repo    string // the repository: docs/slurm, the model
	Lenspec string // the lenspec binary (absolute)
	Dir     string // work directory: job logs, out/ (the array's run), ref/ (the unsharded run)
	Model   string // model directory (absolute)
	Images  int
	Eps     string // radius grid, as lenspec's --eps takes it
	Tasks   int    // array tasks (shards)
	// Timeout per unit: long enough that no verdict depends on how busy the
	// machine is (a unit stopped by its time limit is unknown, and would
	// differ between runs for that reason alone).
	Timeout  string
	MNISTDir string   // optional: lenspec's --mnist-dir
	Env      []string // environment of Slurm's commands (Cluster.Env)
	Log      io.Writer
	// Wait bounds each wait for a job (default 10 minutes).
	Wait time.Duration
}

// Report is what a demonstration showed.
type Report struct {
	Units                  int
	Reference, Array       time.Duration // the unsharded run; submission to the last task's end
	Cancelled, Requeued    Interruption
	RefusedArray           string // lenspec's error for a rerun submitted without SHARDS
	Merged, MergeDuplicate int    // records the merge wrote and skipped
}

// Interruption is a task stopped mid-run.
type Interruption struct {
	Task       int           // array index = shard
	Kept, Of   int           // records kept when it stopped, of its units
	Unit       string        // the unit it was working on
	Stop       time.Duration // from the signal to lenspec's exit
	Runs       int           // runs of its shard in all: the interrupted one and the one that finished it
	ExitStatus string        // Slurm's ExitCode of the interrupted run
}

type demo struct {
	Config
	rep       Report
	out, ref  string // results files
	ids       map[int]string
	arrayJob  string
	refRecs   []Record
	submitted time.Time
}

// Run runs the demonstration on a running cluster and returns what it
// showed, or the first check that failed.
func Run(ctx context.Context, c Config) (*Report, error) {
	if c.Wait == 0 {
		c.Wait = 10 * time.Minute
	}
	if c.Tasks < 3 {
		return nil, errors.New("slurmdemo: needs at least 3 tasks (one cancelled, one requeued, one left alone)")
	}
	d := &demo{Config: c, out: filepath.Join(c.Dir, "out", "verify.jsonl"), ref: filepath.Join(c.Dir, "ref", "verify.jsonl"), ids: map[int]string{}}
	for _, dir := range []string{"out", "ref"} {
		if err := os.RemoveAll(filepath.Join(c.Dir, dir)); err != nil {
			return nil, err
		}
	}
	steps := []struct {
		what string
		run  func(context.Context) error
	}{
		{"the unsharded reference run", d.reference},
		{"the array and its merge job", d.submit},
		{"a task cancelled mid-run", d.cancel},
		{"a task requeued mid-run", d.requeue},
		{"the array's end", d.waitArray},
		{"the cancelled task, rerun", d.rerun},
		{"the merge and summary", d.merge},
		{"the merged records against the reference", d.check},
	}
	for _, s := range steps {
		d.logf("\n== %s", s.what)
		if err := s.run(ctx); err != nil {
			return &d.rep, fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return &d.rep, nil
}

func (d *demo) logf(format string, args ...any) { fmt.Fprintf(d.Log, format+"\n", args...) }

// run runs a command in Dir, echoing it and its output, and returns its
// standard output.
func (d *demo) run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	d.logf("$ %s%s %s", envPrefix(env), name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = d.Dir, append(append([]string{}, d.Env...), env...)
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(&out, d.Log)
	cmd.Stderr = d.Log
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s: %w", name, err)
	}
	return strings.TrimSpace(out.String()), nil
}

func envPrefix(env []string) string {
	var b strings.Builder
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		fmt.Fprintf(&b, "%s=%s ", k, filepath.Base(v))
	}
	return b.String()
}

// lenspecFlags are the grid's flags, the same for every run.
func (d *demo) lenspecFlags() []string {
	f := []string{"--images", strconv.Itoa(d.Images), "--eps", d.Eps, "--timeout", d.Timeout}
	if d.MNISTDir != "" {
		f = append(f, "--mnist-dir", d.MNISTDir)
	}
	return f
}

// reference runs the grid unsharded, outside Slurm, with all of the
// machine's cores (the tasks have one each).
func (d *demo) reference(ctx context.Context) error {
	t0 := time.Now()
	args := append([]string{"-n", "10", d.Lenspec, "experiment", "mmnist-verify", "--model", d.Model, "--out", filepath.Dir(d.ref), "--quiet"}, d.lenspecFlags()...)
	if _, err := d.run(ctx, nil, "nice", args...); err != nil {
		return err
	}
	d.rep.Reference = time.Since(t0)
	recs, err := ReadRecords(d.ref)
	if err != nil {
		return err
	}
	if _, err := Unique(d.ref, recs); err != nil {
		return err
	}
	d.refRecs, d.rep.Units = recs, len(recs)
	d.logf("%d units in %.0f s", len(recs), d.rep.Reference.Seconds())
	return nil
}

// shardOf is the shard (1-based) and the position in it of the unit on
// line (1-based) of the unsharded run, which writes units in the order
// shards interleave them.
func (d *demo) shardOf(line int) (shard, pos int) { return (line-1)%d.Tasks + 1, (line - 1) / d.Tasks }

// unitsOf counts the units of shard k.
func (d *demo) unitsOf(k int) int {
	n := 0
	for i := range d.refRecs {
		if s, _ := d.shardOf(i + 1); s == k {
			n++
		}
	}
	return n
}

// slowest returns the shard whose slowest unit with a finished unit before
// it (so that an interruption there has work to keep) took longest in the
// reference run, skipping shard skip: the task to interrupt, and how many
// records it will have written when that unit starts.
func (d *demo) slowest(skip int) (shard, pos int, unit string, secs float64) {
	for i, r := range d.refRecs {
		s, p := d.shardOf(i + 1)
		v, _ := strconv.ParseFloat(fmt.Sprint(r.JSON["seconds"]), 64)
		if s != skip && p > 0 && v > secs {
			shard, pos, unit, secs = s, p, r.Key, v
		}
	}
	return shard, pos, unit, secs
}

func (d *demo) jobEnv() []string {
	return []string{"OUT=" + filepath.Dir(d.out), "MODEL=" + d.Model, "LENSPEC=" + d.Lenspec}
}

func (d *demo) script(name string) string { return filepath.Join(d.Repo, "docs", "slurm", name) }

// sbatch submits and returns the job id.
func (d *demo) sbatch(ctx context.Context, env []string, args ...string) (string, error) {
	out, err := d.run(ctx, env, "sbatch", append([]string{"--parsable"}, args...)...)
	if err != nil {
		return "", err
	}
	id, _, _ := strings.Cut(out, ";")
	if _, err := strconv.Atoi(id); err != nil {
		return "", fmt.Errorf("sbatch printed %q, not a job id", out)
	}
	return id, nil
}

func (d *demo) submit(ctx context.Context) error {
	args := append([]string{"--array", fmt.Sprintf("1-%d", d.Tasks), "--time", "30", "--mem", "2G", d.script("mmnist-verify.sbatch")}, d.lenspecFlags()...)
	d.submitted = time.Now()
	id, err := d.sbatch(ctx, d.jobEnv(), args...)
	if err != nil {
		return err
	}
	d.arrayJob = id
	for k := 1; k <= d.Tasks; k++ {
		d.ids[k] = fmt.Sprintf("%s_%d", id, k)
	}
	// The merge job as a user submits it with the array: it must not run,
	// since one task will be cancelled.
	m, err := d.sbatch(ctx, d.jobEnv(), "--dependency", "afterok:"+id, "--kill-on-invalid-dep=yes", d.script("merge.sbatch"), "verify")
	if err != nil {
		return err
	}
	d.ids[0] = m
	return nil
}

// job is what scontrol says of a job.
type job struct{ state, exit, reason string }

var (
	stateRE  = regexp.MustCompile(`\bJobState=(\S+)`)
	exitRE   = regexp.MustCompile(`\bExitCode=(\S+)`)
	reasonRE = regexp.MustCompile(`\bReason=(\S+)`)
)

func (d *demo) job(ctx context.Context, id string) (job, error) {
	cmd := exec.CommandContext(ctx, "scontrol", "show", "job", "-o", id)
	cmd.Env = d.Env
	out, err := cmd.Output()
	if err != nil {
		return job{}, fmt.Errorf("scontrol show job %s: %w", id, err)
	}
	var j job
	if m := stateRE.FindSubmatch(out); m != nil {
		j.state = string(m[1])
	}
	if m := exitRE.FindSubmatch(out); m != nil {
		j.exit = string(m[1])
	}
	if m := reasonRE.FindSubmatch(out); m != nil {
		j.reason = string(m[1])
	}
	return j, nil
}

// finished reports whether a job state is final.
func finished(state string) bool {
	switch state {
	case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE":
		return true
	}
	return false
}

// until polls cond every 100 ms until it holds, the wait runs out, or it
// fails.
func (d *demo) until(ctx context.Context, what string, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, d.Wait)
	defer cancel()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting %v for %s: %w", d.Wait, what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitJob waits for a job to finish and returns its end.
func (d *demo) waitJob(ctx context.Context, id string) (job, error) {
	var j job
	err := d.until(ctx, "job "+id+" to finish", func() (bool, error) {
		var err error
		j, err = d.job(ctx, id)
		return finished(j.state), err
	})
	return j, err
}

// interrupt waits until task k has written pos records and is running,
// then runs signal on it (scancel, scontrol requeue) and waits for that
// run to end.
func (d *demo) interrupt(ctx context.Context, k, pos int, unit, verb string, signal ...string) (Interruption, error) {
	it := Interruption{Task: k, Of: d.unitsOf(k), Unit: unit}
	file := shardFile(d.out, k, d.Tasks)
	err := d.until(ctx, fmt.Sprintf("task %d to write %d records", k, pos), func() (bool, error) {
		n, err := CountRecords(file)
		if err != nil || n < pos {
			return false, err
		}
		j, err := d.job(ctx, d.ids[k])
		if err != nil {
			return false, err
		}
		if j.state != "RUNNING" {
			return false, fmt.Errorf("task %d is %s with %d of %d records: it ended before it could be interrupted", k, j.state, n, it.Of)
		}
		return true, nil
	})
	if err != nil {
		return it, err
	}
	d.logf("task %d has written %d of its %d records and is working on %s: %s it", k, pos, it.Of, unit, verb)
	before, err := d.taskLog(k)
	if err != nil {
		return it, err
	}
	t0 := time.Now()
	if _, err := d.run(ctx, nil, signal[0], append(signal[1:], d.ids[k])...); err != nil {
		return it, err
	}
	// Slurm shows a requeued task pending while its processes still stop:
	// the run has ended when lenspec has said so in the task's log.
	err = d.until(ctx, fmt.Sprintf("task %d to stop", k), func() (bool, error) {
		log, err := d.taskLog(k)
		if err != nil {
			return false, err
		}
		if !strings.Contains(log[len(before):], stopped) {
			return false, nil
		}
		j, err := d.job(ctx, d.ids[k])
		it.ExitStatus = j.exit
		return j.state != "RUNNING" && j.state != "COMPLETING", err
	})
	it.Stop = time.Since(t0)
	if err != nil {
		return it, err
	}
	if it.Kept, err = CountRecords(file); err != nil {
		return it, err
	}
	if it.Kept >= it.Of {
		return it, fmt.Errorf("task %d finished all %d units before the %s took effect: nothing was interrupted", k, it.Of, verb)
	}
	if it.Kept < pos {
		return it, fmt.Errorf("task %d has %d records after the %s, %d before: finished work was lost", k, it.Kept, verb, pos)
	}
	// lenspec stopped on SIGTERM: it ended the unit's attempt cleanly (not
	// a crash) and said so.
	ended, err := Interrupted(file)
	if err != nil {
		return it, err
	}
	if !containsUnit(ended, unit) {
		return it, fmt.Errorf("%s.attempts has no clean end for %s (ended attempts: %d): task %d was not writing shard %d (its shard from the environment is wrong), or lenspec did not end the unit's attempt on SIGTERM", file, unit, len(ended), k, k)
	}
	d.logf("task %d stopped %.1f s after the %s with %d of %d records kept (Slurm ExitCode %s); its attempt at %s ended cleanly", k, it.Stop.Seconds(), verb, it.Kept, it.Of, it.ExitStatus, unit)
	return it, nil
}

// containsUnit reports whether one of lenspec's keys names unit ("sample=S
// eps=E k=K", as Record.Key).
func containsUnit(keys []string, unit string) bool {
	for _, k := range keys {
		if strings.Contains(k, " "+unit+" ") {
			return true
		}
	}
	return false
}

// stopped is what lenspec says when SIGTERM stopped it.
const stopped = "interrupted by terminated; finished work is saved"

// taskLog returns task k's log (the array's output file; a requeued
// task's runs are appended).
func (d *demo) taskLog(k int) (string, error) {
	b, err := os.ReadFile(filepath.Join(d.Dir, fmt.Sprintf("lenspec-verify-%s_%d.out", d.arrayJob, k)))
	return string(b), err
}

func (d *demo) cancel(ctx context.Context) error {
	k, pos, unit, secs := d.slowest(0)
	if secs < 2 {
		return fmt.Errorf("the grid's slowest unit took %.1f s: too short to cancel a task in the middle of one (a larger grid or radius)", secs)
	}
	var err error
	d.rep.Cancelled, err = d.interrupt(ctx, k, pos, unit, "scancel", "scancel")
	if err != nil {
		return err
	}
	j, err := d.job(ctx, d.ids[k])
	if err != nil {
		return err
	}
	if j.state != "CANCELLED" {
		return fmt.Errorf("task %d is %s after scancel, not CANCELLED", k, j.state)
	}
	return nil
}

func (d *demo) requeue(ctx context.Context) error {
	k, pos, unit, secs := d.slowest(d.rep.Cancelled.Task)
	if secs < 2 {
		return fmt.Errorf("the grid's second slowest unit took %.1f s: too short to requeue a task in the middle of one", secs)
	}
	var err error
	d.rep.Requeued, err = d.interrupt(ctx, k, pos, unit, "requeue", "scontrol", "requeue")
	if err != nil {
		return err
	}
	j, err := d.job(ctx, d.ids[k])
	if err != nil {
		return err
	}
	d.logf("task %d is %s (%s): Slurm starts it again once its credential expires (cred_expire, 20 s here)", k, j.state, j.reason)
	return nil
}

// waitArray waits for every task but the cancelled one, checks that the
// requeued one ran again and finished, and that the merge job submitted
// with the array was cancelled rather than run on incomplete shards.
func (d *demo) waitArray(ctx context.Context) error {
	for k := 1; k <= d.Tasks; k++ {
		if k == d.rep.Cancelled.Task {
			continue
		}
		j, err := d.waitJob(ctx, d.ids[k])
		if err != nil {
			return err
		}
		if j.state != "COMPLETED" {
			return fmt.Errorf("task %d ended %s (ExitCode %s)", k, j.state, j.exit)
		}
	}
	d.rep.Array = time.Since(d.submitted)
	r := d.rep.Requeued.Task
	log, err := d.taskLog(r)
	if err != nil {
		return err
	}
	if d.rep.Requeued.Runs = strings.Count(log, "verify: started"); d.rep.Requeued.Runs != 2 {
		return fmt.Errorf("task %d's log shows %d runs, want 2 (the requeued one and its restart)", r, d.rep.Requeued.Runs)
	}
	d.logf("every task but %d completed %.0f s after submission; task %d completed after its requeue", d.rep.Cancelled.Task, d.rep.Array.Seconds(), r)
	j, err := d.waitJob(ctx, d.ids[0])
	if err != nil {
		return err
	}
	if j.state != "CANCELLED" || j.reason != "DependencyNeverSatisfied" {
		return fmt.Errorf("the merge job submitted with the array is %s (%s), want CANCELLED (DependencyNeverSatisfied): it must not merge while a shard is missing", j.state, j.reason)
	}
	d.logf("the merge job %s submitted with the array was cancelled (%s): a shard was missing", d.ids[0], j.reason)
	return nil
}

// rerun submits the cancelled task again: first as a user might without
// the run's task count (lenspec must refuse it), then with SHARDS.
func (d *demo) rerun(ctx context.Context) error {
	k := d.rep.Cancelled.Task
	args := append([]string{"--array", strconv.Itoa(k), "--time", "30", "--mem", "2G", "--output", "rerun-%A_%a.out", d.script("mmnist-verify.sbatch")}, d.lenspecFlags()...)
	id, err := d.sbatch(ctx, d.jobEnv(), args...)
	if err != nil {
		return err
	}
	j, err := d.waitJob(ctx, id+"_"+strconv.Itoa(k))
	if err != nil {
		return err
	}
	log, _ := os.ReadFile(filepath.Join(d.Dir, fmt.Sprintf("rerun-%s_%d.out", id, k)))
	if j.state != "FAILED" || j.exit != "2:0" || !bytes.Contains(log, []byte("is not a whole run")) {
		return fmt.Errorf("task %d resubmitted alone without SHARDS ended %s (ExitCode %s), want FAILED with lenspec's usage error (exit 2) refusing an array that is not a whole run; its log: %s", k, j.state, j.exit, log)
	}
	d.rep.RefusedArray = strings.TrimSpace(string(log))
	d.logf("refused, as it must be: %s", d.rep.RefusedArray)
	before, err := CountRecords(shardFile(d.out, k, d.Tasks))
	if err != nil {
		return err
	}
	env := append(d.jobEnv(), "SHARDS="+strconv.Itoa(d.Tasks))
	id, err = d.sbatch(ctx, env, args...)
	if err != nil {
		return err
	}
	d.ids[k] = id + "_" + strconv.Itoa(k)
	if j, err = d.waitJob(ctx, d.ids[k]); err != nil {
		return err
	}
	if j.state != "COMPLETED" {
		return fmt.Errorf("task %d resubmitted with SHARDS=%d ended %s (ExitCode %s)", k, d.Tasks, j.state, j.exit)
	}
	after, err := CountRecords(shardFile(d.out, k, d.Tasks))
	if err != nil {
		return err
	}
	if after != d.rep.Cancelled.Of {
		return fmt.Errorf("task %d's file has %d records after its rerun, want its %d units", k, after, d.rep.Cancelled.Of)
	}
	d.rep.Cancelled.Runs = 2
	d.logf("task %d rerun as shard %d/%d: %d records before, %d after (its %d units)", k, k, d.Tasks, before, after, d.rep.Cancelled.Of)
	return nil
}

// merge submits the merge job again, after the tasks that completed and
// the rerun, and waits for it.
func (d *demo) merge(ctx context.Context) error {
	var after []string
	for k := 1; k <= d.Tasks; k++ {
		after = append(after, d.ids[k])
	}
	id, err := d.sbatch(ctx, d.jobEnv(), "--dependency", "afterok:"+strings.Join(after, ":"), "--kill-on-invalid-dep=yes", d.script("merge.sbatch"), "verify")
	if err != nil {
		return err
	}
	j, err := d.waitJob(ctx, id)
	log, _ := os.ReadFile(filepath.Join(d.Dir, "lenspec-merge-"+id+".out"))
	d.logf("%s", bytes.TrimSpace(log))
	if err != nil {
		return err
	}
	if j.state != "COMPLETED" {
		return fmt.Errorf("the merge job ended %s (ExitCode %s)", j.state, j.exit)
	}
	m := regexp.MustCompile(`(\d+) verify records written, (\d+) duplicates skipped`).FindSubmatch(log)
	if m == nil {
		return errors.New("the merge job's log does not say how many records it wrote")
	}
	d.rep.Merged, _ = strconv.Atoi(string(m[1]))
	d.rep.MergeDuplicate, _ = strconv.Atoi(string(m[2]))
	return nil
}

// check compares each shard and the merged file with the reference.
func (d *demo) check(ctx context.Context) error {
	var all []Record
	for k := 1; k <= d.Tasks; k++ {
		p := shardFile(d.out, k, d.Tasks)
		recs, err := ReadRecords(p)
		if err != nil {
			return err
		}
		if _, err := Unique(p, recs); err != nil {
			return err
		}
		for _, r := range recs {
			if r.JSON["error"] != nil || r.JSON["crashed"] != nil {
				return fmt.Errorf("%s line %d: unit %s failed: %v", p, r.Line, r.Key, r.JSON["error"])
			}
		}
		if len(recs) != d.unitsOf(k) {
			return fmt.Errorf("%s: %d records, want shard %d's %d units", p, len(recs), k, d.unitsOf(k))
		}
		all = append(all, recs...)
	}
	// Every unit in exactly one shard, and as the reference recorded it.
	if err := Compare(d.ref, d.refRecs, "the shard files", all); err != nil {
		return err
	}
	merged := filepath.Join(filepath.Dir(d.out), "merged", "verify.jsonl")
	recs, err := ReadRecords(merged)
	if err != nil {
		return err
	}
	if err := Compare(d.ref, d.refRecs, merged, recs); err != nil {
		return err
	}
	if d.rep.Merged != d.rep.Units || d.rep.MergeDuplicate != 0 {
		return fmt.Errorf("merge wrote %d records and skipped %d duplicates, want %d and 0", d.rep.Merged, d.rep.MergeDuplicate, d.rep.Units)
	}
	d.logf("%s: %d records, one per unit, equal to the unsharded run's in every field but seconds, bound_seconds and phase seconds; witness files equal byte for byte", merged, len(recs))
	return nil
}
