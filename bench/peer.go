package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
	"github.com/lenspec/lenspec/spec"
	"github.com/lenspec/lenspec/train"
)

// PeerData are the inputs both sides of the peer benchmark run on: the
// same bytes, handed to the PyTorch peer in a safetensors file.
type PeerData struct {
	// Decode are inputs decoded greedily (the 1,000 test canvases),
	// one after the other.
	Decode []float32
	// Train and TrainLabels are one training batch (64 canvases) and their
	// label token sequences.
	Train       []float32
	TrainLabels [][]int
	// PGD are the centres of the PGD batch (50 canvases).
	PGD []float32
}

// PeerOptions configures the peer benchmark.
type PeerOptions struct {
	Python string // interpreter (default /usr/bin/python3, Debian's, with python3-torch)
	Script string // bench/peer.py
	Model  string // the model directory both sides load
	Rounds int    // interleaved rounds: lenspec, then PyTorch, per operation
	Reps   int    // timed runs per side per round
	// DecodeSteps caps decoding (0: the model's); PGD takes a ball of
	// radius PGDEps, learning rate PGDLR and clip PGDClip, as the paper.
	DecodeSteps            int
	PGDEps, PGDLR, PGDClip float64
	Progress               func(string)
}

// DefaultPeerOptions are the settings docs/BENCHMARKS.md reports.
func DefaultPeerOptions() PeerOptions {
	return PeerOptions{Python: "/usr/bin/python3", Rounds: 7, Reps: 5, PGDEps: 0.1, PGDLR: 0.0005, PGDClip: 1}
}

// PeerOp is one operation's times: medians over every timed run, lenspec
// on one thread, lenspec on all cores (where it parallelises), PyTorch on
// one thread; Ratio is lenspec's one-thread median over PyTorch's.
type PeerOp struct {
	Name     string  `json:"name"`
	Lenspec1 float64 `json:"lenspec_1thread_seconds"`
	LenspecN float64 `json:"lenspec_all_cores_seconds"`
	Torch    float64 `json:"pytorch_1thread_seconds"`
	Ratio    float64 `json:"ratio"`
	RatioN   float64 `json:"ratio_all_cores"`
}

// PeerReport is a peer benchmark run.
type PeerReport struct {
	Torch     string   `json:"torch"`
	TorchBLAS string   `json:"torch_blas"`
	BLAS      string   `json:"blas"`
	Kernels   string   `json:"kernels"`
	Cores     int      `json:"cores"`
	Ops       []PeerOp `json:"ops"`
	// Tokens: decoded outputs compared, and how many differ (only ties may).
	Compared, Differ, DifferTies int
}

// Peer times decoding, a training step and a PGD iteration of d in
// lenspec and in the PyTorch peer (bench/peer.py) on the same inputs,
// interleaved round by round, and checks both decode the same tokens.
func Peer(ctx context.Context, d model.Decoder[float32], data PeerData, opt PeerOptions) (*PeerReport, error) {
	if opt.Rounds < 1 || opt.Reps < 1 {
		return nil, errors.New("bench: peer rounds and reps must be positive")
	}
	in := d.Input()
	if in.Kind != model.Continuous {
		return nil, fmt.Errorf("bench: peer benchmark of %v inputs is not written yet", in.Kind)
	}
	steps := opt.DecodeSteps
	if steps <= 0 {
		steps = d.MaxSteps()
	}
	progress := opt.Progress
	if progress == nil {
		progress = func(string) {}
	}
	dir, err := os.MkdirTemp("", "lenspec-peer-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	inputs := filepath.Join(dir, "inputs.safetensors")
	if err := writePeerInputs(inputs, data, in, steps, opt); err != nil {
		return nil, err
	}
	py, err := startPeer(ctx, opt.Python, opt.Script)
	if err != nil {
		return nil, err
	}
	defer py.close()
	var hello struct {
		Torch string `json:"torch"`
		BLAS  string `json:"blas"`
	}
	if err := py.call(&hello, "load %s %s", opt.Model, inputs); err != nil {
		return nil, err
	}
	rep := &PeerReport{Torch: hello.Torch, TorchBLAS: hello.BLAS, BLAS: ad.BLASName(), Kernels: ad.KernelLevel(), Cores: runtime.NumCPU()}

	// The same tokens: PyTorch's against lenspec's float32 decode, and both
	// against the float64 replay; only ties may differ.
	var tok struct{ Tokens [][]int }
	if err := py.call(&tok, "tokens"); err != nil {
		return nil, err
	}
	ours, err := model.Decode(ctx, d, model.Batch[float32]{X: data.Decode}, steps)
	if err != nil {
		return nil, err
	}
	d64, err := model.Cast[float64](d)
	if err != nil {
		return nil, err
	}
	x64 := make([]float64, len(data.Decode))
	for i, v := range data.Decode {
		x64[i] = float64(v)
	}
	replay, err := model.Decode(ctx, d64, model.Batch[float64]{X: x64}, steps)
	if err != nil {
		return nil, err
	}
	if len(tok.Tokens) != len(ours) {
		return nil, fmt.Errorf("bench: PyTorch decoded %d inputs, lenspec %d", len(tok.Tokens), len(ours))
	}
	for i := range ours {
		rep.Compared++
		same := slices.Equal(tok.Tokens[i], ours[i].Tokens) && slices.Equal(ours[i].Tokens, replay[i].Tokens)
		if !same {
			rep.Differ++
			if replay[i].MinRelMargin < 1e-4 {
				rep.DifferTies++
			}
		}
	}
	if rep.Differ > rep.DifferTies {
		return nil, fmt.Errorf("bench: %d of %d outputs differ between PyTorch, lenspec float32 and float64 replay away from ties: not equal work", rep.Differ-rep.DifferTies, rep.Compared)
	}

	ops1, err := lenspecOps(d, data, in, steps, 1, opt)
	if err != nil {
		return nil, err
	}
	opsN, err := lenspecOps(d, data, in, steps, runtime.NumCPU(), opt)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"decode", "train-step", "pgd"} {
		var one, all, torch []float64
		for round := 0; round < opt.Rounds; round++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			progress(fmt.Sprintf("%s round %d/%d", name, round+1, opt.Rounds))
			t1, err := timeOn(1, opt.Reps, ops1[name])
			if err != nil {
				return nil, err
			}
			var ts struct{ Seconds []float64 }
			if err := py.call(&ts, "time %s %d", name, opt.Reps); err != nil {
				return nil, err
			}
			tn, err := timeOn(runtime.NumCPU(), opt.Reps, opsN[name])
			if err != nil {
				return nil, err
			}
			one, torch, all = append(one, t1...), append(torch, ts.Seconds...), append(all, tn...)
		}
		op := PeerOp{Name: name, Lenspec1: medianOf(one), LenspecN: medianOf(all), Torch: medianOf(torch)}
		op.Ratio, op.RatioN = op.Lenspec1/op.Torch, op.LenspecN/op.Torch
		rep.Ops = append(rep.Ops, op)
	}
	return rep, nil
}

// lenspecOps are lenspec's side of each operation, doing the work the
// peer's do, set up to run on threads cores: decode the decode inputs
// (chunks of 256, each until all its rows stopped), a teacher-forced
// training step with Adam (on as many shards as threads), one PGD
// iteration on J̃ (its targets split over threads).
func lenspecOps(d model.Decoder[float32], data PeerData, in model.InputSpec, steps, threads int, opt PeerOptions) (map[string]func() error, error) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
	size := in.Size()
	// The model's weights must not change: the steps of the benchmark
	// train a copy.
	dt, err := model.Cast[float32](d)
	if err != nil {
		return nil, err
	}
	to := train.DefaultOptions()
	to.LR, to.FinalLR, to.WeightDecay, to.ClipNorm, to.Shards = 1e-9, 0, 0, 0, threads
	tr, err := train.NewTrainer(dt, to)
	if err != nil {
		return nil, err
	}
	batch := train.Batch{X: data.Train, Labels: data.TrainLabels}
	var targets []attack.Target
	for i := 0; i < len(data.PGD)/size; i++ {
		c := make([]float64, size)
		for j := range c {
			c[j] = float64(data.PGD[i*size+j])
		}
		ball, err := spec.NewBall(c, opt.PGDEps, in.Min, in.Max)
		if err != nil {
			return nil, err
		}
		targets = append(targets, attack.Target{Set: ball, K: 1 << 20, Stream: uint64(i)})
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

// timeOn runs f reps times (after one warm-up) with n Go threads and one
// BLAS thread each, returning each run's seconds.
func timeOn(n, reps int, f func() error) ([]float64, error) {
	prev := runtime.GOMAXPROCS(n)
	defer runtime.GOMAXPROCS(prev)
	if err := f(); err != nil {
		return nil, err
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

func startPeer(ctx context.Context, python, script string) (*peerProc, error) {
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("bench: peer script: %w", err)
	}
	cmd := exec.CommandContext(ctx, python, script)
	// One thread in every library PyTorch may use.
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1")
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
