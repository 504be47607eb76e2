package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/bench"
	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nmt"
	"github.com/lenspec/lenspec/results"
	"github.com/spf13/pflag"
)

// BenchSettings are lenspec bench's settings: the model, the kernels'
// instruction set, the JSON Lines file the operations are appended to
// (Record, optional), the measurement's options, the PyTorch peer's (on
// when Peer.Script is set), and a translator's corpus.
type BenchSettings struct {
	Model, ISA, Record string
	Options            bench.Options
	Peer               bench.PeerOptions
	Corpus             nmt.CorpusChoice
}

// NewBenchSettings are lenspec bench's defaults.
func NewBenchSettings() *BenchSettings {
	return &BenchSettings{ISA: ad.ISANative, Options: bench.DefaultOptions(), Peer: bench.DefaultPeerOptions()}
}

// RegisterFlags adds the settings to fs as lenspec bench's flags, each
// starting at s's value.
func (s *BenchSettings) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Model, "model", "", "model directory")
	fs.StringVar(&s.ISA, "isa", s.ISA, "instruction set of the kernels of lenspec, OpenBLAS and the PyTorch peer: native or avx2")
	fs.StringVar(&s.Record, "record", "", "append one JSON line per operation to this JSON Lines file")
	s.Options.RegisterFlags(fs)
	s.Peer.RegisterFlags(fs)
	s.Corpus.RegisterFlags(fs)
}

// Validate checks the settings before any work, as SettingsErrors; the
// peer compares one thread with one, so blasThreads (OpenBLAS's threads
// per GEMM) must be 1 with it.
func (s *BenchSettings) Validate(blasThreads int) error {
	if s.Model == "" {
		return SettingsError{errors.New("--model is required")}
	}
	if err := s.Options.Validate(); err != nil {
		return SettingsError{err}
	}
	if s.ISA != ad.ISANative && s.ISA != ad.ISAAVX2 {
		return SettingsError{fmt.Errorf("--isa %q: want %s or %s", s.ISA, ad.ISANative, ad.ISAAVX2)}
	}
	if s.Record != "" {
		if err := fileio.CheckRegular(s.Record); err != nil {
			return SettingsError{fmt.Errorf("--record: %v", err)}
		}
	}
	if s.Peer.Script == "" {
		return nil
	}
	if err := s.Peer.Validate(); err != nil {
		return SettingsError{err}
	}
	if blasThreads != 1 {
		return SettingsError{fmt.Errorf("--peer compares one thread with one: --blas-threads %d must be 1", blasThreads)}
	}
	return nil
}

// BenchReport is a benchmark's report: its JSON the bench package's
// report's, its text the table (bench.WriteReport) or the peer's.
type BenchReport struct {
	report any
	text   func(io.Writer)
}

// MarshalJSON writes the bench package's report.
func (r BenchReport) MarshalJSON() ([]byte, error) { return json.Marshal(r.report) }

// WriteText writes the report as a table.
func (r BenchReport) WriteText(w io.Writer) { r.text(w) }

// Bench checks the settings (Validate), loads the model, switches the
// kernels to the ISA, and measures: a captioner on its own inputs, a
// translator on its corpus, or either against the PyTorch peer (a
// captioner's on Multi-MNIST from env's sources). The operations are
// appended to Record, opened (and locked) before the run.
func (s *BenchSettings) Bench(ctx context.Context, env Env, blasThreads int) (BenchReport, error) {
	if err := s.Validate(blasThreads); err != nil {
		return BenchReport{}, err
	}
	d, err := model.Load[float32](s.Model)
	if err != nil {
		return BenchReport{}, err
	}
	if err := ad.UseISA(s.ISA); err != nil {
		return BenchReport{}, fmt.Errorf("--isa %s: %w", s.ISA, err)
	}
	s.Options.ISA, s.Peer.ISA = s.ISA, s.ISA
	var record *results.File
	if s.Record != "" {
		// Opened first: a second writer is refused before the run, not
		// after it.
		if record, err = bench.OpenRecords(s.Record); err != nil {
			return BenchReport{}, err
		}
		defer record.Close()
	}
	var data bench.PeerData
	switch {
	case d.Input().Kind == model.Tokens:
		cf, err := s.Corpus.ForModel(s.Model, d.Config(), env.Changed("split-seed"))
		if err != nil {
			return BenchReport{}, SettingsError{err}
		}
		sp, err := cf.Load()
		if err != nil {
			return BenchReport{}, err
		}
		if s.Peer.Script == "" {
			return s.translator(ctx, env, d, bench.TranslatorBenchData(d, sp), record)
		}
		data = bench.TranslatorPeerData(d, sp, s.Options.TrainBatch, s.Options.Seed)
	case s.Peer.Script != "":
		if data, err = s.captionerPeerData(ctx, env, d); err != nil {
			return BenchReport{}, err
		}
	default:
		env.Logf("benchmarking %s (GOMAXPROCS %d)...", s.Model, runtime.GOMAXPROCS(0))
		rep, err := bench.Run(ctx, d, s.Options)
		if err != nil {
			return BenchReport{}, err
		}
		recs := rep.Records(s.Model)
		return BenchReport{rep, func(w io.Writer) {
				bench.WriteReport(w, rep.Machine, recs, func(w io.Writer) { rep.WriteTable(w, s.Options.PGDBatch) })
			}},
			saveBench(env, record, recs)
	}
	return s.peer(ctx, env, d, data, record)
}

// translator benchmarks a translator: training steps on the training
// split's bucketed batches, translation of the dev split.
func (s *BenchSettings) translator(ctx context.Context, env Env, d model.Decoder[float32], data bench.TranslatorData, record *results.File) (BenchReport, error) {
	topt := bench.DefaultTranslatorOptions()
	topt.Reps, topt.GEMMSize, topt.Seed, topt.ISA = s.Options.Reps, s.Options.GEMMSize, s.Options.Seed, s.Options.ISA
	env.Logf("benchmarking %s (GOMAXPROCS %d)...", s.Model, runtime.GOMAXPROCS(0))
	rep, err := bench.RunTranslator(ctx, d, data, topt)
	if err != nil {
		return BenchReport{}, err
	}
	recs := rep.Records(s.Model)
	return BenchReport{rep, func(w io.Writer) { bench.WriteReport(w, rep.Machine, recs, rep.WriteTable) }}, saveBench(env, record, recs)
}

// captionerPeerData is the peer benchmark's data for a captioner:
// Multi-MNIST (bench.CaptionerPeerData).
func (s *BenchSettings) captionerPeerData(ctx context.Context, env Env, d model.Decoder[float32]) (bench.PeerData, error) {
	in := d.Input()
	if err := CheckMultiMNIST(in); err != nil {
		return bench.PeerData{}, err
	}
	sources, err := env.Sources()
	if err != nil {
		return bench.PeerData{}, err
	}
	trainSrc, _, test, err := sources.CaptionerTraining(ctx, DefaultDataSeed, false, in)
	if err != nil {
		return bench.PeerData{}, err
	}
	return bench.CaptionerPeerData(test, trainSrc), nil
}

// peer runs the peer benchmark on data and records it.
func (s *BenchSettings) peer(ctx context.Context, env Env, d model.Decoder[float32], data bench.PeerData, record *results.File) (BenchReport, error) {
	opt := s.Peer
	opt.Model = s.Model
	opt.Progress = func(msg string) { env.Logf("peer: %s", msg) }
	rep, err := bench.Peer(ctx, d, data, opt)
	if err != nil {
		return BenchReport{}, err
	}
	return BenchReport{rep, func(w io.Writer) { rep.WriteText(w, s.Model) }}, saveBench(env, record, rep.Records(s.Model))
}

// saveBench appends recs to record, if any, keyed by run and operation.
func saveBench(env Env, record *results.File, recs []bench.Record) error {
	if record == nil {
		return nil
	}
	if err := bench.AppendRecords(record, recs); err != nil {
		return err
	}
	env.Logf("recorded %d operations in %s", len(recs), record.Path())
	return nil
}
