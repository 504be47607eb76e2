// Command lenspec finds inputs that make a sequence model's greedy decoding
// run long, and proves where it can that none exist.
//
// Exit status: 0 success, 1 failure, 2 bad usage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/lenspec/lenspec/ad"
	"github.com/spf13/cobra"
)

// usageError marks errors caused by how the command was called.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// app holds what every command shares: global flags and output streams.
type app struct {
	jsonOut bool
	quiet   bool
	dataDir string
	blasThr int
	stdout  io.Writer
	stderr  io.Writer
}

// emit prints v as one JSON line with --json, or the text form otherwise.
func (a *app) emit(v any, text func(w io.Writer)) error {
	if a.jsonOut {
		enc := json.NewEncoder(a.stdout)
		return enc.Encode(v)
	}
	text(a.stdout)
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

Models are directories with config.json and model.safetensors (see docs/models.md).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().BoolVar(&a.jsonOut, "json", false, "machine-readable JSON output on stdout")
	root.PersistentFlags().BoolVarP(&a.quiet, "quiet", "q", false, "no progress or log output on stderr")
	root.PersistentFlags().StringVar(&a.dataDir, "mnist-dir", "", "MNIST directory (default $LENSPEC_DATA/mnist or the user cache dir)")
	root.PersistentFlags().IntVar(&a.blasThr, "blas-threads", 1, "OpenBLAS threads per GEMM (lenspec parallelises across batches itself)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if a.blasThr < 1 {
			return usagef("--blas-threads must be at least 1")
		}
		ad.SetBLASThreads(a.blasThr)
		return nil
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newDataCmd(a), newTrainCmd(a), newDecodeCmd(a), newEvalCmd(a), newBenchCmd(a), newAttackCmd(a), newExperimentCmd(a), newVerifyCmd(a))
	return root
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	a := &app{stdout: os.Stdout, stderr: os.Stderr}
	os.Exit(run(ctx, a, os.Args[1:]))
}

// run executes one command line and returns the exit status.
func run(ctx context.Context, a *app, args []string) int {
	root := newRoot(a)
	root.SetArgs(args)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(a.stderr, "lenspec: %s\n", oneLine(err.Error()))
	if isUsage(err) {
		return 2
	}
	return 1
}

func isUsage(err error) bool {
	var u usageError
	if errors.As(err, &u) {
		return true
	}
	// Cobra's own argument and command errors are plain errors.
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "invalid argument", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called on plain structs
	}
	return b
}

// writeFileAtomic writes data to path through a temporary file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
