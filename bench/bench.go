// Package bench measures lenspec's hot paths against the machine's GEMM
// throughput: each measurement is a time and the ratio of the time OpenBLAS
// (or the compiled-in BLAS) needs for the same floating-point operations in
// one large float32 GEMM, measured in the same run. Ratios survive the noise
// of a shared machine that absolute times do not.
package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// Measurement is one timed operation.
type Measurement struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"` // per operation (median of the repetitions)
	FLOPs   float64 `json:"flops"`   // per operation, counted from the architecture
	// GEMMSeconds is the time the reference GEMM needs for FLOPs; Ratio is
	// GEMMSeconds/Seconds: the fraction of the GEMM bound achieved.
	GEMMSeconds float64 `json:"gemm_seconds"`
	Ratio       float64 `json:"ratio_to_gemm_bound"`
}

// Report is a full benchmark run.
type Report struct {
	BLAS         string        `json:"blas"`
	GEMMGFLOPS   float64       `json:"gemm_gflops"` // reference GEMM throughput
	GEMMShape    string        `json:"gemm_shape"`
	Measurements []Measurement `json:"measurements"`
	// Attack throughput: random-search model evaluations per second, PGD
	// iterations per second per image, and the decode bound (evaluations
	// per second if decoding ran at the GEMM bound) they compare with.
	RandomEvalsPerSec      float64 `json:"random_evals_per_sec"`
	PGDStepsPerSecPerImage float64 `json:"pgd_steps_per_sec_per_image"`
	DecodeBoundEvalsPerSec float64 `json:"decode_bound_evals_per_sec"`
}

// Counts are the floating-point operations (2 per multiply-add) of a
// captioner's affine layers; elementwise work is not counted.
type Counts struct {
	Encoder, FirstConv, Step float64
}

// Count returns the per-image operation counts of cfg.
func Count(cfg model.Config) Counts {
	var c Counts
	h, w, in := cfg.Input.Height, cfg.Input.Width, cfg.Input.Channels
	for i, cv := range cfg.Conv {
		h = (h+2*cv.Padding-cv.Kernel)/cv.Stride + 1
		w = (w+2*cv.Padding-cv.Kernel)/cv.Stride + 1
		f := 2 * float64(h*w*cv.OutChannels*in*cv.Kernel*cv.Kernel)
		c.Encoder += f
		if i == 0 {
			c.FirstConv = f
		}
		in = cv.OutChannels
	}
	c.Encoder += 2 * float64(h*w*in*cfg.FCHidden+cfg.FCHidden*cfg.Embedding)
	c.Step = 2 * float64(cfg.Embedding*cfg.Hidden+cfg.Hidden*cfg.Hidden+cfg.Hidden*len(cfg.Vocab))
	return c
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
}

// DefaultOptions are the settings docs/BENCHMARKS.md reports.
func DefaultOptions() Options {
	return Options{Reps: 7, DecodeN: 1000, TrainBatch: 64, GradSteps: 10, GEMMSize: 512, Seed: 1, DecodeSteps: 10, PGDBatch: 50}
}

func median(f func(), reps int) float64 {
	f() // warm up
	ts := make([]float64, reps)
	for i := range ts {
		s := time.Now()
		f()
		ts[i] = time.Since(s).Seconds()
	}
	for i := range ts { // insertion sort: reps is small
		for j := i; j > 0 && ts[j] < ts[j-1]; j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
	return ts[len(ts)/2]
}

// Run measures a training step, batched decoding and one image's input
// gradient for m, each against the reference GEMM. Inputs are random
// images in the model's range, so every decode runs the full step count.
func Run(ctx context.Context, m *model.Captioner[float32], opt Options) (*Report, error) {
	rng := rand.New(rand.NewPCG(opt.Seed, 3))
	size := m.Cfg.InputSize()
	n := max(opt.DecodeN, opt.TrainBatch)
	x := make([]float32, n*size)
	for i := range x {
		x[i] = float32(2*rng.Float64() - 1)
	}
	rep := &Report{BLAS: ad.BLASName()}

	g := opt.GEMMSize
	a, b, c := make([]float32, g*g), make([]float32, g*g), make([]float32, g*g)
	for i := range a {
		a[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	gemmT := median(func() { ad.Gemm(false, false, g, g, g, 1, a, b, 0, c) }, opt.Reps)
	peak := 2 * float64(g) * float64(g) * float64(g) / gemmT
	rep.GEMMGFLOPS = peak / 1e9
	rep.GEMMShape = fmt.Sprintf("sgemm %dx%dx%d", g, g, g)
	add := func(name string, secs, flops float64) {
		ref := flops / peak
		rep.Measurements = append(rep.Measurements, Measurement{name, secs, flops, ref, ref / secs})
	}
	cnt := Count(m.Cfg)

	// Training step: forward, weight gradients for every layer, input
	// gradients for every layer but the first convolution, Adam.
	bt := opt.TrainBatch
	labels := make([][]int, bt)
	for i := range labels {
		labels[i] = []int{rng.IntN(10), rng.IntN(10), rng.IntN(10)}
	}
	params := m.Params()
	adam := ad.NewAdam(params, 1e-9)
	var err error
	trainT := median(func() {
		for _, p := range params {
			p.ZeroGrad()
		}
		tp := ad.NewTrainingTape[float32]()
		loss := m.Loss(tp, tp.Const(ad.FromSlice(x[:bt*size], bt, size)), labels)
		if e := tp.Backward(loss); e != nil {
			err = e
		}
		adam.Step()
	}, opt.Reps)
	if err != nil {
		return nil, err
	}
	fwd := cnt.Encoder + 4*cnt.Step // teacher forcing over 3 digits + eos
	add(fmt.Sprintf("train step (batch %d)", bt), trainT, float64(bt)*(3*fwd-cnt.FirstConv))

	// Batched greedy decoding of DecodeN images for exactly DecodeSteps steps.
	// The batch runs until its last row stops, so the work is the encoder
	// plus that many steps for every row.
	dn := opt.DecodeN
	ran := 0
	decT := median(func() {
		res, e := m.Decode(ctx, x[:dn*size], dn, opt.DecodeSteps)
		if e != nil {
			err = e
		}
		for _, r := range res {
			steps := len(r.Tokens)
			if r.Stopped {
				steps++
			}
			ran = max(ran, steps)
		}
	}, opt.Reps)
	if err != nil {
		return nil, err
	}
	add(fmt.Sprintf("greedy decode (%d images, %d steps)", dn, ran), decT, float64(dn)*(cnt.Encoder+float64(ran)*cnt.Step))

	// Input gradient of one image through the encoder and GradSteps decoder
	// steps with argmax feedback: forward plus input gradients of every layer.
	gradT := median(func() {
		tp := ad.NewTape[float32](true)
		xin := tp.Var(ad.FromSlice(append([]float32(nil), x[:size]...), 1, size))
		in := m.Encode(tp, xin)
		var h, total *ad.Node[float32]
		for t := 0; t < opt.GradSteps; t++ {
			var o *ad.Node[float32]
			o, h = m.Step(tp, in, h)
			s := tp.Slice(o, 1, m.EOS(), m.EOS()+1)
			if total == nil {
				total = s
			} else {
				total = tp.Add(total, s)
			}
			y, _, _ := model.Argmax(o.Value.Data)
			in = m.Embed(tp, []int{y})
		}
		if e := tp.Backward(tp.Sum(total)); e != nil {
			err = e
		}
	}, opt.Reps)
	if err != nil {
		return nil, err
	}
	add(fmt.Sprintf("input gradient (1 image, %d steps)", opt.GradSteps), gradT, 2*(cnt.Encoder+float64(opt.GradSteps)*cnt.Step))

	// Attacks. Random search: one model evaluation per sample, decoded in
	// batches — the decode path on points of a ball around a real-looking
	// input. PGD: one iteration of the batched attack (forward with the
	// proxy objective, input gradient, Adam, projection) per image.
	center := make([]float64, size)
	for i := range center {
		center[i] = float64(x[i])
	}
	tg := attack.Target{Spec: spec.Spec{Ball: spec.Ball{Center: center, Delta: 0.1, Min: m.Cfg.Input.Min, Max: m.Cfg.Input.Max}, K: 1 << 20}}
	m64 := model.Cast[float64](m)
	rsN := opt.DecodeN
	rsT := median(func() {
		if _, e := attack.RandomSearch(ctx, m, m64, tg, attack.RandomOptions{Samples: rsN, Batch: rsN, MaxSteps: opt.DecodeSteps, Seed: opt.Seed}); e != nil {
			err = e
		}
	}, opt.Reps)
	if err != nil {
		return nil, err
	}
	rep.RandomEvalsPerSec = float64(rsN) / rsT

	pgdB, pgdSteps := opt.PGDBatch, 20
	targets := make([]attack.Target, pgdB)
	for i := range targets {
		targets[i] = tg
	}
	po := attack.DefaultPGD()
	po.Steps, po.MaxSteps, po.EarlyStop = pgdSteps, opt.DecodeSteps, false
	pgdT := median(func() {
		if _, e := attack.PGD(ctx, m, m64, targets, po); e != nil {
			err = e
		}
	}, opt.Reps)
	if err != nil {
		return nil, err
	}
	perStep := pgdT / float64(pgdSteps)
	rep.PGDStepsPerSecPerImage = float64(pgdB) / perStep
	// The decode bound: images per second if decoding ran at the GEMM bound
	// (the encoder dominates; decoder steps are counted at the cap).
	rep.DecodeBoundEvalsPerSec = peak / (cnt.Encoder + float64(opt.DecodeSteps)*cnt.Step)
	return rep, nil
}
