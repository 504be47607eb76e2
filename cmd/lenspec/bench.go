package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/bench"
	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/results"
	"github.com/lenspec/lenspec/train"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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
	var cf corpusFlags
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
				if out.record, err = results.Open(record, recordKey); err != nil {
					return err
				}
				defer out.record.Close()
			}
			if d.Input().Kind == model.Tokens {
				return benchTranslator(c, a, d, modelDir, cf, opt, peer, out)
			}
			if peer.Script != "" {
				return runPeer(c, a, d, modelDir, peer, out)
			}
			a.logf("benchmarking %s (GOMAXPROCS %d)...", modelDir, runtime.GOMAXPROCS(0))
			rep, err := bench.Run(c.Context(), d, opt)
			if err != nil {
				return err
			}
			return out.emit(rep, rep.Machine, rep.Records(modelDir), func(w io.Writer) { writeBench(w, rep, opt.PGDBatch) })
		},
	}
	f := c.Flags()
	f.StringVar(&modelDir, "model", "", "model directory")
	f.StringVar(&isa, "isa", ad.ISANative, "instruction set of the kernels of lenspec, OpenBLAS and the PyTorch peer: native or avx2")
	f.StringVar(&record, "record", "", "append one JSON line per operation to this JSON Lines file")
	benchFlags(f, &opt, &peer)
	cf.add(c)
	return c
}

// benchFlags adds the measurement's and the peer comparison's flags.
func benchFlags(f *pflag.FlagSet, opt *bench.Options, peer *bench.PeerOptions) {
	f.IntVar(&opt.Reps, "reps", opt.Reps, "repetitions per measurement (median reported)")
	f.IntVar(&opt.DecodeN, "decode", opt.DecodeN, "inputs per decode measurement")
	f.IntVar(&opt.TrainBatch, "batch", opt.TrainBatch, "training batch size")
	f.IntVar(&opt.GradSteps, "grad-steps", opt.GradSteps, "decoder steps in the input-gradient measurement")
	f.IntVar(&opt.DecodeSteps, "max-steps", opt.DecodeSteps, "decoding step cap")
	f.IntVar(&opt.GEMMSize, "gemm", opt.GEMMSize, "size of the square reference GEMM")
	f.IntVar(&opt.PGDBatch, "pgd-batch", opt.PGDBatch, "inputs per batched PGD iteration")
	f.StringVar(&peer.Script, "peer", "", "compare with the PyTorch peer script (bench/peer.py) instead")
	f.StringVar(&peer.Python, "python", peer.Python, "Python interpreter for --peer (with python3-torch)")
	f.IntVar(&peer.Rounds, "rounds", peer.Rounds, "the most interleaved rounds per operation for --peer")
	f.IntVar(&peer.MinRounds, "min-rounds", peer.MinRounds, "the fewest interleaved rounds per operation for --peer")
	f.Float64Var(&peer.Tolerance, "tolerance", peer.Tolerance,
		"--peer: stop an operation's rounds once its ratio's 90% interval is within this fraction of it (0: run --rounds)")
	f.DurationVar(&peer.Budget, "budget", peer.Budget, "--peer: no round past this much of an operation's rounds, once --min-rounds ran (0: no limit)")
	f.DurationVar(&peer.RoundTime, "round-time", peer.RoundTime, "--peer: each side's timed runs per round add up to about this")
}

// writeBench prints a benchmark report's table.
func writeBench(w io.Writer, rep *bench.Report, pgdBatch int) {
	fmt.Fprintf(w, "BLAS %s; reference %s: %.1f GFLOP/s\n", rep.Machine.BLAS, rep.GEMMShape, rep.GEMMGFLOPS)
	fmt.Fprintf(w, "%-40s %12s %12s %14s %8s\n", "operation", "time", "MFLOP", "GEMM bound", "ratio")
	for _, m := range rep.Measurements {
		fmt.Fprintf(w, "%-40s %10.3fms %12.1f %12.3fms %7.1f%%\n", m.Name, m.Seconds*1e3, m.FLOPs/1e6, m.GEMMSeconds*1e3, 100*m.Ratio)
	}
	b := rep.DecodeBoundEvalsPerSec
	fmt.Fprintf(w, "decode bound (GEMM-bound decoding): %.0f evaluations/s\n", b)
	fmt.Fprintf(w, "random search: %.0f evaluations/s (%.1f%% of the decode bound)\n", rep.RandomEvalsPerSec, 100*rep.RandomEvalsPerSec/b)
	fmt.Fprintf(w, "PGD: %.1f iterations/s per input, batch %d (%.1f%% of the decode bound; an iteration is a forward and a backward pass)\n",
		rep.PGDStepsPerSecPerImage, pgdBatch, 100*rep.PGDStepsPerSecPerImage/b)
}

// benchTranslator benchmarks a translator on its corpus: the dev split to
// translate, the training split's bucketed batches to train on.
func benchTranslator(c *cobra.Command, a *app, d model.Decoder[float32], modelDir string, cf corpusFlags, opt bench.Options, peer bench.PeerOptions, out benchOutput) error {
	cf, err := cf.forModel(c, modelDir, d)
	if err != nil {
		return err
	}
	sp, err := cf.load()
	if err != nil {
		return err
	}
	tok := d.Config().Tokenizer
	arch := d.Config().Arch.(*model.TranslatorConfig)
	src, tgt, _ := train.EncodePairs(tok, sp.Train, arch.MaxSourceLen, 50)
	pairs := train.NewTokenPairs(src, tgt)
	if peer.Script != "" {
		// The dev sources by length, so that both sides' batches pad alike;
		// one bucketed training batch of opt.TrainBatch pairs.
		devSrc, _, _ := train.EncodePairs(tok, sp.Dev, arch.MaxSourceLen, model.MaxStepCap)
		slices.SortStableFunc(devSrc, func(x, y []int) int { return len(x) - len(y) })
		b := pairs.Batches(opt.TrainBatch, rand.New(rand.NewPCG(opt.Seed, 5)))[0]
		_, ts, tl := pairs.Batch(b, nil)
		data := bench.PeerData{Sources: devSrc, TrainSources: ts, TrainLabels: tl}
		peer.Model = modelDir
		peer.Progress = func(s string) { a.logf("peer: %s", s) }
		rep, err := bench.Peer(c.Context(), d, data, peer)
		if err != nil {
			return err
		}
		return out.emitPeer(rep)
	}
	srcs := make([]string, len(sp.Dev))
	for i, p := range sp.Dev {
		srcs[i] = p.Src
	}
	topt := bench.DefaultTranslatorOptions()
	topt.Reps, topt.GEMMSize, topt.Seed, topt.ISA = opt.Reps, opt.GEMMSize, opt.Seed, opt.ISA
	a.logf("benchmarking %s (GOMAXPROCS %d)...", modelDir, runtime.GOMAXPROCS(0))
	rep, err := bench.RunTranslator(c.Context(), d, bench.TranslatorData{Sources: srcs, Train: pairs}, topt)
	if err != nil {
		return err
	}
	return out.emit(rep, rep.Machine, rep.Records(modelDir), func(w io.Writer) {
		fmt.Fprintf(w, "BLAS %s; reference %s: %.1f GFLOP/s\n", rep.Machine.BLAS, rep.GEMMShape, rep.GEMMGFLOPS)
		fmt.Fprintf(w, "%-40s %12s %12s %14s %8s\n", "operation", "time", "MFLOP", "GEMM bound", "ratio")
		for _, m := range rep.Measurements {
			fmt.Fprintf(w, "%-40s %10.3fms %12.1f %12.3fms %7.1f%%\n", m.Name, m.Seconds*1e3, m.FLOPs/1e6, m.GEMMSeconds*1e3, 100*m.Ratio)
		}
		for _, n := range []int{1, runtime.NumCPU()} {
			if r, ok := rep.TargetTokensPerSec[n]; ok {
				fmt.Fprintf(w, "%d thr: training %.0f target tokens/s, translation %.1f sentences/s\n", n, r, rep.SentencesPerSec[n])
			}
		}
	})
}

// runPeer runs the peer benchmark on Multi-MNIST: 1,000 test canvases to
// decode, a training batch of 64, a PGD batch of 50.
func runPeer(c *cobra.Command, a *app, d model.Decoder[float32], modelDir string, opt bench.PeerOptions, out benchOutput) error {
	in := d.Input()
	if err := experiment.CheckMultiMNIST(in); err != nil {
		return err
	}
	tr, te, err := a.loadMultiMNIST(c.Context(), defaultDataSeed)
	if err != nil {
		return err
	}
	test, err := multimnist.NewSource[float32](te, in.Min, in.Max, false)
	if err != nil {
		return err
	}
	trainSrc, err := multimnist.NewSource[float32](tr, in.Min, in.Max, false)
	if err != nil {
		return err
	}
	seq := func(lo, n int) []int {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = lo + i
		}
		return idx
	}
	var data bench.PeerData
	data.Decode, _, _ = test.Batch(seq(0, 1000), nil)
	data.Train, _, data.TrainLabels = trainSrc.Batch(seq(0, 64), nil)
	data.PGD, _, _ = test.Batch(seq(1000, 50), nil)
	opt.Model = modelDir
	opt.Progress = func(s string) { a.logf("peer: %s", s) }
	rep, err := bench.Peer(c.Context(), d, data, opt)
	if err != nil {
		return err
	}
	return out.emitPeer(rep)
}

// benchOutput prints a benchmark's report and records its operations.
type benchOutput struct {
	a      *app
	model  string
	record *results.File // --record: the JSON Lines file to append to, if set
}

// recordKey keys a record by its run's start and its operation.
var recordKey = results.KeyFields("time", "op")

// emit appends recs to the --record file, if any, then prints the report:
// with --json as one JSON value; otherwise what the run ran on, the table
// (table), one JSON line per operation (recs) and, for a loaded machine,
// bench.LoadedNote.
func (o benchOutput) emit(rep any, m bench.Machine, recs []bench.Record, table func(w io.Writer)) error {
	if err := o.save(recs); err != nil {
		return err
	}
	return o.a.emit(rep, func(w io.Writer) {
		fmt.Fprintf(w, "machine: %s\n%s\n", m.Describe(), m.LoadLine())
		table(w)
		writeRecords(w, recs)
		if m.Loaded {
			fmt.Fprintln(w, m.LoadedLine())
		}
	})
}

// emitPeer is emit for a peer benchmark (writePeer).
func (o benchOutput) emitPeer(rep *bench.PeerReport) error {
	if err := o.save(rep.Records(o.model)); err != nil {
		return err
	}
	return o.a.emit(rep, func(w io.Writer) { writePeer(w, rep, o.model) })
}

// save appends recs to the --record file, keyed by run and operation.
func (o benchOutput) save(recs []bench.Record) error {
	if o.record == nil {
		return nil
	}
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("record %s: %w", r.Op, err)
		}
		key, err := recordKey(b)
		if err == nil {
			err = o.record.Append(key, r)
		}
		if err != nil {
			return err
		}
	}
	o.a.logf("recorded %d operations in %s", len(recs), o.record.Path())
	return nil
}

// writeRecords writes one JSON line per record.
func writeRecords(w io.Writer, recs []bench.Record) {
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil { // a Record always encodes; say so if it ever does not
			fmt.Fprintf(w, "{\"error\": %q}\n", err.Error())
			continue
		}
		fmt.Fprintf(w, "%s\n", b)
	}
}

// writePeer writes a peer benchmark's report as text: what each side ran
// on and the load, the check, a table of the operations with their
// rounds, one JSON line per operation (its record, for the model in
// directory model), and last one line per operation, "ratio <operation>
// <x>" with x a plain decimal, for scripts to grep, and for a loaded
// machine bench.LoadedNote after them.
func writePeer(w io.Writer, rep *bench.PeerReport, model string) {
	m := rep.Machine
	fmt.Fprintf(w, "machine: %s\n%s\n%s\n", m.Describe(), rep.PyTorch.Describe(), m.LoadLine())
	fmt.Fprintf(w, "threads: lenspec 1 and %d (GOMAXPROCS), %d BLAS thread(s) per GEMM; PyTorch %d\n", m.Cores, m.BLASThreads, rep.PyTorch.Threads)
	fmt.Fprintf(w, "%d outputs decoded alike (%d differ, all at ties: %d)\n", rep.Compared-rep.Differ, rep.Differ, rep.DifferTies)
	if rep.Loss != 0 {
		fmt.Fprintf(w, "training loss at the same weights: lenspec %.6f, PyTorch %.6f\n", rep.Loss, rep.TorchLoss)
	}
	fmt.Fprintf(w, "set-up (PyTorch start, model load, the check) %.1f s; ratio = median over rounds of lenspec / PyTorch, %.0f %% interval\n",
		rep.SetupSeconds, 100*bench.CILevel)
	fmt.Fprintf(w, "%-15s %14s %14s %14s %8s %10s %15s %7s %5s %-10s %8s\n",
		"operation", "lenspec 1 thr", "lenspec all", "PyTorch 1 thr", "ratio", "ratio all", "interval", "rounds", "runs", "stop", "seconds")
	for _, o := range rep.Ops {
		ci := "-"
		if o.RatioHi > 0 {
			ci = fmt.Sprintf("%.3f-%.3f", o.RatioLo, o.RatioHi)
		}
		fmt.Fprintf(w, "%-15s %12.3fms %12.3fms %12.3fms %8.3f %10.3f %15s %7d %5d %-10s %8.1f\n",
			o.Name, 1e3*o.Lenspec1, 1e3*o.LenspecN, 1e3*o.Torch, o.Ratio, o.RatioN, ci, o.Rounds, o.Runs, o.Stop, o.Seconds)
	}
	writeRecords(w, rep.Records(model))
	for _, o := range rep.Ops {
		fmt.Fprintf(w, "ratio %s %.3f\n", o.Name, o.Ratio)
	}
	if m.Loaded {
		fmt.Fprintln(w, m.LoadedLine())
	}
}
