package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
)

// WriteReport writes a benchmark run as lenspec bench prints it: what it
// ran on and the load, the run's table (table), one JSON line per
// operation (recs) and, for a loaded machine, LoadedNote.
func WriteReport(w io.Writer, m Machine, recs []Record, table func(w io.Writer)) {
	fmt.Fprintf(w, "machine: %s\n%s\n%s", m.Describe(), m.LoadLine(), m.blasLine())
	table(w)
	WriteRecords(w, recs)
	if m.Loaded {
		fmt.Fprintln(w, m.LoadedLine())
	}
}

// blasLine is a line saying what lenspec did about its BLAS's kernels at
// start (Machine.BLASNote), "" where it kept them without a word.
func (m Machine) blasLine() string {
	if m.BLASNote == "" {
		return ""
	}
	return "BLAS: " + m.BLASNote + "\n"
}

// WriteTable writes rep's measurements against the GEMM bound and the
// attacks' rates (PGD's with batches of pgdBatch inputs).
func (rep *Report) WriteTable(w io.Writer, pgdBatch int) {
	rep.writeMeasurements(w)
	b := rep.DecodeBoundEvalsPerSec
	fmt.Fprintf(w, "decode bound (GEMM-bound decoding): %.0f evaluations/s\n", b)
	fmt.Fprintf(w, "random search: %.0f evaluations/s (%.1f%% of the decode bound)\n", rep.RandomEvalsPerSec, 100*rep.RandomEvalsPerSec/b)
	fmt.Fprintf(w, "PGD: %.1f iterations/s per input, batch %d (%.1f%% of the decode bound; an iteration is a forward and a backward pass)\n",
		rep.PGDStepsPerSecPerImage, pgdBatch, 100*rep.PGDStepsPerSecPerImage/b)
}

// WriteTable writes rep's measurements against the GEMM bound and the
// throughputs on one core and on all.
func (rep *TranslatorReport) WriteTable(w io.Writer) {
	rep.writeMeasurements(w)
	for _, n := range []int{1, runtime.NumCPU()} {
		if r, ok := rep.TargetTokensPerSec[n]; ok {
			fmt.Fprintf(w, "%d thr: training %.0f target tokens/s, translation %.1f sentences/s\n", n, r, rep.SentencesPerSec[n])
		}
	}
}

// writeMeasurements writes the BLAS, the reference GEMM's speed and a
// table of the measurements.
func (rep *Report) writeMeasurements(w io.Writer) {
	fmt.Fprintf(w, "BLAS %s; reference %s: %.1f GFLOP/s", rep.Machine.BLAS, rep.GEMMShape, rep.GEMMGFLOPS)
	if rep.PeakGFLOPS > 0 {
		fmt.Fprintf(w, ", %.0f%% of one core's FMA peak (%s: %.1f GFLOP/s)", 100*rep.GEMMGFLOPS/rep.PeakGFLOPS, rep.Machine.Kernels, rep.PeakGFLOPS)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-40s %12s %12s %14s %8s\n", "operation", "time", "MFLOP", "GEMM bound", "ratio")
	for _, m := range rep.Measurements {
		fmt.Fprintf(w, "%-40s %10.3fms %12.1f %12.3fms %7.1f%%\n", m.Name, m.Seconds*1e3, m.FLOPs/1e6, m.GEMMSeconds*1e3, 100*m.Ratio)
	}
}

// WriteRecords writes one JSON line per record.
func WriteRecords(w io.Writer, recs []Record) {
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil { // a Record always encodes; say so if it ever does not
			fmt.Fprintf(w, "{\"error\": %q}\n", err.Error())
			continue
		}
		fmt.Fprintf(w, "%s\n", b)
	}
}

// WriteText writes a peer benchmark's report as text: what each side ran
// on and the load, the check, a table of the operations with their
// rounds, one JSON line per operation (its record, for the model in
// directory model), and last one line per operation, "ratio <operation>
// <x>" with x a plain decimal, for scripts to grep, and for a loaded
// machine LoadedNote after them.
func (rep *PeerReport) WriteText(w io.Writer, model string) {
	m := rep.Machine
	fmt.Fprintf(w, "machine: %s\n%s\n%s\n%s", m.Describe(), rep.PyTorch.Describe(), m.LoadLine(), m.blasLine())
	fmt.Fprintf(w, "threads: lenspec 1 and %d (GOMAXPROCS), %d BLAS thread(s) per GEMM; PyTorch %d\n", m.Cores, m.BLASThreads, rep.PyTorch.Threads)
	fmt.Fprintf(w, "%d outputs decoded alike (%d differ, all at ties: %d)\n", rep.Compared-rep.Differ, rep.Differ, rep.DifferTies)
	if rep.Loss != 0 {
		fmt.Fprintf(w, "training loss at the same weights: lenspec %.6f, PyTorch %.6f\n", rep.Loss, rep.TorchLoss)
	}
	fmt.Fprintf(w, "set-up (PyTorch start, model load, the check) %.1f s; ratio = median over rounds of lenspec / PyTorch, %.0f %% interval\n",
		rep.SetupSeconds, 100*CILevel)
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
	WriteRecords(w, rep.Records(model))
	for _, o := range rep.Ops {
		fmt.Fprintf(w, "ratio %s %.3f\n", o.Name, o.Ratio)
	}
	if m.Loaded {
		fmt.Fprintln(w, m.LoadedLine())
	}
}
