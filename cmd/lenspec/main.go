// Command lenspec finds inputs that make a sequence model's greedy decoding
// run long, and proves where it can that none exist.
//
// Exit status: 0 success, 1 failure (standard output that cannot be
// written included: a full disk, a closed pipe; and a run ending with
// units recorded as crashed, experiment.CrashedError, which names them
// and the command that retries them), 2 bad usage (flags,
// arguments, or settings out of range), 130 or 143 interrupted by SIGINT
// or SIGTERM (work finished before the signal is kept; a rerun resumes;
// translate says which lines it wrote).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/internal/oneline"
	"github.com/lenspec/lenspec/mip/external"
	"github.com/spf13/cobra"
)

// usageError marks errors caused by how the command was called: exit 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// reportedError marks a failure whose every problem was already reported
// on stderr, one line each, as it happened (translate's texts): exit 1
// without a line repeating them.
type reportedError struct{ err error }

func (r reportedError) Error() string { return r.err.Error() }
func (r reportedError) Unwrap() error { return r.err }

// signalError is the cause of a context cancelled by a signal.
type signalError struct{ sig os.Signal }

func (s signalError) Error() string { return fmt.Sprintf("interrupted by %v", s.sig) }

// interruptedError is a command's account of what it finished before a
// signal stopped it, printed instead of the "finished work is saved" of
// the commands that keep their results in files (translate's lines).
type interruptedError struct{ done string }

func (e interruptedError) Error() string { return e.done }

// outputError is a write to standard output that failed: the output is
// lost, so the command fails whatever it computed.
type outputError struct{ err error }

func (e outputError) Error() string { return "cannot write standard output: " + e.err.Error() }
func (e outputError) Unwrap() error { return e.err }

// checkedWriter is the commands' standard output. It keeps the first write
// error, so that one check when the command returns covers every write,
// however it was made (fmt, JSON encoders, cobra's help), and it refuses
// every write after that one, so that a command writing as it goes stops
// at its next write.
type checkedWriter struct {
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err != nil {
		c.err = outputError{err}
	}
	return n, c.err
}

// close closes the underlying writer if it is a file (the process's
// standard output): a file system may report a lost write only then.
func (c *checkedWriter) close() {
	f, ok := c.w.(*os.File)
	if !ok {
		return
	}
	if err := f.Close(); err != nil && c.err == nil && !errors.Is(err, os.ErrClosed) {
		c.err = outputError{err}
	}
}

// app holds what every command shares: global flags and output streams.
type app struct {
	jsonOut bool
	quiet   bool
	dataDir string
	blasThr int
	cpuProf string
	// stopProf ends the CPU profile once the command has returned.
	stopProf func() error
	stdin    io.Reader // nil: the process's
	// stdout is the command's output; run makes it a *checkedWriter.
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string

	// fashionDir holds Fashion-MNIST (default: Debian's package's).
	fashionDir string
}

// emit prints v as one JSON line with --json, or the text form otherwise,
// and returns the output's first write error, so that a command printing
// a line per result stops at the first one lost.
func (a *app) emit(v any, text func(w io.Writer)) error {
	if a.jsonOut {
		return json.NewEncoder(a.stdout).Encode(v)
	}
	text(a.stdout)
	return a.outErr()
}

// report prints a command's result r as emit does, or returns err if
// the command failed.
func (a *app) report(r experiment.Report, err error) error {
	if err != nil {
		return err
	}
	return a.emit(r, r.WriteText)
}

// outErr is the first error writing standard output, or nil.
func (a *app) outErr() error {
	if c, ok := a.stdout.(*checkedWriter); ok {
		return c.err
	}
	return nil
}

// logf writes a progress/log line to stderr unless quiet.
func (a *app) logf(format string, args ...any) {
	if !a.quiet {
		fmt.Fprintf(a.stderr, format+"\n", args...)
	}
}

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "lenspec",
		Short: "Does a sequence model always know when to stop? Attacks and verification of output length.",
		Long: `lenspec studies the output length of greedy decoding in sequence models
(image captioners, translators): it finds inputs that make outputs long, and
proves, where true, that no input in a set makes the output longer than K.

Models are directories with config.json and model.safetensors (see docs/models.md).

Exit status: 0 success; 1 failure, standard output that cannot be written
included (a full disk, a closed pipe: one line says so); 2 bad usage (flags,
arguments, settings out of range, a flag set without the one that turns it
on); 130/143 interrupted by SIGINT/SIGTERM (finished work is kept and
rerunning resumes; translate says instead which lines it wrote).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          unknownCommand,
	}
	root.PersistentFlags().BoolVar(&a.jsonOut, "json", false, "machine-readable JSON output on stdout")
	root.PersistentFlags().BoolVarP(&a.quiet, "quiet", "q", false, "no progress or log output on stderr")
	root.PersistentFlags().StringVar(&a.dataDir, "mnist-dir", "", "MNIST directory (default: $LENSPEC_DATA/mnist or the user cache dir)")
	root.PersistentFlags().StringVar(&a.fashionDir, "fashion-dir", "", "Fashion-MNIST directory (default: /usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist)")
	root.PersistentFlags().IntVar(&a.blasThr, "blas-threads", 1, "OpenBLAS threads per GEMM (lenspec parallelises across batches itself)")
	root.PersistentFlags().StringVar(&a.cpuProf, "cpuprofile", "", "write a CPU profile of the command to this file (go tool pprof reads it)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if a.blasThr < 1 || a.blasThr > 256 {
			return usagef("--blas-threads %d: want 1..256", a.blasThr)
		}
		ad.SetBLASThreads(a.blasThr)
		if a.cpuProf != "" {
			f, err := os.Create(a.cpuProf)
			if err != nil {
				return fmt.Errorf("--cpuprofile: %w", err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				f.Close()
				return fmt.Errorf("--cpuprofile %s: %w", a.cpuProf, err)
			}
			a.stopProf = func() error {
				pprof.StopCPUProfile()
				return f.Close()
			}
		}
		return nil
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.RunE = needsSubcommand
	root.AddCommand(newDataCmd(a), newTrainCmd(a), newDecodeCmd(a), newEvalCmd(a), newBenchCmd(a), newAttackCmd(a),
		newExperimentCmd(a), newVerifyCmd(a), newBoundCmd(a), newResultsCmd(a), newTranslateCmd(a), newGatesCmd(a))
	return root
}

// group returns a command that only holds subcommands: called alone, or
// with an unknown subcommand, it is a usage error.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: unknownCommand, RunE: needsSubcommand}
	c.AddCommand(subs...)
	return c
}

// needsSubcommand is the action of a command that only holds subcommands.
func needsSubcommand(c *cobra.Command, _ []string) error {
	var names []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	return usagef("%s needs a subcommand: %s (see %s --help)", c.CommandPath(), strings.Join(names, ", "), c.CommandPath())
}

// unknownCommand rejects positional arguments of a command that only holds
// subcommands: cobra reports an unknown subcommand this way.
func unknownCommand(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command %q for %q", args[0], c.CommandPath())
	}
	return nil
}

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	// Asked for, SIGPIPE is not fatal: a write to a closed pipe or a FIFO
	// whose reader is gone fails with EPIPE, reported as any lost output
	// is. The channel is never read; the signal only has to be wanted.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	go func() {
		s := <-sigs
		cancel(signalError{s})
		signal.Stop(sigs) // a second signal kills at once
	}()
	a := &app{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	// Once per process: the BLAS ran kernels below the CPU's (ad.BLASTuning).
	if _, note := ad.BLASTuning(); note != "" {
		fmt.Fprintf(a.stderr, "lenspec: %s\n", note)
	}
	code := run(ctx, a, os.Args[1:])
	// os.Exit runs no deferred cleanup: an external solve the verifier
	// stopped waiting for (one that overran its time limit, or was
	// interrupted by the signal) would leave its solver's temporary
	// directory behind.
	external.RemoveOwn()
	os.Exit(code)
}

// run executes one command line and returns the exit status.
func run(ctx context.Context, a *app, args []string) int {
	if a.getenv == nil {
		a.getenv = func(string) string { return "" }
	}
	out := &checkedWriter{w: a.stdout}
	a.stdout = out
	root := newRoot(a)
	root.SetArgs(args)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	if a.stdin != nil {
		root.SetIn(a.stdin)
	}
	err := root.ExecuteContext(ctx)
	if a.stopProf != nil {
		if perr := a.stopProf(); perr != nil && err == nil {
			err = fmt.Errorf("--cpuprofile %s: %w", a.cpuProf, perr)
		}
	}
	out.close()
	var sig signalError
	if errors.As(context.Cause(ctx), &sig) {
		var done interruptedError
		if errors.As(err, &done) {
			fmt.Fprintf(a.stderr, "lenspec: %v; %s\n", sig, done.done)
		} else {
			fmt.Fprintf(a.stderr, "lenspec: %v; finished work is saved, rerun to resume\n", sig)
		}
		if sig.sig == syscall.SIGTERM {
			return 128 + int(syscall.SIGTERM)
		}
		return 128 + int(syscall.SIGINT)
	}
	if out.err != nil {
		// Lost output is the failure, whatever else went wrong after it
		// (an encoder's error is the same write error).
		fmt.Fprintf(a.stderr, "lenspec: %s\n", oneline.Fold(out.err.Error()))
		return 1
	}
	if err == nil {
		return 0
	}
	if errors.As(err, new(reportedError)) {
		return 1
	}
	fmt.Fprintf(a.stderr, "lenspec: %s\n", oneline.Fold(err.Error()))
	var u usageError
	if errors.As(err, &u) || errors.As(err, new(experiment.SettingsError)) {
		return 2
	}
	return 1
}

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}
