package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/lenspec/lenspec/bench"
	"github.com/lenspec/lenspec/model"
	"github.com/spf13/cobra"
)

func newBenchCmd(a *app) *cobra.Command {
	var modelDir string
	opt := bench.DefaultOptions()
	c := &cobra.Command{
		Use:   "bench",
		Short: "Time training, decoding and input gradients against the GEMM bound for the same FLOPs",
		Long: `Measure one training step, batched greedy decoding and one input's
gradient (encoder + decoder steps), each as a median time and as the fraction
of the time one large float32 GEMM needs for the same number of floating-point
operations, measured in the same run. Ratios are comparable across machines
and across noisy runs; absolute times are not.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if modelDir == "" {
				return usagef("--model is required")
			}
			if err := opt.Validate(); err != nil {
				return usage(err)
			}
			d, err := model.Load[float32](modelDir)
			if err != nil {
				return err
			}
			a.logf("benchmarking %s (GOMAXPROCS %d)...", modelDir, runtime.GOMAXPROCS(0))
			rep, err := bench.Run(c.Context(), d, opt)
			if err != nil {
				return err
			}
			return a.emit(rep, func(w io.Writer) {
				fmt.Fprintf(w, "BLAS %s; reference %s: %.1f GFLOP/s\n", rep.BLAS, rep.GEMMShape, rep.GEMMGFLOPS)
				fmt.Fprintf(w, "%-40s %12s %12s %14s %8s\n", "operation", "time", "MFLOP", "GEMM bound", "ratio")
				for _, m := range rep.Measurements {
					fmt.Fprintf(w, "%-40s %10.3fms %12.1f %12.3fms %7.1f%%\n", m.Name, m.Seconds*1e3, m.FLOPs/1e6, m.GEMMSeconds*1e3, 100*m.Ratio)
				}
				b := rep.DecodeBoundEvalsPerSec
				fmt.Fprintf(w, "decode bound (GEMM-bound decoding): %.0f evaluations/s\n", b)
				fmt.Fprintf(w, "random search: %.0f evaluations/s (%.1f%% of the decode bound)\n", rep.RandomEvalsPerSec, 100*rep.RandomEvalsPerSec/b)
				fmt.Fprintf(w, "PGD: %.1f iterations/s per input, batch %d (%.1f%% of the decode bound; an iteration is a forward and a backward pass)\n",
					rep.PGDStepsPerSecPerImage, opt.PGDBatch, 100*rep.PGDStepsPerSecPerImage/b)
			})
		},
	}
	f := c.Flags()
	f.StringVar(&modelDir, "model", "", "model directory")
	f.IntVar(&opt.Reps, "reps", opt.Reps, "repetitions per measurement (median reported)")
	f.IntVar(&opt.DecodeN, "decode", opt.DecodeN, "inputs per decode measurement")
	f.IntVar(&opt.TrainBatch, "batch", opt.TrainBatch, "training batch size")
	f.IntVar(&opt.GradSteps, "grad-steps", opt.GradSteps, "decoder steps in the input-gradient measurement")
	f.IntVar(&opt.DecodeSteps, "max-steps", opt.DecodeSteps, "decoding step cap")
	f.IntVar(&opt.GEMMSize, "gemm", opt.GEMMSize, "size of the square reference GEMM")
	f.IntVar(&opt.PGDBatch, "pgd-batch", opt.PGDBatch, "inputs per batched PGD iteration")
	return c
}
