package bench

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/results"
)

// Record is one operation of a benchmark run as one line of JSON (lenspec
// bench prints one per operation after its table, and --record appends
// them to a JSON Lines file): the operation's figures beside what they
// were measured on. The run's start (Machine.Start, "time") and Op are
// its key.
type Record struct {
	Machine
	Model string `json:"model"`
	Op    string `json:"op"`
	// Exactly one of these holds the figures: Measurement an operation
	// against the GEMM bound (lenspec bench), Throughput an attack's rate
	// (lenspec bench), Peer an operation timed beside PyTorch (--peer).
	Measurement *Measurement `json:"measurement,omitempty"`
	Throughput  *Throughput  `json:"throughput,omitempty"`
	Peer        *PeerOp      `json:"peer,omitempty"`
	// PyTorch is the peer's side (--peer only); LenspecThreads the cores
	// lenspec's figures were measured on (a peer operation: one, then all).
	PyTorch        *PyTorch `json:"pytorch,omitempty"`
	LenspecThreads []int    `json:"lenspec_threads"`
	// GEMMGFLOPS is the reference GEMM's speed in the run (lenspec bench).
	GEMMGFLOPS float64 `json:"gemm_gflops,omitempty"`
	// PeakGFLOPS is one core's FMA peak measured in the run (Report's).
	PeakGFLOPS float64 `json:"peak_gflops,omitempty"`
}

// Throughput is an attack's rate in lenspec bench: PerSecond units a second,
// ShareOfBound its fraction of the decode bound.
type Throughput struct {
	PerSecond    float64 `json:"per_second"`
	Unit         string  `json:"unit"`
	ShareOfBound float64 `json:"share_of_decode_bound"`
}

// Records are rep's operations, one record each, for the model in the
// directory named model.
func (rep *Report) Records(model string) []Record {
	var out []Record
	for _, m := range rep.Measurements {
		out = append(out, Record{Machine: rep.Machine, Model: model, Op: m.Name, Measurement: &m,
			LenspecThreads: []int{m.Threads}, GEMMGFLOPS: rep.GEMMGFLOPS, PeakGFLOPS: rep.PeakGFLOPS})
	}
	if b := rep.DecodeBoundEvalsPerSec; b > 0 {
		for _, t := range []struct {
			op, unit string
			rate     float64
		}{{"random search", "model evaluations", rep.RandomEvalsPerSec}, {"pgd", "iterations per input", rep.PGDStepsPerSecPerImage}} {
			out = append(out, Record{Machine: rep.Machine, Model: model, Op: t.op,
				Throughput:     &Throughput{PerSecond: t.rate, Unit: t.unit, ShareOfBound: t.rate / b},
				LenspecThreads: []int{runtime.GOMAXPROCS(0)}, GEMMGFLOPS: rep.GEMMGFLOPS, PeakGFLOPS: rep.PeakGFLOPS})
		}
	}
	return out
}

// Records are rep's operations, one record each, for the model in the
// directory named model.
func (rep *PeerReport) Records(model string) []Record {
	var out []Record
	for _, o := range rep.Ops {
		out = append(out, Record{Machine: rep.Machine, Model: model, Op: o.Name, Peer: &o, PyTorch: &rep.PyTorch,
			LenspecThreads: []int{1, rep.Machine.Cores}})
	}
	return out
}

// isaOr is isa, or ad.ISANative for "".
func isaOr(isa string) string {
	if isa == "" {
		return ad.ISANative
	}
	return isa
}

// OpenRecords opens (creating it, and locking it: a second writer is
// refused) the JSON Lines file at path that benchmark records are
// appended to, keyed by their run's start and operation.
func OpenRecords(path string) (*results.File, error) {
	return results.Open(path, recordKey)
}

// recordKey keys a record by its run's start and its operation.
var recordKey = results.KeyFields("time", "op")

// AppendRecords appends recs to f (OpenRecords), each keyed by its run's
// start and its operation.
func AppendRecords(f *results.File, recs []Record) error {
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("record %s: %w", r.Op, err)
		}
		key, err := recordKey(b)
		if err == nil {
			err = f.Append(key, r)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
