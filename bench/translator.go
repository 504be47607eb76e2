package bench

import (
	"context"
	"fmt"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/train"
)

// TranslatorData are a translator benchmark's inputs: sources to translate
// (a dev split) and training pairs whose bucketed batches the training
// steps take.
type TranslatorData struct {
	Sources []string
	Train   *train.TokenPairs
}

// TranslatorOptions sizes the translator benchmark.
type TranslatorOptions struct {
	Reps        int // repetitions per measurement (median taken)
	TrainBatch  int // pairs per training step
	TrainSteps  int // training steps per repetition (distinct batches)
	GEMMSize    int // square reference GEMM size
	Seed        uint64
	DecodeSteps int    // decoding step cap (0: the model's)
	ISA         string // as Options.ISA
}

// DefaultTranslatorOptions are the settings docs/BENCHMARKS.md reports.
func DefaultTranslatorOptions() TranslatorOptions {
	return TranslatorOptions{Reps: 5, TrainBatch: 128, TrainSteps: 10, GEMMSize: 512, Seed: 1}
}

// TranslatorReport is a translator benchmark run: its measurements against
// the GEMM bound, and the throughputs users plan with.
type TranslatorReport struct {
	Report
	// TargetTokensPerSec is training throughput (target tokens, end of
	// sequence included) and SentencesPerSec translation throughput, each
	// on one core and on all.
	TargetTokensPerSec map[int]float64 `json:"target_tokens_per_sec"`
	SentencesPerSec    map[int]float64 `json:"sentences_per_sec"`
}

// RunTranslator measures a translator's training steps (bucketed batches
// of real pairs, as train.Fit takes them) and batched translation of the
// sources, on one core and on all, each against the reference GEMM for the
// FLOPs the architecture counts (model.TranslatorConfig.FLOPs: a training
// step three forward passes).
func RunTranslator(ctx context.Context, d model.Decoder[float32], data TranslatorData, opt TranslatorOptions) (*TranslatorReport, error) {
	arch, ok := d.Config().Arch.(*model.TranslatorConfig)
	if !ok {
		return nil, fmt.Errorf("bench: the translator benchmark counts the FLOPs of a %s, not of a %s", model.ArchTranslator, d.Config().Architecture)
	}
	if opt.Reps < 1 || opt.TrainBatch < 1 || opt.TrainSteps < 1 || opt.GEMMSize < 1 || opt.GEMMSize > 8192 {
		return nil, fmt.Errorf("bench: repetitions, batch, steps and GEMM size must be positive (GEMM at most 8192): %+v", opt)
	}
	if len(data.Sources) == 0 || data.Train == nil || data.Train.Len() < opt.TrainBatch*opt.TrainSteps {
		return nil, fmt.Errorf("bench: need sources and at least %d training pairs", opt.TrainBatch*opt.TrainSteps)
	}
	rep := &TranslatorReport{Report: Report{Machine: DescribeMachine(isaOr(opt.ISA))}, TargetTokensPerSec: map[int]float64{}, SentencesPerSec: map[int]float64{}}
	ref := newReference(opt.GEMMSize, opt.Seed)
	rep.GEMMShape = fmt.Sprintf("sgemm %dx%dx%d", opt.GEMMSize, opt.GEMMSize, opt.GEMMSize)
	var done []pending
	var err error
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}

	// Training steps on the first batches of a bucketed epoch.
	batches := data.Train.Batches(opt.TrainBatch, seeded(opt.Seed))[:opt.TrainSteps]
	var flops float64
	tokens := 0
	for _, b := range batches {
		_, src, tgt := data.Train.Batch(b, nil)
		for i := range src {
			flops += 3 * arch.FLOPs(len(src[i]), len(tgt[i])+1)
			tokens += len(tgt[i]) + 1
		}
	}
	for _, threads := range coreCounts() {
		tr, e := trainerFor(d, threads)
		if e != nil {
			return nil, e
		}
		steps := func() {
			for _, b := range batches {
				_, src, tgt := data.Train.Batch(b, nil)
				_, e := tr.Step(train.Batch{Tokens: src, Labels: tgt}, 0, 1)
				keep(e)
			}
		}
		var ts, peaks []float64
		onCores(threads, func() { ts, peaks = ref.paired(steps, opt.Reps) })
		if err != nil {
			return nil, err
		}
		done = append(done, pending{fmt.Sprintf("train %d steps (batch %d, %d thr)", opt.TrainSteps, opt.TrainBatch, threads), flops, ts, peaks, threads})
		rep.TargetTokensPerSec[threads] = float64(tokens) / medianOf(ts)
	}

	// Translation of the sources (model.Translate: sorted by length,
	// chunks on all cores).
	var tflops float64
	translate := func() {
		out, e := model.Translate(ctx, d, data.Sources, opt.DecodeSteps)
		keep(e)
		tflops = 0
		for _, t := range out {
			keep(t.Err)
			steps := t.Length
			if t.Stopped {
				steps++
			}
			tflops += arch.FLOPs(len(t.Source), steps)
		}
	}
	for _, threads := range coreCounts() {
		var ts, peaks []float64
		onCores(threads, func() { ts, peaks = ref.paired(translate, opt.Reps) })
		if err != nil {
			return nil, err
		}
		done = append(done, pending{fmt.Sprintf("translate %d sentences (%d thr)", len(data.Sources), threads), tflops, ts, peaks, threads})
		rep.SentencesPerSec[threads] = float64(len(data.Sources)) / medianOf(ts)
	}
	rep.finish(ref, done)
	rep.Machine.Finish()
	return rep, nil
}
