// Package train trains and evaluates lenspec's models through the decoder
// contract: minibatch Adam on the teacher-forced cross-entropy over a batch
// Source, with per-epoch checkpoints so an interrupted run resumes, and
// exact-sequence evaluation with greedy decoding.
package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
)

// Source is a training or evaluation set whose examples are addressed by
// index. Its types are plain so that data packages implement it without
// importing train or model.
type Source[T ad.Float] interface {
	// Len is the number of examples.
	Len() int
	// Batch returns examples idx as model inputs — continuous values one
	// example after the other in x, or token sequences in tokens — and
	// their target token sequences (eos not included). A non-nil rng asks
	// for training augmentation, drawn from it.
	Batch(idx []int, rng *rand.Rand) (x []T, tokens [][]int, labels [][]int)
}

// Options controls a training run. Every random choice (shuffling,
// augmentation, dropout) derives from Seed.
type Options struct {
	Seed      uint64
	Epochs    int
	BatchSize int
	LR        float64
	// FinalLR is reached by cosine decay from LR over the run (0: no decay).
	FinalLR float64
	// Dropout is the drop probability where the architecture has dropout
	// (the captioner: its encoder's fully connected layers); WeightDecay is
	// AdamW's decoupled decay on weight matrices (not biases, embeddings or
	// recurrent cells). Both fight the encoder's tendency to memorise
	// digit positions.
	Dropout, WeightDecay float64
	// ClipNorm, if positive, rescales the gradient to this global L2 norm
	// when it is larger (ReLU RNNs have occasional gradient spikes).
	ClipNorm float64
	// Stability, if positive, weighs the ReLU-stability regulariser
	// (model.Stabilizer) added to the loss, computed on every batch over
	// the ball of radius StabilityEps around each input. The radius ramps
	// up linearly over the first StabilityRamp of the steps (a fraction in
	// [0, 1]) so that the model first learns the task.
	// Verification-friendly training: fewer unstable ReLUs make bounds
	// tighter and MIPs smaller.
	Stability, StabilityEps, StabilityRamp float64
	// Shards splits each batch into this many shards whose gradients are
	// computed concurrently and summed in shard order (0 means 1): the
	// result depends on it, not on the number of cores that run them. On
	// this project's 2-vCPU machine, two shards take a batch-64 captioner
	// step in 0.76 of the time of one; on one core they cost 17 % more
	// (docs/BENCHMARKS.md).
	Shards int
	// CheckpointDir, if set, receives a checkpoint after every epoch and is
	// read at start to resume.
	CheckpointDir string
	// Progress, if set, is called after every step.
	Progress func(Progress)
}

// Progress reports a training step.
type Progress struct {
	Epoch, Epochs int
	Step, Steps   int // within the whole run
	Loss          float64
	// Unstable counts the batch's unstable encoder ReLUs when the
	// stability regulariser is on.
	Unstable int
	Elapsed  time.Duration
}

// DefaultOptions are the settings that produced models/mmnist-rnn, on two
// shards.
func DefaultOptions() Options {
	return Options{Seed: 1, Epochs: 20, BatchSize: 64, LR: 3e-3, FinalLR: 1e-4, WeightDecay: 0.01, ClipNorm: 5, Shards: 2}
}

func (o Options) shards() int { return max(o.Shards, 1) }

// Validate checks the options before any work: every value finite and in
// its range. The errors name the setting.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if o.Epochs <= 0 || o.Epochs > 1e6 {
		bad("epochs %d must be in 1..1000000", o.Epochs)
	}
	if o.BatchSize <= 0 || o.BatchSize > 1<<20 {
		bad("batch size %d must be in 1..%d", o.BatchSize, 1<<20)
	}
	if o.Shards < 0 || o.Shards > 64 {
		bad("shards %d must be in 0..64", o.Shards)
	}
	if !(o.LR > 0) || !finite(o.LR) {
		bad("learning rate %v must be positive and finite", o.LR)
	}
	if !(o.FinalLR >= 0) || !finite(o.FinalLR) {
		bad("final learning rate %v must be non-negative and finite", o.FinalLR)
	}
	if !(o.Dropout >= 0 && o.Dropout < 1) {
		bad("dropout %v must be in [0, 1)", o.Dropout)
	}
	if !(o.WeightDecay >= 0) || !finite(o.WeightDecay) {
		bad("weight decay %v must be non-negative and finite", o.WeightDecay)
	}
	if !(o.ClipNorm >= 0) || !finite(o.ClipNorm) {
		bad("clip norm %v must be non-negative and finite (0: off)", o.ClipNorm)
	}
	if !(o.Stability >= 0) || !finite(o.Stability) {
		bad("stability weight %v must be non-negative and finite", o.Stability)
	}
	if !(o.StabilityEps >= 0) || !finite(o.StabilityEps) || (o.Stability > 0 && o.StabilityEps == 0) {
		bad("stability radius %v must be finite, non-negative, and positive when the regulariser is on", o.StabilityEps)
	}
	if !(o.StabilityRamp >= 0 && o.StabilityRamp <= 1) {
		bad("stability ramp %v must be in [0, 1]", o.StabilityRamp)
	}
	return errors.Join(errs...)
}

// Fit trains d on src in place and returns the mean loss of the last
// epoch.
func Fit(ctx context.Context, d model.Decoder[float32], src Source[float32], opt Options) (float64, error) {
	if err := opt.Validate(); err != nil {
		return 0, fmt.Errorf("train: %w", err)
	}
	if src.Len() < opt.BatchSize {
		return 0, fmt.Errorf("train: %d examples is fewer than one batch of %d", src.Len(), opt.BatchSize)
	}
	tr, err := NewTrainer(d, opt)
	if err != nil {
		return 0, err
	}
	startEpoch := 0
	if opt.CheckpointDir != "" {
		e, err := loadCheckpoint(opt.CheckpointDir, d, tr.Adam, settings(d, src, opt))
		if err != nil {
			return 0, err
		}
		startEpoch = e
	}
	perEpoch := src.Len() / opt.BatchSize
	total := perEpoch * opt.Epochs
	start := time.Now()
	var epochLoss float64
	for epoch := startEpoch; epoch < opt.Epochs; epoch++ {
		// A fresh source per epoch, derived from the seed, makes a resumed run
		// shuffle exactly as an uninterrupted one.
		rng := rand.New(rand.NewPCG(opt.Seed, uint64(epoch)+1))
		perm := rng.Perm(src.Len())
		epochLoss = 0
		for s := 0; s < perEpoch; s++ {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			step := epoch*perEpoch + s
			var b Batch
			b.X, b.Tokens, b.Labels = src.Batch(perm[s*opt.BatchSize:(s+1)*opt.BatchSize], rng)
			r, err := tr.Step(b, step, total)
			if err != nil {
				return 0, err
			}
			epochLoss += r.Loss
			if opt.Progress != nil {
				opt.Progress(Progress{Epoch: epoch + 1, Epochs: opt.Epochs, Step: step + 1, Steps: total, Loss: r.Loss, Unstable: r.Unstable, Elapsed: time.Since(start)})
			}
		}
		epochLoss /= float64(perEpoch)
		if opt.CheckpointDir != "" {
			if err := saveCheckpoint(opt.CheckpointDir, d, tr.Adam, settings(d, src, opt), epoch+1); err != nil {
				return 0, err
			}
		}
	}
	return epochLoss, nil
}

// clipGrad rescales all gradients together to global norm at most c.
func clipGrad(params []*ad.Param[float32], c float64) {
	var ss float64
	for _, p := range params {
		for _, g := range p.G.Data {
			ss += float64(g) * float64(g)
		}
	}
	if n := math.Sqrt(ss); n > c {
		f := float32(c / n)
		for _, p := range params {
			for i := range p.G.Data {
				p.G.Data[i] *= f
			}
		}
	}
}

func cosine(lr, final float64, step, total int) float64 {
	if final <= 0 || total <= 1 {
		return lr
	}
	f := float64(step) / float64(total-1)
	return final + 0.5*(lr-final)*(1+math.Cos(math.Pi*f))
}

const checkpointFile = "checkpoint.safetensors"

// settings are everything that makes a checkpoint's weights what they are:
// a run resumed with other settings would end with weights no single
// setting produced, so resuming requires them to match.
func settings(d model.Decoder[float32], src Source[float32], opt Options) map[string]string {
	arch, _ := json.Marshal(d.Config().Arch)
	return map[string]string{
		"architecture": d.Config().Architecture + " " + string(arch),
		"examples":     fmt.Sprint(src.Len()),
		"seed":         fmt.Sprint(opt.Seed), "epochs": fmt.Sprint(opt.Epochs), "batch_size": fmt.Sprint(opt.BatchSize),
		"lr": fmt.Sprint(opt.LR), "final_lr": fmt.Sprint(opt.FinalLR), "dropout": fmt.Sprint(opt.Dropout),
		"weight_decay": fmt.Sprint(opt.WeightDecay), "clip_norm": fmt.Sprint(opt.ClipNorm),
		"shards":    fmt.Sprint(opt.shards()),
		"stability": fmt.Sprint(opt.Stability), "stability_eps": fmt.Sprint(opt.StabilityEps), "stability_ramp": fmt.Sprint(opt.StabilityRamp),
	}
}

// saveCheckpoint stores weights, Adam moments, the settings and the epoch
// count in one safetensors file (float64, so resuming is exact).
func saveCheckpoint(dir string, d model.Decoder[float32], adam *ad.Adam[float32], set map[string]string, epoch int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	step, mom, vel := adam.State()
	meta := map[string]string{"epoch": fmt.Sprint(epoch), "adam_step": fmt.Sprint(step)}
	for k, v := range set {
		meta["setting."+k] = v
	}
	f := &safetensors.File{Metadata: meta}
	for i, p := range d.Params() {
		w := make([]float64, p.W.Len())
		for j, v := range p.W.Data {
			w[j] = float64(v)
		}
		f.Tensors = append(f.Tensors,
			safetensors.F64(p.Name, p.W.Shape, w),
			safetensors.F64("adam.m."+p.Name, p.W.Shape, mom[i]),
			safetensors.F64("adam.v."+p.Name, p.W.Shape, vel[i]))
	}
	return safetensors.WriteFile(filepath.Join(dir, checkpointFile), f)
}

// loadCheckpoint restores a checkpoint if one exists and returns the number
// of finished epochs (0 when starting fresh). A checkpoint written with
// other settings is refused, naming every setting that differs.
func loadCheckpoint(dir string, d model.Decoder[float32], adam *ad.Adam[float32], set map[string]string) (int, error) {
	path := filepath.Join(dir, checkpointFile)
	f, err := safetensors.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var diff []string
	for k, v := range set {
		if got, ok := f.Metadata["setting."+k]; !ok || got != v {
			diff = append(diff, fmt.Sprintf("%s %q (this run: %q)", k, got, v))
		}
	}
	if len(diff) > 0 {
		slices.Sort(diff)
		return 0, fmt.Errorf("%s: checkpoint was written with other settings: %s; resume with the same settings or use another --out", path, strings.Join(diff, ", "))
	}
	var epoch, step int
	if _, err := fmt.Sscan(f.Metadata["epoch"], &epoch); err != nil {
		return 0, fmt.Errorf("%s: bad epoch metadata: %w", path, err)
	}
	if _, err := fmt.Sscan(f.Metadata["adam_step"], &step); err != nil {
		return 0, fmt.Errorf("%s: bad adam_step metadata: %w", path, err)
	}
	params := d.Params()
	mom := make([][]float64, len(params))
	vel := make([][]float64, len(params))
	get := func(name string, n int) ([]float64, error) {
		t, ok := f.Tensor(name)
		if !ok {
			return nil, fmt.Errorf("%s: missing tensor %q", path, name)
		}
		v, err := t.Float64s()
		if err != nil {
			return nil, fmt.Errorf("%s: tensor %q: %w", path, name, err)
		}
		if len(v) != n {
			return nil, fmt.Errorf("%s: tensor %q has %d values, the model %d", path, name, len(v), n)
		}
		return v, nil
	}
	for i, p := range params {
		w, err := get(p.Name, p.W.Len())
		if err != nil {
			return 0, err
		}
		for j, v := range w {
			p.W.Data[j] = float32(v)
		}
		if mom[i], err = get("adam.m."+p.Name, p.W.Len()); err != nil {
			return 0, err
		}
		if vel[i], err = get("adam.v."+p.Name, p.W.Len()); err != nil {
			return 0, err
		}
	}
	adam.SetState(step, mom, vel)
	return epoch, nil
}
