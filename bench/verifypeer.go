package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
	"github.com/lenspec/lenspec/verify"
)

// VerifyPeerOptions configures the verifier peer benchmark: lenspec's
// bounds against auto_LiRPA's (bench/peer_lirpa.py) on the same graph.
type VerifyPeerOptions struct {
	Python string // interpreter (Debian's, with python3-torch)
	Script string // bench/peer_lirpa.py
	// LiRPA is the directory holding the auto_LiRPA package, put on the
	// peer's PYTHONPATH ("": the interpreter's own path).
	LiRPA string
	// Eps is the L∞ radius of the box around each input (clipped to the
	// input range); Iters α-CROWN's iterations, on both sides.
	Eps   float64
	Iters int
	// Float64 runs auto_LiRPA in float64 rather than its usual float32:
	// lenspec's bounds are float64, padded outward for rounding, and
	// float32's rounding alone moves a bound by more than the methods
	// differ.
	Float64 bool
	// Progress hears what is being bounded (nil: nothing).
	Progress func(string)
}

// DefaultVerifyPeerOptions are the settings docs/BENCHMARKS.md reports:
// δ = 0.01, and α-CROWN's 20 iterations, auto_LiRPA's default.
func DefaultVerifyPeerOptions() VerifyPeerOptions {
	return VerifyPeerOptions{Python: "/usr/bin/python3", Script: "bench/peer_lirpa.py", Eps: 0.01, Iters: 20}
}

// verifyPeerMethods pairs lenspec's bound methods with auto_LiRPA's.
var verifyPeerMethods = []struct {
	name   string
	ours   verify.BoundMethod
	theirs string
}{{"ibp", verify.BoundInterval, "IBP"}, {"crown", verify.BoundCROWN, "CROWN"}, {"alpha-crown", verify.BoundAlphaCROWN, "alpha-CROWN"}}

// VerifyPeerInput is one input of the benchmark: its box and the clean
// decoding path held fixed (the greedy tokens, eos included when emitted).
type VerifyPeerInput struct {
	Index  int
	Lo, Hi []float64
	Path   []int
}

// VerifyPeerInputs are the boxes of radius eps around xs (clipped to d's
// input range, each end rounded to float32 so that both sides bound the
// same box) and their clean paths, decoded greedily by d in float64 (at
// most d's step cap).
func VerifyPeerInputs(ctx context.Context, d model.Decoder[float64], idx []int, xs [][]float64, eps float64) ([]VerifyPeerInput, error) {
	in := d.Input()
	var out []VerifyPeerInput
	for i, x := range xs {
		if len(x) != in.Size() {
			return nil, fmt.Errorf("bench: input %d has %d values, the model reads %d", idx[i], len(x), in.Size())
		}
		res, err := model.Decode(ctx, d, model.Batch[float64]{X: x}, d.MaxSteps())
		if err != nil {
			return nil, err
		}
		p := VerifyPeerInput{Index: idx[i], Lo: make([]float64, len(x)), Hi: make([]float64, len(x)), Path: res[0].Tokens}
		if len(p.Path) < d.MaxSteps() {
			p.Path = append(p.Path, d.EOS())
		}
		for j, v := range x {
			p.Lo[j] = float64(float32(max(v-eps, in.Min)))
			p.Hi[j] = float64(float32(min(v+eps, in.Max)))
		}
		out = append(out, p)
	}
	return out, nil
}

// VerifyPeerBound is one input's margins bounded by one method on both
// sides: Lenspec[t][z] and LiRPA[t][z] bound o_t[z] − o_t[path[t]] from
// above; the seconds are one thread's.
type VerifyPeerBound struct {
	Input          int         `json:"input"`
	Method         string      `json:"method"`
	Lenspec        [][]float64 `json:"lenspec"`
	LiRPA          [][]float64 `json:"auto_lirpa"`
	LenspecSeconds float64     `json:"lenspec_seconds"`
	LiRPASeconds   float64     `json:"auto_lirpa_seconds"`
}

// VerifyPeerSummary is one method over every input: the times summed,
// their ratio (lenspec's over auto_LiRPA's), and how the bounds compare
// on the margins (z ≠ path[t]): the share where lenspec's is at least as
// tight, and auto_LiRPA's bound minus lenspec's, on average and at worst
// (the least; positive: lenspec tighter).
type VerifyPeerSummary struct {
	Method         string  `json:"method"`
	LenspecSeconds float64 `json:"lenspec_seconds"`
	LiRPASeconds   float64 `json:"auto_lirpa_seconds"`
	Ratio          float64 `json:"ratio"`
	Margins        int     `json:"margins"`
	Tighter        int     `json:"tighter"`
	MeanGain       float64 `json:"mean_gain"`
	WorstGain      float64 `json:"worst_gain"`
}

// Share is the share of margins where lenspec's bound is at least as tight.
func (s VerifyPeerSummary) Share() float64 { return float64(s.Tighter) / float64(max(s.Margins, 1)) }

// VerifyPeerReport is a verifier peer benchmark run on one model.
type VerifyPeerReport struct {
	Model   string              `json:"model"`
	Machine Machine             `json:"machine"`
	Peer    string              `json:"peer"`
	Eps     float64             `json:"eps"`
	Iters   int                 `json:"alpha_iterations"`
	Float64 bool                `json:"peer_float64"`
	Inputs  []VerifyPeerInput   `json:"-"`
	Bounds  []VerifyPeerBound   `json:"bounds"`
	Summary []VerifyPeerSummary `json:"summary"`
}

// VerifyPeer bounds, for each input, the margins of its clean path over
// its box (verify.BoundPath) with intervals, CROWN and α-CROWN, in lenspec
// and in auto_LiRPA on the same graph (opt.Script, started once), one
// thread each, the two sides interleaved input by input and method by
// method, and summarises them per method (summarise).
func VerifyPeer(ctx context.Context, modelDir string, net *verify.Net, inputs []VerifyPeerInput, opt VerifyPeerOptions) (*VerifyPeerReport, error) {
	if len(inputs) == 0 {
		return nil, errors.New("bench: no inputs to bound")
	}
	if opt.Iters < 1 {
		return nil, fmt.Errorf("bench: α-CROWN with %d iterations", opt.Iters)
	}
	progress := opt.Progress
	if progress == nil {
		progress = func(string) {}
	}
	dir, err := os.MkdirTemp("", "lenspec-verify-peer-")
	if err != nil {
		return nil, fmt.Errorf("bench: peer inputs: %w", err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "inputs.safetensors")
	if err := writeVerifyPeerInputs(file, inputs, opt.Iters, opt.Float64); err != nil {
		return nil, err
	}
	rep := &VerifyPeerReport{Model: modelDir, Machine: DescribeMachine(ad.ISANative), Eps: opt.Eps, Iters: opt.Iters, Float64: opt.Float64, Inputs: inputs}
	env := peerEnv(ad.ISANative, ad.BLASName(), rep.Machine.BLASTuned != "")
	if opt.LiRPA != "" {
		env = append(env, "PYTHONPATH="+opt.LiRPA)
	}
	py, err := startPeer(ctx, opt.Python, opt.Script, env)
	if err != nil {
		return nil, err
	}
	defer py.close()
	var hello struct {
		Torch, LiRPA, BLAS string
		Threads            int
	}
	if err := py.call(&hello, "load %s %s", modelDir, file); err != nil {
		return nil, err
	}
	rep.Peer = fmt.Sprintf("auto_LiRPA %s on PyTorch %s, %s, %d thread(s)", hello.LiRPA, hello.Torch, hello.BLAS, hello.Threads)
	progress(rep.Peer)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	bound := func(i, k int) (VerifyPeerBound, error) {
		in, m := inputs[i], verifyPeerMethods[k]
		b := VerifyPeerBound{Input: in.Index, Method: m.name}
		start := time.Now()
		pm, err := verify.BoundPath(ctx, net, in.Lo, in.Hi, in.Path, m.ours, opt.Iters)
		if err != nil {
			return b, err
		}
		b.LenspecSeconds, b.Lenspec = time.Since(start).Seconds(), pm.Upper
		var theirs struct {
			Upper   [][]float64
			Seconds float64
		}
		if err := py.call(&theirs, "bound %d %s", i, m.theirs); err != nil {
			return b, err
		}
		if err := sameShape(b.Lenspec, theirs.Upper); err != nil {
			return b, fmt.Errorf("bench: auto_LiRPA's %s bounds of input %d: %w", m.theirs, in.Index, err)
		}
		b.LiRPA, b.LiRPASeconds = theirs.Upper, theirs.Seconds
		return b, nil
	}
	// A first bound pays for what later ones reuse (the Go heap's growth,
	// OpenBLAS's and PyTorch's lazy initialisation): the first input once
	// by every method on each side, untimed.
	for m := range verifyPeerMethods {
		if _, err := bound(0, m); err != nil {
			return nil, err
		}
	}
	for i := range inputs {
		for m := range verifyPeerMethods {
			b, err := bound(i, m)
			if err != nil {
				return nil, err
			}
			rep.Bounds = append(rep.Bounds, b)
			progress(fmt.Sprintf("input %d %s: lenspec %.3f s, auto_LiRPA %.3f s", b.Input, b.Method, b.LenspecSeconds, b.LiRPASeconds))
		}
	}
	for _, m := range verifyPeerMethods {
		rep.Summary = append(rep.Summary, summarise(m.name, inputs, rep.Bounds))
	}
	rep.Machine.Finish()
	return rep, nil
}

// sameShape checks that the peer bounded as many steps and tokens.
func sameShape(ours, theirs [][]float64) error {
	if len(theirs) != len(ours) {
		return fmt.Errorf("%d steps, want %d", len(theirs), len(ours))
	}
	for t := range ours {
		if len(theirs[t]) != len(ours[t]) {
			return fmt.Errorf("%d tokens at step %d, want %d", len(theirs[t]), t, len(ours[t]))
		}
	}
	return nil
}

// summarise is method's summary over bounds (of inputs, by index).
func summarise(method string, inputs []VerifyPeerInput, bounds []VerifyPeerBound) VerifyPeerSummary {
	s := VerifyPeerSummary{Method: method, WorstGain: math.Inf(1)}
	paths := map[int][]int{}
	for _, in := range inputs {
		paths[in.Index] = in.Path
	}
	var sum float64
	for _, b := range bounds {
		if b.Method != method {
			continue
		}
		s.LenspecSeconds += b.LenspecSeconds
		s.LiRPASeconds += b.LiRPASeconds
		for t, row := range b.Lenspec {
			for z, ours := range row {
				if z == paths[b.Input][t] {
					continue
				}
				gain := b.LiRPA[t][z] - ours
				s.Margins++
				if ours <= b.LiRPA[t][z] {
					s.Tighter++
				}
				sum += gain
				s.WorstGain = math.Min(s.WorstGain, gain)
			}
		}
	}
	if s.Margins > 0 {
		s.MeanGain = sum / float64(s.Margins)
	} else {
		s.WorstGain = 0
	}
	if s.LiRPASeconds > 0 {
		s.Ratio = s.LenspecSeconds / s.LiRPASeconds
	}
	return s
}

// writeVerifyPeerInputs writes what bench/peer_lirpa.py reads: the boxes
// (lo, hi: [inputs, size], float32 as rounded), the paths ([inputs,
// longest], −1 padded) and the settings ([α-CROWN iterations, 1 for
// float64]).
func writeVerifyPeerInputs(path string, inputs []VerifyPeerInput, iters int, f64 bool) error {
	n, size, width := len(inputs), len(inputs[0].Lo), 0
	for _, in := range inputs {
		width = max(width, len(in.Path))
	}
	lo, hi, paths := make([]float32, 0, n*size), make([]float32, 0, n*size), make([]int32, n*width)
	for i, in := range inputs {
		if len(in.Lo) != size || len(in.Hi) != size {
			return fmt.Errorf("bench: input %d's box has %d and %d values, want %d", in.Index, len(in.Lo), len(in.Hi), size)
		}
		for j := range in.Lo {
			lo, hi = append(lo, float32(in.Lo[j])), append(hi, float32(in.Hi[j]))
		}
		for j := range width {
			paths[i*width+j] = -1
			if j < len(in.Path) {
				paths[i*width+j] = int32(in.Path[j])
			}
		}
	}
	f := &safetensors.File{Tensors: []safetensors.Tensor{
		safetensors.F32("lo", []int{n, size}, lo),
		safetensors.F32("hi", []int{n, size}, hi),
		safetensors.I32("paths", []int{n, width}, paths),
		safetensors.F64("settings", []int{2}, []float64{float64(iters), map[bool]float64{true: 1}[f64]}),
	}}
	return safetensors.WriteFile(path, f)
}

// WriteText prints the report: per input and method, each step's largest
// margin bound on both sides and the times; then the summary, ending with
// a "ratio <model>/<method> <x>" and a "tighter <model>/<method> <share>"
// line per method (the share of margins where lenspec's bound is at least
// as tight, with auto_LiRPA's bound minus lenspec's on average and at
// worst).
func (r *VerifyPeerReport) WriteText(w io.Writer) {
	name := filepath.Base(r.Model)
	fmt.Fprintf(w, "verifier peer benchmark: %s, δ = %g (clipped to the input range), α-CROWN %d iterations on both sides\n", r.Model, r.Eps, r.Iters)
	fmt.Fprintf(w, "machine: %s\n", r.Machine.Describe())
	prec := "float32"
	if r.Float64 {
		prec = "float64"
	}
	fmt.Fprintf(w, "peer: %s, %s; lenspec: float64, 1 thread\n", r.Peer, prec)
	fmt.Fprintf(w, "%s\n", r.Machine.LoadLine())
	fmt.Fprintln(w, "input  path          method       lenspec s  auto_LiRPA s  largest margin bound per step (lenspec / auto_LiRPA)")
	paths := map[int][]int{}
	for _, in := range r.Inputs {
		paths[in.Index] = in.Path
	}
	for _, b := range r.Bounds {
		var steps []string
		for t := range b.Lenspec {
			steps = append(steps, fmt.Sprintf("%.4g / %.4g", largestOther(b.Lenspec[t], paths[b.Input][t]), largestOther(b.LiRPA[t], paths[b.Input][t])))
		}
		fmt.Fprintf(w, "%-6d %-13s %-12s %9.4f  %12.4f  %s\n", b.Input, fmt.Sprint(paths[b.Input]), b.Method, b.LenspecSeconds, b.LiRPASeconds, strings.Join(steps, ", "))
	}
	fmt.Fprintln(w, "method       margins  lenspec s  auto_LiRPA s  ratio   lenspec at least as tight  mean gain  worst gain")
	for _, s := range r.Summary {
		fmt.Fprintf(w, "%-12s %7d  %9.3f  %12.3f  %6.3f  %25.3f  %9.3g  %10.3g\n", s.Method, s.Margins, s.LenspecSeconds, s.LiRPASeconds, s.Ratio, s.Share(), s.MeanGain, s.WorstGain)
	}
	for _, s := range r.Summary {
		fmt.Fprintf(w, "ratio %s/%s %.3f\n", name, s.Method, s.Ratio)
	}
	for _, s := range r.Summary {
		fmt.Fprintf(w, "tighter %s/%s %.3f (%d of %d margins; auto_LiRPA's bound minus lenspec's: mean %.3g, worst %.3g)\n", name, s.Method, s.Share(), s.Tighter, s.Margins, s.MeanGain, s.WorstGain)
	}
}

// largestOther is the largest of row's entries but skip's.
func largestOther(row []float64, skip int) float64 {
	best := math.Inf(-1)
	for z, v := range row {
		if z != skip {
			best = math.Max(best, v)
		}
	}
	return best
}
