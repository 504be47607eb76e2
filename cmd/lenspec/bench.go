package main

import (
	"github.com/lenspec/lenspec/bench"
	"github.com/lenspec/lenspec/experiment"
	"github.com/spf13/cobra"
)

// benchHelp is the command's long help.
const benchHelp = `Measure one training step, batched greedy decoding and one input's
gradient (encoder + decoder steps), each as a median time and as the fraction
of the time one large float32 GEMM needs for the same number of floating-point
operations, measured in the same run. Ratios are comparable across machines
and across noisy runs; absolute times are not.

For a translator: training steps on bucketed batches of its corpus
(target tokens/s) and translation of the dev split (sentences/s), each also
against the GEMM bound.

With --peer bench/peer.py (a captioner) or bench/peer_nmt.py (a translator)
it instead times the same operations on the same inputs in PyTorch (Debian's
python3-torch) and in lenspec, interleaved round by round, one thread each
(and lenspec on all cores), checks both do the same work (the same tokens;
for the translator also the same training loss), and ends with one line per
operation: "ratio <operation> <x>", x the median over the rounds of
lenspec's time over PyTorch's in the round (< 1: lenspec is faster). Each
side warms up once per operation, and once per round of several runs
(--round-time sets the runs); an operation runs --min-rounds to --rounds
rounds, stopping once the ratio's 90% interval is within --tolerance of it
or before a round past --budget.

Every run says what it measured: the CPU, the instruction set of lenspec's
kernels, the OpenBLAS core type of each side (and, where OpenBLAS chose
kernels below the CPU's widest FMA, what lenspec ran instead; the PyTorch
peer's OpenBLAS then runs the same), the reference GEMM's share of one
core's FMA peak, the thread counts, and the load average before and after; a run whose 1-minute load average exceeded
one per core at either end is labelled "` + bench.LoadedNote + `".
After the table comes one JSON line per operation with all of it
(--record FILE also appends them to FILE, a JSON Lines file).

--isa avx2 runs AVX2 kernels on a CPU with AVX-512: lenspec's own, and
OpenBLAS's for the AVX2 CPUs of the same vendor (Zen on AMD, Haswell
otherwise), in lenspec and in the PyTorch peer, whose ATen and oneDNN
kernels are capped at AVX2 too (ATEN_CPU_CAPABILITY, DNNL_MAX_CPU_ISA):
a measurement of an AVX2 machine on an AVX-512 one.`

func newBenchCmd(a *app) *cobra.Command {
	s := experiment.NewBenchSettings()
	c := &cobra.Command{
		Use:   "bench",
		Short: "Time training, decoding and input gradients against the GEMM bound for the same FLOPs",
		Long:  benchHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return a.report(s.Bench(c.Context(), a.env(c), a.blasThr))
		},
	}
	s.RegisterFlags(c.Flags())
	return c
}
