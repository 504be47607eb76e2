package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
	"github.com/lenspec/lenspec/spec"
	"github.com/lenspec/lenspec/train"
)

// PeerData are the inputs both sides of the peer benchmark run on: the
// same bytes, handed to the PyTorch peer in a safetensors file. A model
// with continuous inputs (the captioner, bench/peer.py) takes Decode,
// Train and PGD; a translator (bench/peer_nmt.py) takes Sources, Train
// sources in TrainSources; both take TrainLabels.
type PeerData struct {
	// Decode are inputs decoded greedily (the 1,000 test canvases),
	// one after the other.
	Decode []float32
	// Train and TrainLabels are one training batch (64 canvases or
	// sentences) and their label token sequences.
	Train       []float32
	TrainLabels [][]int
	// PGD are the centres of the PGD batch (50 canvases).
	PGD []float32
	// Sources are token sequences translated greedily (a dev split), in
	// order of length so that both sides' batches pad alike;
	// TrainSources are the training batch's sources.
	Sources, TrainSources [][]int
}

// PeerOptions configures the peer benchmark.
//
// Each operation runs in rounds until its ratio is known well enough:
// at least MinRounds and at most Rounds, stopping early once the ratio's
// confidence interval (CILevel) lies within Tolerance of it, or before a
// round that would take the operation's rounds past Budget. A long
// operation (a translation of the dev split takes seconds) needs few runs
// and few rounds for a tight ratio; a short one (a 5-ms training step)
// needs many runs per round to rise above the timer's and the scheduler's
// noise: each side makes enough runs per round to take RoundTime, at most
// Reps.
type PeerOptions struct {
	Python string // interpreter (default /usr/bin/python3, Debian's, with python3-torch)
	Script string // bench/peer.py
	Model  string // the model directory both sides load
	// Rounds and MinRounds are the most and the fewest interleaved rounds
	// per operation (lenspec on one thread, PyTorch, lenspec on all cores).
	Rounds, MinRounds int
	// Tolerance is the largest distance, relative to the ratio, from the
	// ratio to either end of its confidence interval at which an
	// operation stops before Rounds (0: never before).
	Tolerance float64
	// Budget bounds an operation's rounds once MinRounds are run (0: none).
	Budget time.Duration
	// RoundTime is what each side's timed runs of a round should add up to,
	// and Reps the most runs per side and round.
	RoundTime time.Duration
	Reps      int
	// DecodeSteps caps decoding (0: the model's); PGD takes a ball of
	// radius PGDEps, learning rate PGDLR and clip PGDClip, as the paper.
	DecodeSteps            int
	PGDEps, PGDLR, PGDClip float64
	// ISA is the instruction set both sides run: ad.ISANative (or "")
	// leaves each its own choice; ad.ISAAVX2 caps PyTorch's kernels at AVX2
	// (ATEN_CPU_CAPABILITY=avx2, DNNL_MAX_CPU_ISA=AVX2) and gives its
	// OpenBLAS lenspec's kernels (OPENBLAS_CORETYPE). lenspec's own side is
	// the caller's to set (ad.UseISA) before calling Peer.
	ISA      string
	Progress func(string)
}

// DefaultPeerOptions are the settings docs/BENCHMARKS.md reports (make
// bench-peer): 5 to 15 rounds, stopping at ±5 % or before a round past 2
// minutes of an operation's rounds, each side's runs taking half a second
// per round (at most 100 runs).
func DefaultPeerOptions() PeerOptions {
	return PeerOptions{Python: "/usr/bin/python3", Rounds: 15, MinRounds: 5, Tolerance: 0.05, Budget: 2 * time.Minute,
		RoundTime: 500 * time.Millisecond, Reps: 100, PGDEps: 0.1, PGDLR: 0.0005, PGDClip: 1}
}

// PeerOp is one operation's times: medians over every timed run, lenspec
// on one thread, lenspec on all cores (where it parallelises), PyTorch on
// one thread. Ratio is the median over the rounds of each round's ratio
// (lenspec's one-thread median over PyTorch's median in that round, so
// that both halves of a ratio ran under the same load of a shared
// machine), RatioN the same for lenspec on all cores; RatioLo and RatioHi
// bound Ratio's confidence interval (CILevel; 0 when the rounds are too
// few for one).
type PeerOp struct {
	Name        string    `json:"name"`
	Lenspec1    float64   `json:"lenspec_1thread_seconds"`
	LenspecN    float64   `json:"lenspec_all_cores_seconds"`
	Torch       float64   `json:"pytorch_1thread_seconds"`
	Ratio       float64   `json:"ratio"`
	RatioN      float64   `json:"ratio_all_cores"`
	RatioLo     float64   `json:"ratio_ci_lo"`
	RatioHi     float64   `json:"ratio_ci_hi"`
	RoundRatios []float64 `json:"round_ratios"`
	Rounds      int       `json:"rounds"`
	Runs        int       `json:"runs"`    // timed runs per side, all rounds
	Stop        string    `json:"stop"`    // StopConverged, StopBudget or StopCap
	Seconds     float64   `json:"seconds"` // wall time of the rounds, warm-up included
}

// PyTorch is the peer's side of a run: its version and the kernels and
// threads it ran with, as it reports them.
type PyTorch struct {
	Version string `json:"version"`
	// BLAS is its OpenBLAS and core type; CPUCapability the instruction
	// set of ATen's kernels, OneDNN that of oneDNN's (its convolutions).
	BLAS          string `json:"blas"`
	CPUCapability string `json:"cpu_capability"`
	OneDNN        string `json:"onednn_isa"`
	Threads       int    `json:"threads"`
	// Settings are the KernelSettings in its environment, NAME=value.
	Settings []string `json:"settings,omitempty"`
}

// Describe is p in a line of text.
func (p PyTorch) Describe() string {
	s := fmt.Sprintf("PyTorch %s: ATen %s, oneDNN %s, %s, %d thread(s)", p.Version, p.CPUCapability, p.OneDNN, p.BLAS, p.Threads)
	if len(p.Settings) > 0 {
		s += "; " + strings.Join(p.Settings, " ")
	}
	return s
}

// PeerReport is a peer benchmark run.
type PeerReport struct {
	Machine Machine  `json:"machine"`
	PyTorch PyTorch  `json:"pytorch"`
	Ops     []PeerOp `json:"ops"`
	// Tokens: decoded outputs compared, and how many differ (only ties may).
	Compared, Differ, DifferTies int
	// Loss and TorchLoss are the translator's training loss on the train
	// batch at the same weights, lenspec's (float64) and PyTorch's.
	Loss      float64 `json:"loss,omitempty"`
	TorchLoss float64 `json:"torch_loss,omitempty"`
	// SetupSeconds is the time before the first round: starting PyTorch,
	// loading the model on both sides and checking they do the same work.
	SetupSeconds float64 `json:"setup_seconds"`
}

// Peer times d's operations in lenspec and in its PyTorch peer on the
// same inputs, interleaved round by round, after checking both do the same
// work (the same tokens, and for the translator the same training loss):
// for the captioner (bench/peer.py) decoding, a training step and a PGD
// iteration; for the translator (bench/peer_nmt.py) translation and a
// training step. Each side runs each operation once before its first
// round, a warm-up not counted (its time sets the first round's runs),
// then rounds as opt says; rounds of more than one run per side start
// each side with one more untimed run.
func Peer(ctx context.Context, d model.Decoder[float32], data PeerData, opt PeerOptions) (*PeerReport, error) {
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	start := time.Now()
	steps := opt.DecodeSteps
	if steps <= 0 {
		steps = d.MaxSteps()
	}
	var side peerSide
	switch d.Input().Kind {
	case model.Continuous:
		side = &captionerPeer{d: d, data: data, steps: steps, opt: opt}
	default:
		side = &translatorPeer{d: d, data: data, steps: steps}
	}
	progress := opt.Progress
	if progress == nil {
		progress = func(string) {}
	}
	dir, err := os.MkdirTemp("", "lenspec-peer-")
	if err != nil {
		return nil, fmt.Errorf("bench: peer inputs: %w", err)
	}
	defer os.RemoveAll(dir)
	inputs := filepath.Join(dir, "inputs.safetensors")
	if err := side.writeInputs(inputs); err != nil {
		return nil, err
	}
	isa := opt.ISA
	if isa == "" {
		isa = ad.ISANative
	}
	machine := DescribeMachine(isa) // the load average before PyTorch starts
	env := peerEnv(isa, ad.BLASName(), machine.BLASTuned != "")
	py, err := startPeer(ctx, opt.Python, opt.Script, env)
	if err != nil {
		return nil, err
	}
	defer py.close()
	var hello struct {
		Torch      string `json:"torch"`
		BLAS       string `json:"blas"`
		Capability string `json:"capability"`
		OneDNN     string `json:"onednn"`
		Threads    int    `json:"threads"`
	}
	if err := py.call(&hello, "load %s %s", opt.Model, inputs); err != nil {
		return nil, err
	}
	progress(fmt.Sprintf("PyTorch %s started, model and inputs loaded in %.1f s", hello.Torch, time.Since(start).Seconds()))
	rep := &PeerReport{Machine: machine, PyTorch: PyTorch{Version: hello.Torch, BLAS: hello.BLAS, CPUCapability: hello.Capability,
		OneDNN: hello.OneDNN, Threads: hello.Threads, Settings: settingsIn(env)}}
	if err := side.check(ctx, py, rep, progress); err != nil {
		return nil, err
	}
	ops1, err := side.ops(1)
	if err != nil {
		return nil, err
	}
	opsN, err := side.ops(runtime.NumCPU())
	if err != nil {
		return nil, err
	}
	rep.SetupSeconds = time.Since(start).Seconds()
	progress(fmt.Sprintf("set up in %.1f s", rep.SetupSeconds))
	for _, name := range side.names() {
		op, err := peerRounds(ctx, name, ops1[name], opsN[name], py, opt, progress)
		if err != nil {
			return nil, err
		}
		rep.Ops = append(rep.Ops, op)
	}
	rep.Machine.Finish()
	return rep, nil
}

// peerEnv is the PyTorch peer's environment: this process's, one thread in
// every library PyTorch may use, for ad.ISAAVX2 its kernels capped at AVX2,
// and its OpenBLAS on the core type lenspec's runs (blas, as ad.BLASName
// gives it) for ad.ISAAVX2 or where lenspec replaced the kernels OpenBLAS
// chose (tuned), so that both sides run the best kernels.
func peerEnv(isa, blas string, tuned bool) []string {
	env := append(os.Environ(), "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1")
	if isa == ad.ISAAVX2 {
		env = append(env, "ATEN_CPU_CAPABILITY=avx2", "DNNL_MAX_CPU_ISA=AVX2")
	} else if !tuned {
		return env
	}
	if core, ok := strings.CutPrefix(blas, "openblas ("); ok {
		env = append(env, "OPENBLAS_CORETYPE="+strings.TrimSuffix(core, ")"))
	}
	return env
}

// settingsIn lists the KernelSettings env sets (the last value of each)
// that choose PyTorch's kernels: all but lenspec's own.
func settingsIn(env []string) []string {
	var out []string
	for _, k := range KernelSettings[1:] {
		v, ok := "", false
		for _, kv := range env {
			if val, found := strings.CutPrefix(kv, k+"="); found {
				v, ok = val, true
			}
		}
		if ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// peerRounds times one operation: the warm-up on each side, then rounds of
// lenspec on one thread, PyTorch, lenspec on all cores, until roundsDone.
func peerRounds(ctx context.Context, name string, one, all func() error, py *peerProc, opt PeerOptions, progress func(string)) (PeerOp, error) {
	start := time.Now()
	op := PeerOp{Name: name}
	torch := func(warm, runs int) ([]float64, error) {
		var ts struct{ Seconds []float64 }
		if err := py.call(&ts, "time %s %d %d", name, runs, warm); err != nil {
			return nil, err
		}
		if len(ts.Seconds) != runs {
			return nil, fmt.Errorf("bench: PyTorch peer timed %s %d times, not %d", name, len(ts.Seconds), runs)
		}
		return ts.Seconds, nil
	}
	w1, err := timeOn(1, 0, 1, one)
	if err != nil {
		return op, err
	}
	wt, err := torch(0, 1)
	if err != nil {
		return op, err
	}
	if _, err := timeOn(runtime.NumCPU(), 0, 1, all); err != nil {
		return op, err
	}
	progress(fmt.Sprintf("%s: warm-up %.3f s in lenspec, %.3f s in PyTorch", name, w1[0], wt[0]))
	// The first round's runs follow the warm-up's times, each later
	// round's the round before's medians: a first run is slower than the
	// rest, and the load of a shared machine changes.
	runs := runsPerRound([]float64{w1[0], wt[0]}, opt.RoundTime, opt.Reps)
	roundsStart := time.Now()
	var ones, alls, torches, ratiosN []float64
	for {
		if err := ctx.Err(); err != nil {
			return op, err
		}
		// A short operation's first run in a round would find the caches
		// the other side left: one more untimed run per side. A run that
		// fills the round alone (seconds of work) is not slowed by that
		// measurably, and its rounds would take twice as long.
		warm := 0
		if runs > 1 {
			warm = 1
		}
		t1, err := timeOn(1, warm, runs, one)
		if err != nil {
			return op, err
		}
		tt, err := torch(warm, runs)
		if err != nil {
			return op, err
		}
		tn, err := timeOn(runtime.NumCPU(), warm, runs, all)
		if err != nil {
			return op, err
		}
		ones, torches, alls = append(ones, t1...), append(torches, tt...), append(alls, tn...)
		r, rn := midMedian(t1)/midMedian(tt), midMedian(tn)/midMedian(tt)
		op.RoundRatios, ratiosN = append(op.RoundRatios, r), append(ratiosN, rn)
		op.Runs += runs
		progress(fmt.Sprintf("%s round %d: ratio %.3f (all cores %.3f), %d runs per side", name, len(op.RoundRatios), r, rn, runs))
		runs = runsPerRound([]float64{midMedian(t1), midMedian(tt)}, opt.RoundTime, opt.Reps)
		if stop, why := roundsDone(op.RoundRatios, time.Since(roundsStart), opt); stop {
			op.Stop = why
			break
		}
	}
	op.Rounds = len(op.RoundRatios)
	op.Lenspec1, op.LenspecN, op.Torch = midMedian(ones), midMedian(alls), midMedian(torches)
	op.Ratio, op.RatioN = midMedian(op.RoundRatios), midMedian(ratiosN)
	if lo, hi, ok := medianCI(op.RoundRatios, CILevel); ok {
		op.RatioLo, op.RatioHi = lo, hi
	}
	op.Seconds = time.Since(start).Seconds()
	progress(fmt.Sprintf("%s: %d rounds (%s) in %.1f s", name, op.Rounds, op.Stop, op.Seconds))
	return op, nil
}

// peerSide is one architecture's half of the peer benchmark.
type peerSide interface {
	// writeInputs writes the inputs file the peer script reads.
	writeInputs(path string) error
	// check compares the two sides' work, filling rep's token counts,
	// and says through progress what took how long.
	check(ctx context.Context, py *peerProc, rep *PeerReport, progress func(string)) error
	// ops are lenspec's operations set up for threads cores, by name.
	ops(threads int) (map[string]func() error, error)
	names() []string
}

// compareTokens counts, into rep, the outputs where PyTorch's tokens,
// lenspec's float32 decode and its float64 replay differ, and refuses a
// difference away from a tie.
func compareTokens(rep *PeerReport, torch [][]int, ours, replay []model.Result) error {
	if len(torch) != len(ours) {
		return fmt.Errorf("bench: PyTorch decoded %d inputs, lenspec %d", len(torch), len(ours))
	}
	for i := range ours {
		rep.Compared++
		if !slices.Equal(torch[i], ours[i].Tokens) || !slices.Equal(ours[i].Tokens, replay[i].Tokens) {
			rep.Differ++
			if replay[i].MinRelMargin < 1e-4 {
				rep.DifferTies++
			}
		}
	}
	if rep.Differ > rep.DifferTies {
		return fmt.Errorf("bench: %d of %d outputs differ between PyTorch, lenspec float32 and float64 replay away from ties: not equal work", rep.Differ-rep.DifferTies, rep.Compared)
	}
	return nil
}

// captionerPeer is the captioner's side (bench/peer.py).
type captionerPeer struct {
	d     model.Decoder[float32]
	data  PeerData
	steps int
	opt   PeerOptions
}

func (c *captionerPeer) names() []string { return []string{"decode", "train-step", "pgd"} }

func (c *captionerPeer) writeInputs(path string) error {
	return writePeerInputs(path, c.data, c.d.Input(), c.steps, c.opt)
}

// check: the same tokens, PyTorch's against lenspec's float32 decode, and
// both against the float64 replay; only ties may differ.
func (c *captionerPeer) check(ctx context.Context, py *peerProc, rep *PeerReport, progress func(string)) error {
	x64 := make([]float64, len(c.data.Decode))
	for i, v := range c.data.Decode {
		x64[i] = float64(v)
	}
	return checkTokens(ctx, py, rep, progress, c.d, model.Batch[float32]{X: c.data.Decode}, model.Batch[float64]{X: x64}, c.steps)
}

// checkTokens decodes b in PyTorch, in lenspec and in lenspec's float64
// replay of it (b64, the same inputs), and compares the tokens
// (compareTokens).
func checkTokens(ctx context.Context, py *peerProc, rep *PeerReport, progress func(string), d model.Decoder[float32], b model.Batch[float32], b64 model.Batch[float64], steps int) error {
	t0 := time.Now()
	var tok struct{ Tokens [][]int }
	if err := py.call(&tok, "tokens"); err != nil {
		return err
	}
	t1 := time.Now()
	ours, err := model.Decode(ctx, d, b, steps)
	if err != nil {
		return fmt.Errorf("bench: decode for the check: %w", err)
	}
	t2 := time.Now()
	d64, err := model.Cast[float64](d)
	if err != nil {
		return err
	}
	replay, err := model.Decode(ctx, d64, b64, steps)
	if err != nil {
		return fmt.Errorf("bench: float64 replay for the check: %w", err)
	}
	progress(fmt.Sprintf("decoded the %d inputs to compare: PyTorch %.1f s, lenspec %.1f s, its float64 replay %.1f s",
		len(ours), t1.Sub(t0).Seconds(), t2.Sub(t1).Seconds(), time.Since(t2).Seconds()))
	return compareTokens(rep, tok.Tokens, ours, replay)
}

func (c *captionerPeer) ops(threads int) (map[string]func() error, error) {
	return lenspecOps(c.d, c.data, c.d.Input(), c.steps, threads, c.opt)
}

// translatorPeer is the translator's side (bench/peer_nmt.py).
type translatorPeer struct {
	d     model.Decoder[float32]
	data  PeerData
	steps int
}

func (t *translatorPeer) names() []string { return []string{"translate", "nmt-train-step"} }

// writeInputs writes the tensors bench/peer_nmt.py documents: sources
// padded with the pad id and their lengths, the training batch, and the
// settings [step cap, learning rate 1e-9].
func (t *translatorPeer) writeInputs(path string) error {
	if len(t.data.Sources) == 0 || len(t.data.TrainSources) == 0 || len(t.data.TrainSources) != len(t.data.TrainLabels) {
		return fmt.Errorf("bench: the translator peer needs sources and a training batch (%d sources, %d training sources, %d labels)",
			len(t.data.Sources), len(t.data.TrainSources), len(t.data.TrainLabels))
	}
	pad := t.d.Input().Special[0]
	padded := func(name string, seqs [][]int, fill int) []safetensors.Tensor {
		width := 1
		for _, s := range seqs {
			width = max(width, len(s))
		}
		ids, lens := make([]int32, len(seqs)*width), make([]int32, len(seqs))
		for i, s := range seqs {
			lens[i] = int32(len(s))
			for j := range width {
				ids[i*width+j] = int32(fill)
				if j < len(s) {
					ids[i*width+j] = int32(s[j])
				}
			}
		}
		return []safetensors.Tensor{safetensors.I32(name, []int{len(seqs), width}, ids), safetensors.I32(name+"_len", []int{len(seqs)}, lens)}
	}
	f := &safetensors.File{}
	f.Tensors = append(f.Tensors, padded("src", t.data.Sources, pad)...)
	f.Tensors = append(f.Tensors, padded("train_src", t.data.TrainSources, pad)...)
	f.Tensors = append(f.Tensors, padded("train_tgt", t.data.TrainLabels, -1)[0])
	f.Tensors = append(f.Tensors, safetensors.F32("settings", []int{2}, []float32{float32(t.steps), 1e-9}))
	return safetensors.WriteFile(path, f)
}

// check: the same tokens (as the captioner's), and the same training
// loss at the same weights.
func (t *translatorPeer) check(ctx context.Context, py *peerProc, rep *PeerReport, progress func(string)) error {
	if err := checkTokens(ctx, py, rep, progress, t.d, model.Batch[float32]{Tokens: t.data.Sources}, model.Batch[float64]{Tokens: t.data.Sources}, t.steps); err != nil {
		return err
	}
	d64, err := model.Cast[float64](t.d)
	if err != nil {
		return err
	}
	var torch struct{ Loss float64 }
	if err := py.call(&torch, "loss"); err != nil {
		return err
	}
	tp := ad.NewTape[float64](false)
	loss, err := model.TeacherForcedLoss(tp, d64, model.Input[float64]{Tokens: t.data.TrainSources}, t.data.TrainLabels)
	if err != nil {
		return err
	}
	ls := loss.Value.Data[0]
	if math.Abs(ls-torch.Loss) > 1e-4*math.Max(1, math.Abs(ls)) {
		return fmt.Errorf("bench: training loss %.9g in PyTorch, %.9g in lenspec (float64): not equal work", torch.Loss, ls)
	}
	rep.Loss, rep.TorchLoss = ls, torch.Loss
	return nil
}

// ops: translate the sources (chunks of 256 rows, each until its rows
// stopped, finished rows dropped), and a teacher-forced training step with
// Adam (on as many shards as threads).
func (t *translatorPeer) ops(threads int) (map[string]func() error, error) {
	tr, err := trainerFor(t.d, threads)
	if err != nil {
		return nil, err
	}
	batch := train.Batch{Tokens: t.data.TrainSources, Labels: t.data.TrainLabels}
	return map[string]func() error{
		"translate": func() error {
			_, err := model.Decode(context.Background(), t.d, model.Batch[float32]{Tokens: t.data.Sources}, t.steps)
			return err
		},
		"nmt-train-step": func() error {
			_, err := tr.Step(batch, 0, 1)
			return err
		},
	}, nil
}

// trainerFor returns a Trainer of a copy of d (the benchmark's steps must
// not change the model) with plain Adam at a learning rate too small to
// matter, as the peers', on as many shards as threads.
func trainerFor(d model.Decoder[float32], threads int) (*train.Trainer, error) {
	dt, err := model.Cast[float32](d)
	if err != nil {
		return nil, err
	}
	to := train.DefaultOptions()
	to.LR, to.FinalLR, to.WeightDecay, to.ClipNorm, to.Shards = 1e-9, 0, 0, 0, threads
	return train.NewTrainer(dt, to)
}

// lenspecOps are lenspec's side of each operation, doing the work the
// peer's do, set up to run on threads cores: decode the decode inputs
// (chunks of 256, each until all its rows stopped), a teacher-forced
// training step with Adam (on as many shards as threads), one PGD
// iteration on J̃ (its targets split over threads).
func lenspecOps(d model.Decoder[float32], data PeerData, in model.InputSpec, steps, threads int, opt PeerOptions) (map[string]func() error, error) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
	size := in.Size()
	tr, err := trainerFor(d, threads)
	if err != nil {
		return nil, err
	}
	batch := train.Batch{X: data.Train, Labels: data.TrainLabels}
	var targets []attack.Target[[]float64]
	for i := 0; i < len(data.PGD)/size; i++ {
		c := make([]float64, size)
		for j := range c {
			c[j] = float64(data.PGD[i*size+j])
		}
		ball, err := spec.NewBall(c, opt.PGDEps, in.Min, in.Max)
		if err != nil {
			return nil, err
		}
		targets = append(targets, attack.Target[[]float64]{Set: attack.NewContinuous(ball), K: 1 << 20, Stream: uint64(i)})
	}
	po := attack.DefaultPGD()
	po.Steps, po.LR, po.Eps, po.MaxSteps, po.EarlyStop = 1<<30, opt.PGDLR, opt.PGDClip, steps, false
	run, err := attack.NewPGDRun(d, targets, po)
	if err != nil {
		return nil, err
	}
	return map[string]func() error{
		"decode": func() error {
			_, err := model.Decode(context.Background(), d, model.Batch[float32]{X: data.Decode}, steps)
			return err
		},
		"train-step": func() error {
			_, err := tr.Step(batch, 0, 1)
			return err
		},
		"pgd": func() error {
			_, err := run.Step()
			return err
		},
	}, nil
}

// timeOn runs f warm times untimed, then reps times, with n Go threads
// (and the one BLAS thread per GEMM lenspec sets), returning each timed
// run's seconds.
func timeOn(n, warm, reps int, f func() error) ([]float64, error) {
	prev := runtime.GOMAXPROCS(n)
	defer runtime.GOMAXPROCS(prev)
	for range warm {
		if err := f(); err != nil {
			return nil, err
		}
	}
	ts := make([]float64, reps)
	for i := range ts {
		start := time.Now()
		if err := f(); err != nil {
			return nil, err
		}
		ts[i] = time.Since(start).Seconds()
	}
	return ts, nil
}

func medianOf(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// writePeerInputs stores the inputs and the settings the peer needs.
func writePeerInputs(path string, data PeerData, in model.InputSpec, steps int, opt PeerOptions) error {
	size := in.Size()
	shape := func(n int) []int { return append([]int{n / size}, in.Shape...) }
	width := 0
	for _, l := range data.TrainLabels {
		width = max(width, len(l))
	}
	labels := make([]float32, len(data.TrainLabels)*width)
	for i, l := range data.TrainLabels {
		for j := range width {
			labels[i*width+j] = -1
			if j < len(l) {
				labels[i*width+j] = float32(l[j])
			}
		}
	}
	f := &safetensors.File{Tensors: []safetensors.Tensor{
		safetensors.F32("decode", shape(len(data.Decode)), data.Decode),
		safetensors.F32("train", shape(len(data.Train)), data.Train),
		safetensors.F32("train_labels", []int{len(data.TrainLabels), width}, labels),
		safetensors.F32("pgd", shape(len(data.PGD)), data.PGD),
		safetensors.F64("settings", []int{7}, []float64{float64(steps), float64(steps), opt.PGDEps, opt.PGDLR, opt.PGDClip, in.Min, in.Max}),
	}}
	return safetensors.WriteFile(path, f)
}

// peerProc is the running PyTorch peer.
type peerProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startPeer(ctx context.Context, python, script string, env []string) (*peerProc, error) {
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("bench: peer script: %w", err)
	}
	cmd := exec.CommandContext(ctx, python, script)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start the PyTorch peer (%s %s): %w (install Debian's python3-torch)", python, script, err)
	}
	return &peerProc{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// call sends one command and decodes its answer into v.
func (p *peerProc) call(v any, format string, args ...any) error {
	cmd := fmt.Sprintf(format, args...)
	if _, err := fmt.Fprintln(p.in, cmd); err != nil {
		return fmt.Errorf("bench: PyTorch peer: %w", err)
	}
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("bench: PyTorch peer did not answer %q: %w", cmd, err)
	}
	var e struct{ Error string }
	if json.Unmarshal(line, &e) == nil && e.Error != "" {
		return fmt.Errorf("bench: PyTorch peer: %s: %s", cmd, e.Error)
	}
	return json.Unmarshal(line, v)
}

func (p *peerProc) close() {
	fmt.Fprintln(p.in, "quit")
	p.in.Close()
	p.cmd.Wait()
}
