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
	"strconv"
	"strings"
	"time"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
	"github.com/lenspec/lenspec/spec"
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

// Bucketer is implemented by sources that choose which examples share a
// batch — sequences of similar length, so that a batch pads little. Fit
// uses it instead of a plain shuffle.
type Bucketer interface {
	// Batches returns one epoch's batches: Len()/size batches of exactly
	// size distinct example indices each, drawn from rng.
	Batches(size int, rng *rand.Rand) [][]int
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
	// LabelSmoothing moves this much of each target's probability to the
	// uniform distribution in the loss (0: plain cross-entropy).
	LabelSmoothing float64
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
	// IBP, if positive, is certified training by interval bound
	// propagation (model.Certifier): the loss is (1 − w)·the
	// teacher-forced loss + w·its interval bound over the ball of radius
	// e around each input, where w and e grow linearly from 0 to IBP and
	// IBPEps over the first IBPRamp of the steps (a fraction in [0, 1]),
	// so that the model first keeps the task and then widens the ball it
	// is sure of. Training for a radius makes the verifier's bounds, not
	// only its count of unstable ReLUs, tight there.
	IBP, IBPEps, IBPRamp float64
	// IBPBound selects the certified loss's bound (model.Bound; empty:
	// model.BoundInterval). model.BoundCROWNIBP is tighter above fc1, so
	// the same weight constrains the model less and its count of
	// certified rows is closer to what the verifier proves.
	IBPBound model.Bound
	// IBPAttack replaces the teacher-forced loss of the mix by its value at
	// a one-step attack inside the same ball (MTL-IBP, De Palma et al.
	// 2024): (1 − w)·L_CE(x_adv) + w·L_bound(x, e), which trains for the
	// inputs the verifier's falsifiers look for as well as the bound.
	IBPAttack bool
	// SABR, if in (0, 1), takes the certified loss over a small box of
	// radius SABR·e around a point of the ball instead of over the whole
	// ball (SABR: Müller et al., "Certified training: small boxes are all
	// you need", ICLR 2023). The point is the one-step attack of IBPAttack,
	// moved toward the input until the small box lies inside the ball. A
	// small box's bound is far tighter than the ball's, so the model gives
	// up less accuracy to it, while the box still sits where the loss is
	// worst; the verifier's branch and bound covers the rest of the ball.
	// 0 is off (the whole ball).
	SABR float64
	// Teacher, if set and Distill is positive, is distilled into the model
	// (model.DistilledLoss): the teacher-forced term becomes (1 −
	// Distill)·its cross-entropy + Distill·DistillTemp²·the cross-entropy
	// against Teacher's distributions at temperature DistillTemp, taken at
	// the inputs the term is taken at (the attack points with IBPAttack).
	// A more accurate teacher gives back some of the accuracy a certified
	// loss takes. TeacherID names it (its digest) in checkpoints, so a
	// run resumed with another teacher is refused.
	Teacher              model.Decoder[float32]
	TeacherID            string
	Distill, DistillTemp float64
	// DistillHardEOS keeps the label alone on the steps whose target is
	// eos (model.SoftTargets.HardEOS): the teacher's softer eos decision
	// would narrow the margins the verifier proves.
	DistillHardEOS bool
	// Shards splits each batch into this many shards whose gradients are
	// computed concurrently and summed in shard order (0 means 1): the
	// result depends on it, not on the number of cores that run them. On
	// this project's 2-vCPU machine, two shards take a batch-64 captioner
	// step in 0.76 of the time of one; on one core they cost 17 % more
	// (docs/BENCHMARKS.md).
	Shards int
	// CheckpointDir, if set, receives a checkpoint after every epoch (and
	// every CheckpointEvery within one, if positive) and is read at start
	// to resume; a resumed run ends with exactly the weights of an
	// uninterrupted one.
	CheckpointDir   string
	CheckpointEvery time.Duration
	// Data identifies the training data beyond the source's size (a
	// corpus's hash, a tokenizer's): a checkpoint written on other data is
	// refused.
	Data string
	// Progress, if set, is called after every step.
	Progress func(Progress)
	// EpochEnd, if set, is called after each epoch's last step (epoch
	// counts from 1) and before that epoch's checkpoint is written, so a
	// run killed in between repeats the call, with the same weights, when
	// it resumes: checkpoint selection on a dev set hangs here.
	EpochEnd func(epoch int) error
}

// Progress reports a training step.
type Progress struct {
	Epoch, Epochs int
	Step, Steps   int // within the whole run
	Loss          float64
	// Unstable counts the batch's unstable encoder ReLUs when the
	// stability regulariser is on.
	Unstable int
	// Certified counts the batch's rows whose label is certified over the
	// step's ball by intervals (certified training on).
	Certified int
	// Tokens counts the step's target tokens, end-of-sequence included.
	Tokens  int
	Elapsed time.Duration
}

// DefaultOptions are the settings that produced models/mmnist-rnn, on two
// shards. Distill and DistillTemp are distillation's defaults, read only
// when a Teacher is set.
func DefaultOptions() Options {
	return Options{Seed: 1, Epochs: 20, BatchSize: 64, LR: 3e-3, FinalLR: 1e-4, WeightDecay: 0.01, ClipNorm: 5, Shards: 2, Distill: 0.5, DistillTemp: 2}
}

func (o Options) shards() int { return max(o.Shards, 1) }

// distilling reports whether the run distils a teacher.
func (o Options) distilling() bool { return o.Teacher != nil && o.Distill > 0 }

// bound is the certified loss's bound, model.BoundInterval unless set.
func (o Options) bound() model.Bound {
	if o.IBPBound == "" {
		return model.BoundInterval
	}
	return o.IBPBound
}

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
	if !(o.LabelSmoothing >= 0 && o.LabelSmoothing < 1) {
		bad("label smoothing %v must be in [0, 1)", o.LabelSmoothing)
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
	if !(o.IBP >= 0 && o.IBP <= 1) {
		bad("IBP weight %v must be in [0, 1]", o.IBP)
	}
	if !(o.IBPEps >= 0) || !finite(o.IBPEps) || (o.IBP > 0 && o.IBPEps == 0) {
		bad("IBP radius %v must be finite, non-negative, and positive when certified training is on", o.IBPEps)
	}
	if !(o.IBPRamp >= 0 && o.IBPRamp <= 1) {
		bad("IBP ramp %v must be in [0, 1]", o.IBPRamp)
	}
	if o.IBPBound != "" && !o.IBPBound.Valid() {
		bad("IBP bound %q is not one of %v", o.IBPBound, model.Bounds())
	}
	if !(o.SABR >= 0 && o.SABR < 1) {
		bad("SABR box fraction %v must be in [0, 1) (0: off, the whole ball)", o.SABR)
	}
	if !(o.Distill >= 0 && o.Distill <= 1) {
		bad("distillation weight %v must be in [0, 1]", o.Distill)
	}
	if o.Distill > 0 && (!(o.DistillTemp > 0) || !finite(o.DistillTemp)) {
		bad("distillation temperature %v must be positive and finite", o.DistillTemp)
	}
	if o.IBP == 0 && (o.bound() != model.BoundInterval || o.IBPAttack || o.SABR > 0) {
		bad("the IBP bound and attack shape the certified loss, which is off (IBP weight 0)")
	}
	return errors.Join(errs...)
}

// ValidateFor checks the options for training d: Validate, then what
// needs the model — an architecture with the regulariser or the certified
// loss they turn on, and their radii against its input range
// (spec.CheckRadius, the check every radius gets). NewTrainer and Fit call
// it; a command line calls it before reading any data.
func (o Options) ValidateFor(d model.Decoder[float32]) error {
	if err := o.Validate(); err != nil {
		return err
	}
	var errs []error
	arch := d.Config().Architecture
	if _, ok := d.(model.Stabilizer[float32]); o.Stability > 0 && !ok {
		errs = append(errs, fmt.Errorf("architecture %s has no ReLU-stability regulariser", arch))
	}
	if c, ok := d.(model.Certifier[float32]); o.IBP > 0 && !ok {
		errs = append(errs, fmt.Errorf("architecture %s has no certified-training loss", arch))
	} else if o.IBP > 0 {
		if err := c.CheckBound(o.bound()); err != nil {
			errs = append(errs, fmt.Errorf("architecture %s: %w", arch, err))
		}
	}
	if o.distilling() {
		if err := CheckTeacher(o.Teacher, d); err != nil {
			errs = append(errs, fmt.Errorf("teacher %s: %w", o.TeacherID, err))
		}
	}
	in := d.Input()
	if in.Kind == model.Continuous {
		if err := spec.CheckRadius(o.StabilityEps, in.Min, in.Max); err != nil {
			errs = append(errs, fmt.Errorf("stability %w", err))
		}
		if err := spec.CheckRadius(o.IBPEps, in.Min, in.Max); err != nil {
			errs = append(errs, fmt.Errorf("IBP %w", err))
		}
	}
	return errors.Join(errs...)
}

// CheckTeacher refuses a teacher that does not read the inputs d reads
// or write the tokens it writes: its distributions would not be targets
// for d's.
func CheckTeacher(teacher, d model.Decoder[float32]) error {
	ti, di := teacher.Input(), d.Input()
	if teacher.Vocab() != d.Vocab() || teacher.EOS() != d.EOS() || ti.Size() != di.Size() || ti.Kind != di.Kind {
		return fmt.Errorf("vocabulary %d, eos %d, input %d: not those of the model trained (%d, %d, %d)",
			teacher.Vocab(), teacher.EOS(), ti.Size(), d.Vocab(), d.EOS(), di.Size())
	}
	return nil
}

// Fit trains d on src in place and returns the mean loss of the last
// epoch.
func Fit(ctx context.Context, d model.Decoder[float32], src Source[float32], opt Options) (float64, error) {
	if err := opt.ValidateFor(d); err != nil {
		return 0, fmt.Errorf("train: %w", err)
	}
	if src.Len() < opt.BatchSize {
		return 0, fmt.Errorf("train: %d examples is fewer than one batch of %d", src.Len(), opt.BatchSize)
	}
	tr, err := NewTrainer(d, opt)
	if err != nil {
		return 0, err
	}
	var at position
	set := settings(d, src, opt)
	if opt.CheckpointDir != "" {
		if at, err = loadCheckpoint(opt.CheckpointDir, d, tr.Adam, set); err != nil {
			return 0, err
		}
	}
	perEpoch := src.Len() / opt.BatchSize
	total := perEpoch * opt.Epochs
	start, saved := time.Now(), time.Now()
	save := func(p position) error {
		saved = time.Now()
		return saveCheckpoint(opt.CheckpointDir, d, tr.Adam, set, p)
	}
	var epochLoss float64
	for epoch := at.epoch; epoch < opt.Epochs; epoch++ {
		// A fresh source per epoch, and one per step, derived from the seed,
		// make a resumed run shuffle and augment exactly as an uninterrupted
		// one.
		batches := epochBatches(src, opt.BatchSize, rand.New(rand.NewPCG(opt.Seed, uint64(epoch)+1)))
		first, loss := 0, 0.0
		if epoch == at.epoch {
			first, loss = at.step, at.loss
		}
		for s := first; s < perEpoch; s++ {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			step := epoch*perEpoch + s
			var b Batch
			b.X, b.Tokens, b.Labels = src.Batch(batches[s], rand.New(rand.NewPCG(opt.Seed, stepStream|uint64(step))))
			r, err := tr.Step(b, step, total)
			if err != nil {
				return 0, err
			}
			loss += r.Loss
			if opt.Progress != nil {
				tokens := 0
				for _, l := range b.Labels {
					tokens += len(l) + 1
				}
				opt.Progress(Progress{Epoch: epoch + 1, Epochs: opt.Epochs, Step: step + 1, Steps: total, Loss: r.Loss,
					Unstable: r.Unstable, Certified: r.Certified, Tokens: tokens, Elapsed: time.Since(start)})
			}
			if opt.CheckpointDir != "" && opt.CheckpointEvery > 0 && s+1 < perEpoch && time.Since(saved) >= opt.CheckpointEvery {
				if err := save(position{epoch, s + 1, loss}); err != nil {
					return 0, err
				}
			}
		}
		epochLoss = loss / float64(perEpoch)
		if opt.EpochEnd != nil {
			if err := opt.EpochEnd(epoch + 1); err != nil {
				return 0, err
			}
		}
		if opt.CheckpointDir != "" {
			if err := save(position{epoch + 1, 0, 0}); err != nil {
				return 0, err
			}
		}
	}
	return epochLoss, nil
}

// stepStream tags the random streams of per-step augmentation, apart from
// the per-epoch shuffling streams (1, 2, …) and dropout's.
const stepStream = 1 << 61

// epochBatches is one epoch's batches: the source's own (Bucketer), or a
// shuffle cut into whole batches.
func epochBatches[T ad.Float](src Source[T], size int, rng *rand.Rand) [][]int {
	if b, ok := src.(Bucketer); ok {
		return b.Batches(size, rng)
	}
	perm := rng.Perm(src.Len())
	out := make([][]int, src.Len()/size)
	for i := range out {
		out[i] = perm[i*size : (i+1)*size]
	}
	return out
}

// position is how far a run got: whole epochs done, steps done in the
// next one and the sum of their losses (for the epoch's mean).
type position struct {
	epoch, step int
	loss        float64
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
	s := map[string]string{
		"architecture": d.Config().Architecture + " " + string(arch),
		"examples":     fmt.Sprint(src.Len()),
		"seed":         fmt.Sprint(opt.Seed), "epochs": fmt.Sprint(opt.Epochs), "batch_size": fmt.Sprint(opt.BatchSize),
		"lr": fmt.Sprint(opt.LR), "final_lr": fmt.Sprint(opt.FinalLR), "dropout": fmt.Sprint(opt.Dropout),
		"weight_decay": fmt.Sprint(opt.WeightDecay), "clip_norm": fmt.Sprint(opt.ClipNorm),
		"shards":    fmt.Sprint(opt.shards()),
		"data":      opt.Data,
		"stability": fmt.Sprint(opt.Stability), "stability_eps": fmt.Sprint(opt.StabilityEps), "stability_ramp": fmt.Sprint(opt.StabilityRamp),
	}
	if opt.LabelSmoothing != 0 {
		// Only when set, so that checkpoints written before the option existed still resume.
		s["label_smoothing"] = fmt.Sprint(opt.LabelSmoothing)
	}
	if opt.IBP != 0 {
		s["ibp"], s["ibp_eps"], s["ibp_ramp"] = fmt.Sprint(opt.IBP), fmt.Sprint(opt.IBPEps), fmt.Sprint(opt.IBPRamp)
	}
	// Only when not the default, so that checkpoints of interval-bound runs
	// written before these options existed still resume.
	if opt.bound() != model.BoundInterval {
		s["ibp_bound"] = string(opt.bound())
	}
	if opt.IBPAttack {
		s["ibp_attack"] = "true"
	}
	if opt.SABR > 0 {
		s["ibp_sabr"] = fmt.Sprint(opt.SABR)
	}
	if opt.distilling() {
		s["distill"], s["distill_temp"], s["teacher"] = fmt.Sprint(opt.Distill), fmt.Sprint(opt.DistillTemp), opt.TeacherID
		if opt.DistillHardEOS {
			s["distill_hard_eos"] = "true"
		}
	}
	return s
}

// saveCheckpoint stores weights, Adam moments, the settings and the
// position in one safetensors file, sealed with its sha256
// (safetensors.WriteSealed), so that a checkpoint changed since is refused
// rather than resumed into another model. Weights and moments are float32
// in memory and stored as such, so resuming is exact.
func saveCheckpoint(dir string, d model.Decoder[float32], adam *ad.Adam[float32], set map[string]string, at position) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	step, mom, vel := adam.State()
	meta := map[string]string{"epoch": fmt.Sprint(at.epoch), "step": fmt.Sprint(at.step),
		"epoch_loss_sum": strconv.FormatFloat(at.loss, 'g', -1, 64), "adam_step": fmt.Sprint(step)}
	for k, v := range set {
		meta["setting."+k] = v
	}
	f := &safetensors.File{Metadata: meta}
	for i, p := range d.Params() {
		f.Tensors = append(f.Tensors,
			safetensors.F32(p.Name, p.W.Shape, p.W.Data),
			safetensors.F32("adam.m."+p.Name, p.W.Shape, narrow(mom[i])),
			safetensors.F32("adam.v."+p.Name, p.W.Shape, narrow(vel[i])))
	}
	return safetensors.WriteFileSealed(filepath.Join(dir, checkpointFile), f)
}

// narrow converts moments back to the float32 they were (exactly).
func narrow(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// loadCheckpoint restores a checkpoint if one exists and returns how far
// its run got (nothing done when starting fresh). A checkpoint written
// with other settings is refused, naming every setting that differs, and
// one that does not match its checksum, naming the file (checkpoints from
// before the checksum resume unchecked).
func loadCheckpoint(dir string, d model.Decoder[float32], adam *ad.Adam[float32], set map[string]string) (position, error) {
	path := filepath.Join(dir, checkpointFile)
	f, err := safetensors.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return position{}, nil
	}
	if err != nil {
		return position{}, err
	}
	var diff []string
	for k, v := range set {
		if got, ok := f.Metadata["setting."+k]; (!ok && v != "") || got != v {
			diff = append(diff, fmt.Sprintf("%s %q (this run: %q)", k, got, v))
		}
	}
	if len(diff) > 0 {
		slices.Sort(diff)
		return position{}, fmt.Errorf("%s: checkpoint was written with other settings: %s; resume with the same settings or use another --out", path, strings.Join(diff, ", "))
	}
	var at position
	var step int
	for _, m := range []struct {
		key string
		v   any
	}{{"epoch", &at.epoch}, {"adam_step", &step}, {"step", &at.step}, {"epoch_loss_sum", &at.loss}} {
		raw, ok := f.Metadata[m.key]
		if !ok && (m.key == "step" || m.key == "epoch_loss_sum") {
			continue // checkpoints of whole epochs only, before mid-epoch ones
		}
		if _, err := fmt.Sscan(raw, m.v); err != nil {
			return position{}, fmt.Errorf("%s: bad %s metadata %q: %w", path, m.key, raw, err)
		}
	}
	if at.epoch < 0 || at.step < 0 || step < 0 {
		return position{}, fmt.Errorf("%s: negative position (epoch %d, step %d, adam step %d)", path, at.epoch, at.step, step)
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
			return position{}, err
		}
		for j, v := range w {
			p.W.Data[j] = float32(v)
		}
		if mom[i], err = get("adam.m."+p.Name, p.W.Len()); err != nil {
			return position{}, err
		}
		if vel[i], err = get("adam.v."+p.Name, p.W.Len()); err != nil {
			return position{}, err
		}
	}
	adam.SetState(step, mom, vel)
	return at, nil
}

// TokenRate is the target tokens per second of the last steps of a run,
// for progress lines: the rate over a window of steps, not since the
// start, so a resumed run or a slow first step does not skew it.
type TokenRate struct {
	// Window is how many steps the rate spans (0: 50).
	Window int
	steps  []Progress
}

// Add records a step and returns the rate over the window so far (0 until
// two steps are in it).
func (r *TokenRate) Add(p Progress) float64 {
	w := r.Window
	if w <= 0 {
		w = 50
	}
	r.steps = append(r.steps, p)
	if len(r.steps) > w {
		r.steps = r.steps[1:]
	}
	n := len(r.steps)
	if n < 2 {
		return 0
	}
	toks := 0
	for _, s := range r.steps[1:] {
		toks += s.Tokens
	}
	return float64(toks) / (r.steps[n-1].Elapsed - r.steps[0].Elapsed).Seconds()
}
