package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/bench"
	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nmt"
	"github.com/lenspec/lenspec/results"
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
kernels, the OpenBLAS core type of each side, the thread counts, and the
load average before and after; a run whose 1-minute load average exceeded
one per core at either end is labelled "` + bench.LoadedNote + `".
After the table comes one JSON line per operation with all of it
(--record FILE also appends them to FILE, a JSON Lines file).

--isa avx2 runs AVX2 kernels on a CPU with AVX-512: lenspec's own, and
OpenBLAS's for the AVX2 CPUs of the same vendor (Zen on AMD, Haswell
otherwise), in lenspec and in the PyTorch peer, whose ATen and oneDNN
kernels are capped at AVX2 too (ATEN_CPU_CAPABILITY, DNNL_MAX_CPU_ISA):
a measurement of an AVX2 machine on an AVX-512 one.`

func newBenchCmd(a *app) *cobra.Command {
	var modelDir, isa, record string
	opt := bench.DefaultOptions()
	peer := bench.DefaultPeerOptions()
	var cf nmt.CorpusChoice
	c := &cobra.Command{
		Use:   "bench",
		Short: "Time training, decoding and input gradients against the GEMM bound for the same FLOPs",
		Long:  benchHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if modelDir == "" {
				return usagef("--model is required")
			}
			if err := opt.Validate(); err != nil {
				return usage(err)
			}
			if isa != ad.ISANative && isa != ad.ISAAVX2 {
				return usagef("--isa %q: want %s or %s", isa, ad.ISANative, ad.ISAAVX2)
			}
			if record != "" {
				if err := fileio.CheckRegular(record); err != nil {
					return usagef("--record: %v", err)
				}
			}
			if peer.Script != "" {
				if err := peer.Validate(); err != nil {
					return usage(err)
				}
				// PyTorch runs one BLAS thread: so must lenspec's one-thread side.
				if a.blasThr != 1 {
					return usagef("--peer compares one thread with one: --blas-threads %d must be 1", a.blasThr)
				}
			}
			d, err := model.Load[float32](modelDir)
			if err != nil {
				return err
			}
			if err := ad.UseISA(isa); err != nil {
				return fmt.Errorf("--isa %s: %w", isa, err)
			}
			opt.ISA, peer.ISA = isa, isa
			out := benchOutput{a: a, model: modelDir}
			if record != "" {
				// Opened (and locked) first: a second writer is refused
				// before the run, not after it.
				if out.record, err = bench.OpenRecords(record); err != nil {
					return err
				}
				defer out.record.Close()
			}
			if d.Input().Kind == model.Tokens {
				return benchTranslator(c, a, d, modelDir, cf, opt, peer, out)
			}
			if peer.Script != "" {
				return runPeer(c, a, d, peer, out)
			}
			a.logf("benchmarking %s (GOMAXPROCS %d)...", modelDir, runtime.GOMAXPROCS(0))
			rep, err := bench.Run(c.Context(), d, opt)
			if err != nil {
				return err
			}
			return out.emit(rep, rep.Machine, rep.Records(modelDir), func(w io.Writer) { rep.WriteTable(w, opt.PGDBatch) })
		},
	}
	f := c.Flags()
	f.StringVar(&modelDir, "model", "", "model directory")
	f.StringVar(&isa, "isa", ad.ISANative, "instruction set of the kernels of lenspec, OpenBLAS and the PyTorch peer: native or avx2")
	f.StringVar(&record, "record", "", "append one JSON line per operation to this JSON Lines file")
	opt.RegisterFlags(f)
	peer.RegisterFlags(f)
	cf.RegisterFlags(c.Flags())
	return c
}

// benchTranslator benchmarks a translator on its corpus: the dev split to
// translate, the training split's bucketed batches to train on.
func benchTranslator(c *cobra.Command, a *app, d model.Decoder[float32], modelDir string, cf nmt.CorpusChoice, opt bench.Options, peer bench.PeerOptions, out benchOutput) error {
	cf, err := cf.ForModel(modelDir, d.Config(), c.Flags().Changed("split-seed"))
	if err != nil {
		return usage(err)
	}
	sp, err := cf.Load()
	if err != nil {
		return err
	}
	if peer.Script != "" {
		return out.peer(c, d, bench.TranslatorPeerData(d, sp, opt.TrainBatch, opt.Seed), peer)
	}
	topt := bench.DefaultTranslatorOptions()
	topt.Reps, topt.GEMMSize, topt.Seed, topt.ISA = opt.Reps, opt.GEMMSize, opt.Seed, opt.ISA
	a.logf("benchmarking %s (GOMAXPROCS %d)...", modelDir, runtime.GOMAXPROCS(0))
	rep, err := bench.RunTranslator(c.Context(), d, bench.TranslatorBenchData(d, sp), topt)
	if err != nil {
		return err
	}
	return out.emit(rep, rep.Machine, rep.Records(modelDir), rep.WriteTable)
}

// runPeer runs the peer benchmark on Multi-MNIST (bench.CaptionerPeerData).
func runPeer(c *cobra.Command, a *app, d model.Decoder[float32], opt bench.PeerOptions, out benchOutput) error {
	in := d.Input()
	if err := experiment.CheckMultiMNIST(in); err != nil {
		return err
	}
	sources, err := a.sources()
	if err != nil {
		return err
	}
	trainSrc, _, test, err := sources.CaptionerTraining(c.Context(), defaultDataSeed, false, in)
	if err != nil {
		return err
	}
	return out.peer(c, d, bench.CaptionerPeerData(test, trainSrc), opt)
}

// benchOutput prints a benchmark's report and records its operations.
type benchOutput struct {
	a      *app
	model  string
	record *results.File // --record: the JSON Lines file to append to, if set
}

// emit appends recs to the --record file, if any, then prints the report:
// with --json as one JSON value, otherwise as bench.WriteReport writes it.
func (o benchOutput) emit(rep any, m bench.Machine, recs []bench.Record, table func(w io.Writer)) error {
	if err := o.save(recs); err != nil {
		return err
	}
	return o.a.emit(rep, func(w io.Writer) { bench.WriteReport(w, m, recs, table) })
}

// peer runs the peer benchmark on data, then records and prints it.
func (o benchOutput) peer(c *cobra.Command, d model.Decoder[float32], data bench.PeerData, opt bench.PeerOptions) error {
	opt.Model = o.model
	opt.Progress = func(s string) { o.a.logf("peer: %s", s) }
	rep, err := bench.Peer(c.Context(), d, data, opt)
	if err != nil {
		return err
	}
	if err := o.save(rep.Records(o.model)); err != nil {
		return err
	}
	return o.a.emit(rep, func(w io.Writer) { rep.WriteText(w, o.model) })
}

// save appends recs to the --record file, keyed by run and operation.
func (o benchOutput) save(recs []bench.Record) error {
	if o.record == nil {
		return nil
	}
	if err := bench.AppendRecords(o.record, recs); err != nil {
		return err
	}
	o.a.logf("recorded %d operations in %s", len(recs), o.record.Path())
	return nil
}
