// Package bench measures lenspec's hot paths against the machine's GEMM
// throughput: each measurement is a time and the ratio of the time OpenBLAS
// (or the compiled-in BLAS) needs for the same floating-point operations in
// one large float32 GEMM, measured in the same run. Ratios survive the noise
// of a shared machine that absolute times do not.
package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
	"github.com/lenspec/lenspec/train"
)

// Measurement is one timed operation.
type Measurement struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"` // per operation (median of the repetitions)
	FLOPs   float64 `json:"flops"`   // per operation, counted from the architecture
	// GEMMSeconds is the time the reference GEMM needs for FLOPs (at its
	// median speed); Ratio is the fraction of the GEMM bound achieved: the
	// median, over the repetitions, of the GEMM time for FLOPs measured
	// right before the operation over the operation's time, so that both
	// halves of each ratio ran under the same load of a shared machine.
	GEMMSeconds float64 `json:"gemm_seconds"`
	Ratio       float64 `json:"ratio_to_gemm_bound"`
	// Threads is the cores the operation ran on (GOMAXPROCS; BLAS threads
	// per GEMM are the Machine's).
	Threads int `json:"threads"`
}

// Report is a full benchmark run.
type Report struct {
	Machine    Machine `json:"machine"`
	GEMMGFLOPS float64 `json:"gemm_gflops"` // reference GEMM throughput
	GEMMShape  string  `json:"gemm_shape"`
	// PeakGFLOPS is one core's FMA peak at the kernels' widest FMA
	// (ad.PeakFLOPS), which the reference GEMM approaches (0: not
	// measured, in the pure-Go build).
	PeakGFLOPS   float64       `json:"peak_gflops,omitempty"`
	Measurements []Measurement `json:"measurements"`
	// Attack throughput: random-search model evaluations per second, PGD
	// iterations per second per image, and the decode bound (evaluations
	// per second if decoding ran at the GEMM bound) they compare with.
	RandomEvalsPerSec      float64 `json:"random_evals_per_sec"`
	PGDStepsPerSecPerImage float64 `json:"pgd_steps_per_sec_per_image"`
	DecodeBoundEvalsPerSec float64 `json:"decode_bound_evals_per_sec"`
}

// Options sizes the run.
type Options struct {
	Reps        int // repetitions per measurement (median taken)
	DecodeN     int // images per decode measurement
	TrainBatch  int
	GradSteps   int // decoder steps in the input-gradient measurement
	GEMMSize    int // square reference GEMM size
	Seed        uint64
	DecodeSteps int // step cap for decoding (exactly this many steps are run)
	PGDBatch    int // images per batched PGD iteration
	// ISA is the instruction set the caller set with ad.UseISA ("":
	// ad.ISANative), for the report.
	ISA string
}

// DefaultOptions are the settings docs/BENCHMARKS.md reports.
func DefaultOptions() Options {
	return Options{Reps: 7, DecodeN: 1000, TrainBatch: 64, GradSteps: 10, GEMMSize: 512, Seed: 1, DecodeSteps: 10, PGDBatch: 50}
}

// Validate checks the sizes before any work.
func (o Options) Validate() error {
	check := func(name string, v, hi int) error {
		if v < 1 || v > hi {
			return fmt.Errorf("%s %d must be in 1..%d", name, v, hi)
		}
		return nil
	}
	return errors.Join(check("repetitions", o.Reps, 1000), check("decode inputs", o.DecodeN, 1<<20), check("training batch", o.TrainBatch, 1<<16),
		check("gradient steps", o.GradSteps, model.MaxStepCap), check("GEMM size", o.GEMMSize, 8192), check("decode steps", o.DecodeSteps, model.MaxStepCap),
		check("PGD batch", o.PGDBatch, 1<<16))
}

func median(f func(), reps int) float64 {
	f() // warm up
	ts := make([]float64, reps)
	for i := range ts {
		ts[i] = seconds(f)
	}
	return medianOf(ts)
}

func seconds(f func()) float64 {
	s := time.Now()
	f()
	return time.Since(s).Seconds()
}

// reference is the GEMM the operations are compared with.
type reference struct {
	g     int // square size
	a, b  []float32
	c     []float32
	peaks []float64 // FLOP/s of every run
}

func (r *reference) run() float64 {
	t := seconds(func() { ad.Gemm(false, false, r.g, r.g, r.g, 1, r.a, r.b, 0, r.c) })
	p := 2 * float64(r.g) * float64(r.g) * float64(r.g) / t
	r.peaks = append(r.peaks, p)
	return p
}

// newReference prepares the g×g×g reference GEMM on random matrices and
// warms it up.
func newReference(g int, seed uint64) *reference {
	rng := rand.New(rand.NewPCG(seed, 4))
	ref := &reference{g: g, a: make([]float32, g*g), b: make([]float32, g*g), c: make([]float32, g*g)}
	for i := range ref.a {
		ref.a[i], ref.b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	ref.run()
	ref.peaks = nil
	return ref
}

// pending is a measured operation waiting for its ratio.
type pending struct {
	name      string
	flops     float64
	ts, peaks []float64
	threads   int
}

// peakReps are the runs of ad.PeakFLOPS, of a few milliseconds each.
const peakReps = 7

// finish measures the FMA peak, sets the reference's median speed and
// every measurement's ratio: each operation's run paired with the GEMM run
// just before it.
func (rep *Report) finish(ref *reference, done []pending) {
	peak := medianOf(ref.peaks)
	rep.GEMMGFLOPS = peak / 1e9
	rep.PeakGFLOPS = ad.PeakFLOPS(peakReps) / 1e9
	for _, p := range done {
		ratios := make([]float64, len(p.ts))
		for i, t := range p.ts {
			ratios[i] = p.flops / p.peaks[i] / t
		}
		rep.Measurements = append(rep.Measurements, Measurement{p.name, medianOf(p.ts), p.flops, p.flops / peak, medianOf(ratios), p.threads})
	}
}

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 5)) }

// paired runs f reps times (after a warm-up), each right after the
// reference GEMM, and returns f's times and the GEMM speeds beside them.
func (r *reference) paired(f func(), reps int) (ts, peaks []float64) {
	f()
	for range reps {
		peaks = append(peaks, r.run())
		ts = append(ts, seconds(f))
	}
	return ts, peaks
}

// coreCounts are the thread counts measured: one core, and all of them.
func coreCounts() []int {
	if n := runtime.NumCPU(); n > 1 {
		return []int{1, n}
	}
	return []int{1}
}

// onCores runs f with GOMAXPROCS set to n.
func onCores(n int, f func()) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	f()
}

// Run measures a training step, batched decoding and one input's
// gradient for d, each against the reference GEMM. Inputs are random
// points of the model's input box, so every decode runs the full step
// count. d must count its operations (model.Coster) for the ratios.
func Run(ctx context.Context, d model.Decoder[float32], opt Options) (*Report, error) {
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	coster, ok := d.(model.Coster)
	if !ok {
		return nil, fmt.Errorf("bench: architecture %s does not count its operations", d.Config().Architecture)
	}
	in := d.Input()
	if in.Kind != model.Continuous {
		return nil, fmt.Errorf("bench: architecture %s reads %v inputs; only continuous inputs are benchmarked yet", d.Config().Architecture, in.Kind)
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 3))
	size := in.Size()
	n := max(opt.DecodeN, opt.TrainBatch)
	x := make([]float32, n*size)
	for i := range x {
		x[i] = float32(in.Min + (in.Max-in.Min)*rng.Float64())
	}
	rep := &Report{Machine: DescribeMachine(isaOr(opt.ISA))}

	g := opt.GEMMSize
	ref := newReference(g, opt.Seed)
	rep.GEMMShape = fmt.Sprintf("sgemm %dx%dx%d", g, g, g)
	var done []pending
	add := func(name string, flops float64, ts, peaks []float64, threads int) {
		done = append(done, pending{name, flops, ts, peaks, threads})
	}
	cnt := coster.Cost()
	var err error
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}

	// Training step: forward, weight gradients for every layer, input
	// gradients for every layer but the first, Adam. Labels are three
	// random non-eos tokens.
	bt := opt.TrainBatch
	labels := make([][]int, bt)
	for i := range labels {
		for len(labels[i]) < 3 {
			if y := rng.IntN(d.Vocab()); y != d.EOS() {
				labels[i] = append(labels[i], y)
			}
		}
	}
	// The model's weights must not change: the steps train a copy, on as
	// many shards as cores.
	dt, err := model.Cast[float32](d)
	if err != nil {
		return nil, err
	}
	batch := train.Batch{X: x[:bt*size], Labels: labels}
	for _, threads := range coreCounts() {
		to := train.DefaultOptions()
		to.LR, to.FinalLR, to.WeightDecay, to.ClipNorm, to.Shards = 1e-9, 0, 0, 0, threads
		tr, e := train.NewTrainer(dt, to)
		if e != nil {
			return nil, e
		}
		var ts, peaks []float64
		onCores(threads, func() { ts, peaks = ref.paired(func() { _, e := tr.Step(batch, 0, 1); keep(e) }, opt.Reps) })
		if err != nil {
			return nil, err
		}
		fwd := cnt.Start + 4*cnt.Step // teacher forcing over 3 tokens + eos
		add(fmt.Sprintf("train step (batch %d, %d thr)", bt, threads), float64(bt)*(3*fwd-cnt.FirstLayer), ts, peaks, threads)
	}

	// Batched greedy decoding of DecodeN inputs for at most DecodeSteps
	// steps, on one thread and on all. Finished rows leave the batch, so
	// the work counted is what the rows needed: the encoder plus each
	// row's own steps (the steps a finished row still rides along before
	// the batch is compacted are not counted, so the ratio is a floor).
	dn := opt.DecodeN
	var flops float64
	decode := func() {
		res, e := model.Decode(ctx, d, model.Batch[float32]{X: x[:dn*size]}, opt.DecodeSteps)
		keep(e)
		flops = 0
		for _, r := range res {
			steps := len(r.Tokens)
			if r.Stopped {
				steps++
			}
			flops += cnt.Start + float64(steps)*cnt.Step
		}
	}
	for _, threads := range coreCounts() {
		var ts, peaks []float64
		onCores(threads, func() { ts, peaks = ref.paired(decode, opt.Reps) })
		if err != nil {
			return nil, err
		}
		add(fmt.Sprintf("greedy decode (%d inputs, %d thr)", dn, threads), flops, ts, peaks, threads)
	}

	// Input gradient of one input through the encoder and exactly
	// GradSteps decoder steps with argmax feedback (eos never taken, so
	// the step count is fixed): forward plus input gradients of every
	// layer.
	eos := d.EOS()
	gradTs, gradPeaks := ref.paired(func() {
		tp := ad.NewTape[float32](true)
		xin := tp.Var(ad.FromSlice(append([]float32(nil), x[:size]...), 1, size))
		var total *ad.Node[float32]
		_, e := model.Greedy(tp, d, model.Input[float32]{X: xin}, model.GreedyOptions[float32]{
			MaxSteps: opt.GradSteps, NoEOS: true,
			OnStep: func(_ int, o *ad.Node[float32], _ []int, _ []bool) {
				s := tp.Slice(o, 1, eos, eos+1)
				if total == nil {
					total = s
				} else {
					total = tp.Add(total, s)
				}
			},
		})
		if e == nil {
			e = tp.Backward(tp.Sum(total))
		}
		keep(e)
	}, opt.Reps)
	if err != nil {
		return nil, err
	}
	add(fmt.Sprintf("input gradient (1 input, %d steps)", opt.GradSteps), 2*(cnt.Start+float64(opt.GradSteps)*cnt.Step), gradTs, gradPeaks, runtime.GOMAXPROCS(0))

	rep.finish(ref, done)
	peak := rep.GEMMGFLOPS * 1e9

	// Attacks. Random search: one model evaluation per sample, decoded in
	// batches — the decode path on points of a ball around a real-looking
	// input. PGD: one iteration of the batched attack (forward with the
	// proxy objective, input gradient, Adam, projection) per input.
	center := make([]float64, size)
	for i := range center {
		center[i] = float64(x[i])
	}
	ball, err := spec.NewBall(center, 0.1, in.Min, in.Max)
	if err != nil {
		return nil, err
	}
	d64, err := model.Cast[float64](d)
	if err != nil {
		return nil, err
	}
	tg := attack.Target[[]float64]{Set: attack.NewContinuous(ball), K: 1 << 20, Seed: opt.Seed}
	rsN := opt.DecodeN
	rsT := median(func() {
		_, e := attack.RandomSearch(ctx, d, d64, tg, attack.RandomOptions{Samples: rsN, Batch: rsN, MaxSteps: opt.DecodeSteps})
		keep(e)
	}, opt.Reps)
	if err != nil {
		return nil, err
	}
	rep.RandomEvalsPerSec = float64(rsN) / rsT

	pgdB, pgdSteps := opt.PGDBatch, 20
	targets := make([]attack.Target[[]float64], pgdB)
	for i := range targets {
		targets[i] = tg
		targets[i].Stream = uint64(i)
	}
	po := attack.DefaultPGD()
	po.Steps, po.MaxSteps, po.EarlyStop = pgdSteps, opt.DecodeSteps, false
	pgdT := median(func() {
		_, e := attack.PGD(ctx, d, d64, targets, po)
		keep(e)
	}, opt.Reps)
	if err != nil {
		return nil, err
	}
	perStep := pgdT / float64(pgdSteps)
	rep.PGDStepsPerSecPerImage = float64(pgdB) / perStep
	// The decode bound: inputs per second if decoding ran at the GEMM bound
	// (the encoder dominates; decoder steps are counted at the cap).
	rep.DecodeBoundEvalsPerSec = peak / (cnt.Start + float64(opt.DecodeSteps)*cnt.Step)
	rep.Machine.Finish()
	return rep, nil
}
