// Command verifypeer is the verifier peer benchmark (make
// bench-verify-peer, docs/BENCHMARKS.md): for each model, the margins of
// the clean decoding path of the first test canvases, bounded over an L∞
// box by lenspec's verifier (verify.BoundPath) and by auto_LiRPA
// (bench/peer_lirpa.py) with IBP, CROWN and α-CROWN, one thread each;
// bench.VerifyPeer does the work. The "ratio" and "tighter" lines of every
// model come last. Exit status 0, 1 on a failure, 2 on bad flags, 130 or
// 143 when interrupted.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/bench"
	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/internal/oneline"
	"github.com/lenspec/lenspec/mnist"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/verify"
	"github.com/spf13/pflag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	interrupted := ctx.Err() != nil
	stop()
	var usage usageError
	switch {
	case err == nil:
		return
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "verifypeer: %s\n", oneline.Fold(err.Error()))
		os.Exit(2)
	case interrupted:
		fmt.Fprintln(os.Stderr, "verifypeer: interrupted")
		os.Exit(130)
	default:
		fmt.Fprintf(os.Stderr, "verifypeer: %s\n", oneline.Fold(err.Error()))
		os.Exit(1)
	}
}

type usageError struct{ error }

func run(ctx context.Context, args []string) error {
	opt := bench.DefaultVerifyPeerOptions()
	fs := pflag.NewFlagSet("verifypeer", pflag.ContinueOnError)
	models := fs.StringArray("model", []string{"models/mmnist-rnn", "models/mmnist-lstm"}, "model directory (repeatable)")
	images := fs.Int("images", 5, "the first this many test canvases of the standard Multi-MNIST split")
	fs.Float64Var(&opt.Eps, "eps", opt.Eps, "L∞ radius of the box around each canvas (clipped to the input range)")
	fs.IntVar(&opt.Iters, "iters", opt.Iters, "α-CROWN iterations, on both sides")
	fs.BoolVar(&opt.Float64, "peer-float64", false, "run auto_LiRPA in float64 (lenspec's precision) instead of float32")
	fs.StringVar(&opt.Python, "python", opt.Python, "Python interpreter with python3-torch")
	fs.StringVar(&opt.Script, "script", opt.Script, "the auto_LiRPA peer script")
	fs.StringVar(&opt.LiRPA, "lirpa", opt.LiRPA, "directory holding the auto_LiRPA package (put on PYTHONPATH)")
	if err := fs.Parse(args); errors.Is(err, pflag.ErrHelp) {
		return nil // the usage went to stderr
	} else if err != nil {
		return usageError{err}
	}
	switch {
	case fs.NArg() > 0:
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	case *images < 1:
		return usageError{fmt.Errorf("--images %d: want at least 1", *images)}
	case !(opt.Eps > 0):
		return usageError{fmt.Errorf("--eps %g: want a positive radius", opt.Eps)}
	case opt.Iters < 1:
		return usageError{fmt.Errorf("--iters %d: want at least 1", opt.Iters)}
	}
	opt.Progress = func(msg string) { fmt.Fprintf(os.Stderr, "verifypeer: %s\n", msg) }
	// One thread each: lenspec's GEMMs too (bench.VerifyPeer runs on one
	// Go thread).
	ad.SetBLASThreads(1)
	dir, err := mnist.DefaultDir()
	if err != nil {
		return err
	}
	var last strings.Builder
	for _, m := range *models {
		rep, err := benchModel(ctx, m, experiment.Sources{MNISTDir: dir}, *images, opt)
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		var text strings.Builder
		rep.WriteText(&text)
		// The ratio and tighter lines are held back until every model's
		// table is printed, as make bench-peer does.
		for _, l := range strings.SplitAfter(text.String(), "\n") {
			if strings.HasPrefix(l, "ratio ") || strings.HasPrefix(l, "tighter ") {
				last.WriteString(l)
			} else {
				fmt.Print(l)
			}
		}
		if l := rep.Machine.LoadedLine(); l != "" {
			last.WriteString(l + "\n")
		}
	}
	fmt.Print(last.String())
	return nil
}

// benchModel runs the benchmark on model dir over the first images test
// canvases.
func benchModel(ctx context.Context, dir string, src experiment.Sources, images int, opt bench.VerifyPeerOptions) (*bench.VerifyPeerReport, error) {
	d, err := model.Load[float64](dir)
	if err != nil {
		return nil, err
	}
	net, err := verify.Lower(d)
	if err != nil {
		return nil, err
	}
	data, err := src.ImageData(ctx, d.Input(), experiment.DefaultDataSeed, "test")
	if err != nil {
		return nil, err
	}
	idx := make([]int, images)
	xs := make([][]float64, images)
	for i := range idx {
		idx[i] = i
		xs[i], _, _ = data.Source.Batch([]int{i}, nil)
	}
	inputs, err := bench.VerifyPeerInputs(ctx, d, idx, xs, opt.Eps)
	if err != nil {
		return nil, err
	}
	return bench.VerifyPeer(ctx, dir, net, inputs, opt)
}
