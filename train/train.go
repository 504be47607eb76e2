// Package train trains and evaluates lenspec's models: minibatch Adam on the
// teacher-forced cross-entropy, with per-epoch checkpoints so an interrupted
// run resumes, and exact-sequence evaluation with greedy decoding.
package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/safetensors"
)

// Options controls a training run. Every random choice (initialisation,
// shuffling) derives from Seed.
type Options struct {
	Seed      uint64
	Epochs    int
	BatchSize int
	LR        float64
	// FinalLR is reached by cosine decay from LR over the run (0: no decay).
	FinalLR float64
	// Dropout is the drop probability in the encoder's fully connected
	// layers; WeightDecay is AdamW's decoupled decay on weight matrices
	// (not biases or embeddings). Both fight the encoder's tendency to
	// memorise digit positions.
	Dropout, WeightDecay float64
	// Shift moves each training canvas horizontally by a random amount
	// that keeps every digit inside it (the label is unchanged): new
	// placements of the same digits, which teaches the encoder the
	// translation invariance it otherwise learns position by position.
	Shift bool
	// ClipNorm, if positive, rescales the gradient to this global L2 norm
	// when it is larger (ReLU RNNs have occasional gradient spikes).
	ClipNorm float64
	// Stability, if positive, weighs the ReLU-stability regulariser
	// (model.StabilityLoss) added to the loss, computed on every batch over
	// the ball of radius StabilityEps around each (shifted) canvas. The
	// radius ramps up linearly over the first StabilityRamp of the steps
	// (a fraction in [0, 1]) so that the model first learns the task.
	// Verification-friendly training: fewer unstable ReLUs make bounds
	// tighter and MIPs smaller.
	Stability, StabilityEps, StabilityRamp float64
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

// DefaultOptions are the settings that produced models/mmnist-rnn.
func DefaultOptions() Options {
	return Options{Seed: 1, Epochs: 20, BatchSize: 64, LR: 3e-3, FinalLR: 1e-4, WeightDecay: 0.01, Shift: true, ClipNorm: 5}
}

// Captioner trains m on ds in place and returns the mean loss of the last
// epoch.
func Captioner(ctx context.Context, m *model.Captioner[float32], ds *multimnist.Dataset, opt Options) (float64, error) {
	if opt.Epochs <= 0 || opt.BatchSize <= 0 || !(opt.LR > 0) {
		return 0, fmt.Errorf("train: epochs %d, batch size %d and learning rate %v must be positive", opt.Epochs, opt.BatchSize, opt.LR)
	}
	if ds.N < opt.BatchSize {
		return 0, fmt.Errorf("train: %d examples is fewer than one batch of %d", ds.N, opt.BatchSize)
	}
	params := m.Params()
	adam := ad.NewAdam(params, opt.LR)
	adam.WeightDecay = opt.WeightDecay
	adam.Decay = func(p *ad.Param[float32]) bool {
		return strings.HasSuffix(p.Name, "weight") && !strings.Contains(p.Name, "embedding")
	}
	startEpoch := 0
	if opt.CheckpointDir != "" {
		e, err := loadCheckpoint(opt.CheckpointDir, m, adam, opt.Seed)
		if err != nil {
			return 0, err
		}
		startEpoch = e
	}
	perEpoch := ds.N / opt.BatchSize
	total := perEpoch * opt.Epochs
	size := m.Cfg.InputSize()
	buf := make([]float32, opt.BatchSize*size)
	labels := make([][]int, opt.BatchSize)
	start := time.Now()
	var epochLoss float64
	for epoch := startEpoch; epoch < opt.Epochs; epoch++ {
		// A fresh source per epoch, derived from the seed, makes a resumed run
		// shuffle exactly as an uninterrupted one.
		rng := rand.New(rand.NewPCG(opt.Seed, uint64(epoch)+1))
		perm := rng.Perm(ds.N)
		epochLoss = 0
		for s := 0; s < perEpoch; s++ {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			step := epoch*perEpoch + s
			adam.LR = cosine(opt.LR, opt.FinalLR, step, total)
			idx := perm[s*opt.BatchSize : (s+1)*opt.BatchSize]
			multimnist.Normalize(buf, ds, idx)
			if opt.Shift {
				shiftCanvases(buf, ds, idx, rng)
			}
			for i, j := range idx {
				labels[i] = ds.Labels[j]
			}
			for _, p := range params {
				p.ZeroGrad()
			}
			tp := ad.NewTrainingTape[float32]()
			x := tp.Const(ad.FromSlice(buf, opt.BatchSize, size))
			loss := m.TrainLoss(tp, x, labels, opt.Dropout, rng)
			unstable := 0
			if opt.Stability > 0 {
				eps := opt.StabilityEps
				if ramp := opt.StabilityRamp * float64(total); float64(step) < ramp {
					eps *= float64(step) / ramp
				}
				var rs *ad.Node[float32]
				rs, unstable = m.StabilityLoss(tp, x, eps)
				loss = tp.Add(loss, tp.Scale(rs, float32(opt.Stability)))
			}
			if err := tp.Backward(loss); err != nil {
				return 0, err
			}
			l := float64(loss.Value.Data[0])
			if math.IsNaN(l) || math.IsInf(l, 0) {
				return 0, fmt.Errorf("train: loss became %v at step %d (lower the learning rate)", l, step)
			}
			if opt.ClipNorm > 0 {
				clipGrad(params, opt.ClipNorm)
			}
			adam.Step()
			epochLoss += l
			if opt.Progress != nil {
				opt.Progress(Progress{Epoch: epoch + 1, Epochs: opt.Epochs, Step: step + 1, Steps: total, Loss: l, Unstable: unstable, Elapsed: time.Since(start)})
			}
		}
		epochLoss /= float64(perEpoch)
		if opt.CheckpointDir != "" {
			if err := saveCheckpoint(opt.CheckpointDir, m, adam, opt.Seed, epoch+1); err != nil {
				return 0, err
			}
		}
	}
	return epochLoss, nil
}

// shiftCanvases shifts each normalised canvas in buf horizontally by a
// uniform amount keeping its digits inside, filling with background (−1).
func shiftCanvases(buf []float32, ds *multimnist.Dataset, idx []int, rng *rand.Rand) {
	const h, w, digit = multimnist.Height, multimnist.Width, 28
	row := make([]float32, w)
	for k, i := range idx {
		offs := ds.Offsets[i]
		lo, hi := -offs[0], w-digit-offs[len(offs)-1]
		d := lo + rng.IntN(hi-lo+1)
		if d == 0 {
			continue
		}
		img := buf[k*h*w : (k+1)*h*w]
		for y := 0; y < h; y++ {
			r := img[y*w : (y+1)*w]
			for x := range row {
				row[x] = -1
				if sx := x - d; sx >= 0 && sx < w {
					row[x] = r[sx]
				}
			}
			copy(r, row)
		}
	}
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

// saveCheckpoint stores weights, Adam moments and the epoch count in one
// safetensors file (float64, so resuming is exact).
func saveCheckpoint(dir string, m *model.Captioner[float32], adam *ad.Adam[float32], seed uint64, epoch int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	step, mom, vel := adam.State()
	f := &safetensors.File{Metadata: map[string]string{
		"epoch": fmt.Sprint(epoch), "adam_step": fmt.Sprint(step), "seed": fmt.Sprint(seed)}}
	for i, p := range m.Params() {
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
// of finished epochs (0 when starting fresh).
func loadCheckpoint(dir string, m *model.Captioner[float32], adam *ad.Adam[float32], seed uint64) (int, error) {
	path := filepath.Join(dir, checkpointFile)
	f, err := safetensors.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var epoch, step int
	var fileSeed uint64
	if _, err := fmt.Sscan(f.Metadata["epoch"], &epoch); err != nil {
		return 0, fmt.Errorf("%s: bad epoch metadata: %w", path, err)
	}
	if _, err := fmt.Sscan(f.Metadata["adam_step"], &step); err != nil {
		return 0, fmt.Errorf("%s: bad adam_step metadata: %w", path, err)
	}
	if _, err := fmt.Sscan(f.Metadata["seed"], &fileSeed); err != nil || fileSeed != seed {
		return 0, fmt.Errorf("%s: checkpoint is for seed %q, this run uses %d (use another --out)", path, f.Metadata["seed"], seed)
	}
	params := m.Params()
	mom := make([][]float64, len(params))
	vel := make([][]float64, len(params))
	get := func(name string, n int) ([]float64, error) {
		t, ok := f.Tensor(name)
		if !ok {
			return nil, fmt.Errorf("%s: missing tensor %q", path, name)
		}
		v, err := t.Float64s()
		if err != nil || len(v) != n {
			return nil, fmt.Errorf("%s: tensor %q does not match the model (%v)", path, name, err)
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
