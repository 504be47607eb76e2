package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/results"
	"github.com/lenspec/lenspec/safetensors"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLIEnv(t, nil, args...)
}

func runCLIEnv(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
	code = run(context.Background(), a, args)
	return code, out.String(), errb.String()
}

// smallModel writes a randomly initialised captioner with the default
// architecture (so it reads 28x112 canvases) to a temp dir.
func smallModel(t *testing.T) string { return savedCaptioner(t, "", 1) }

// lstmModel writes a randomly initialised LSTM captioner, a model of
// another configuration than smallModel's, to a temp dir.
func lstmModel(t *testing.T) string { return savedCaptioner(t, model.CellLSTM, 2) }

// savedCaptioner writes a default captioner with cell (empty: the
// default's) and weights drawn from seed to a temp dir.
func savedCaptioner(t *testing.T, cell string, seed uint64) string {
	t.Helper()
	cfg := model.DefaultCaptionerConfig()
	if cell != "" {
		cfg.Arch.(*model.CaptionerConfig).Cell = cell
	}
	return savedModel(t, &cfg, seed)
}

// savedModel writes a model of cfg with weights drawn from seed to a temp
// dir.
func savedModel(t *testing.T, cfg *model.Config, seed uint64) string {
	t.Helper()
	m, err := model.New[float32](cfg, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := model.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestExitCodesAndErrors: every bad input gets a one-line error naming the
// problem and the documented exit code: 2 for how lenspec was called
// (flags, arguments, settings out of range), 1 for everything else.
func TestExitCodesAndErrors(t *testing.T) {
	dir := smallModel(t)
	tmp := t.TempDir()
	badPNG := filepath.Join(tmp, "bad.png")
	os.WriteFile(badPNG, []byte("not a png"), 0o644)
	// A model whose config.json is /dev/zero, one whose weights are a FIFO.
	zero := t.TempDir()
	os.Symlink("/dev/zero", filepath.Join(zero, model.ConfigFile))
	fifo := t.TempDir()
	cfgBytes, _ := os.ReadFile(filepath.Join(dir, model.ConfigFile))
	os.WriteFile(filepath.Join(fifo, model.ConfigFile), cfgBytes, 0o644)
	syscall.Mkfifo(filepath.Join(fifo, model.WeightsFile), 0o644)
	// Witness files of the wrong shape and out of range.
	wrongShape := filepath.Join(tmp, "shape.safetensors")
	safetensors.WriteFile(wrongShape, &safetensors.File{Tensors: []safetensors.Tensor{safetensors.F64("input", []int{4, 28, 28}, make([]float64, 4*28*28))}})
	outOfRange := filepath.Join(tmp, "range.safetensors")
	big := make([]float64, 28*112)
	big[7] = 1e30
	safetensors.WriteFile(outOfRange, &safetensors.File{Tensors: []safetensors.Tensor{safetensors.F64("input", []int{1, 28, 112}, big)}})
	out := filepath.Join(tmp, "r.jsonl")
	atk := func(extra ...string) []string {
		return append([]string{"attack", "--model", dir, "--eps", "0.1", "--index", "0", "--budget", "2", "--out", out}, extra...)
	}
	ver := func(extra ...string) []string {
		return append([]string{"verify", "--model", dir, "--eps", "0.1", "--index", "0", "--out", out}, extra...)
	}
	trn := func(extra ...string) []string {
		return append([]string{"train", "captioner", "--out", t.TempDir()}, extra...)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
		{"unknown subcommand", []string{"train", "frobnicate"}, 2, "unknown command"},
		{"group alone", []string{"experiment"}, 2, "needs a subcommand"},
		{"unknown flag", []string{"decode", "--bogus"}, 2, "unknown flag"},
		{"bad flag value", []string{"decode", "--max-steps", "many"}, 2, "invalid argument"},
		{"missing model flag", []string{"decode", "--image", badPNG}, 2, "--model is required"},
		{"both inputs", []string{"decode", "--model", dir, "--image", badPNG, "--index", "1"}, 2, "exactly one of --image, --input or --index"},
		{"positional args", []string{"eval", "extra"}, 2, "takes no arguments"},
		{"missing model dir", []string{"decode", "--model", "/nonexistent/model", "--image", badPNG}, 1, "/nonexistent/model/config.json"},
		{"bad png", []string{"decode", "--model", dir, "--image", badPNG}, 1, "bad.png"},
		{"config is /dev/zero", []string{"decode", "--model", zero, "--image", badPNG}, 1, "not a regular file"},
		{"weights are a FIFO", []string{"decode", "--model", fifo, "--image", badPNG}, 1, "not a regular file"},
		{"input of the wrong shape", []string{"decode", "--model", dir, "--input", wrongShape}, 1, "shape [4 28 28]"},
		{"input out of range", []string{"decode", "--model", dir, "--input", outOfRange}, 1, "outside the model's input range"},
		{"train without out", []string{"train", "captioner"}, 2, "--out is required"},
		{"bad count", []string{"data", "multimnist", "--out", t.TempDir(), "--count", "0"}, 2, "must be positive"},
		{"negative max-len", atk("--max-len", "-3"), 2, "--max-len -3"},
		{"negative max-steps", atk("--max-steps", "-3"), 2, "--max-steps -3"},
		{"huge max-steps", atk("--max-steps", "20000"), 2, "--max-steps 20000"},
		{"max-len past the cap", atk("--max-len", "1000000"), 2, "below the step cap"},
		{"max-len as float", atk("--max-len", "1e6"), 2, "invalid argument"},
		{"negative images", []string{"attack", "--model", dir, "--eps", "0.1", "--images", "-5", "--index", "3", "--out", out}, 2, "--images -5"},
		{"infinite lr", atk("--lr", "inf"), 2, "learning rate"},
		{"lr for random search", atk("--method", "random", "--lr", "0.1"), 2, "--lr is read by pgd only, not by random"},
		{"text flag on images", atk("--tau", "2"), 2, "--tau is for text models"},
		{"nan eps", atk("--eps", "nan"), 2, "--eps NaN: want positive, finite radii"},
		{"nan relax gap", ver("--relax-gap", "nan"), 2, "relaxation gap"},
		{"verify max-len", ver("--max-len", "1000000"), 2, "K̂"},
		{"two bad settings, one line, each once", ver("--timeout", "-3s", "--relax-gap", "nan"), 2, "must be positive and at most 1e6; relaxation gap NaN"},
		{"bad bounds", ver("--bounds", "magic"), 2, "bound method"},
		{"cut multipliers without branch and bound", ver("--bab=false", "--cut-multipliers", "--timeout", "1s"), 2, "--cut-multipliers is read only with --bab, which is off: set --bab, or drop --cut-multipliers"},
		{"input clipping without branch and bound", ver("--bab=false", "--clip-input", "--timeout", "1s"), 2, "--clip-input is read only with --bab, which is off: set --bab, or drop --clip-input"},
		{"bad shard", atk("--shard", "3/2"), 2, "shard"},
		{"dropout", trn("--dropout", "1.5"), 2, "dropout"},
		{"weight decay", trn("--weight-decay", "nan"), 2, "weight decay"},
		{"clip norm", trn("--clip-norm", "nan"), 2, "clip norm"},
		{"stability eps", trn("--stability-eps", "nan"), 2, "stability radius"},
		{"ibp weight", trn("--ibp", "2", "--ibp-eps", "0.1"), 2, "IBP weight"},
		{"ibp without a radius", trn("--ibp", "0.1"), 2, "IBP radius"},
		{"ibp radius wider than the input range", trn("--ibp", "0.1", "--ibp-eps", "3"), 2, "IBP radius 3 is wider than the input range [-1, 1]: at most 2"},
		{"ibp-eps without --ibp", trn("--ibp-eps", "0.1"), 2, "--ibp-eps is read only with --ibp, which is off"},
		{"ibp-ramp without --ibp", trn("--ibp-ramp", "0.5"), 2, "--ibp-ramp is read only with --ibp"},
		{"stability-eps without --stability", trn("--stability-eps", "0.1"), 2, "--stability-eps is read only with --stability"},
		{"stability radius wider than the input range", trn("--stability", "0.1", "--stability-eps", "2.5"), 2, "stability radius 2.5 is wider"},
		{"eps wider than the input range", atk("--eps", "2.5"), 2, "radius 2.5 is wider than the input range"},
		{"unknown ibp bound", trn("--ibp", "0.1", "--ibp-eps", "0.1", "--ibp-bound", "zonotope"), 2, `IBP bound "zonotope" is not one of [interval crown-ibp]`},
		{"ibp bound without ibp", trn("--ibp-bound", "crown-ibp"), 2, "--ibp-bound is read only with --ibp, which is off"},
		{"ibp attack without ibp", trn("--ibp-attack"), 2, "--ibp-attack is read only with --ibp, which is off"},
		{"ibp sabr without ibp", trn("--ibp-sabr", "0.4"), 2, "--ibp-sabr is read only with --ibp, which is off"},
		{"ibp sabr of the whole ball", trn("--ibp", "0.1", "--ibp-eps", "0.1", "--ibp-sabr", "1"), 2, "SABR box fraction 1 must be in [0, 1)"},
		{"ibp sabr NaN", trn("--ibp", "0.1", "--ibp-eps", "0.1", "--ibp-sabr", "NaN"), 2, "SABR box fraction NaN must be in [0, 1)"},
		{"distill without a teacher", trn("--distill", "0.4"), 2, "--distill is read only with --distill-from, which is off"},
		{"distill weight", trn("--distill-from", dir, "--distill", "1.5"), 2, "distillation weight 1.5 must be in [0, 1]"},
		{"distill temperature NaN", trn("--distill-from", dir, "--distill-temp", "NaN"), 2, "distillation temperature NaN must be positive and finite"},
		{"missing teacher", trn("--distill-from", "/nonexistent/teacher"), 1, "--distill-from: read model config: open /nonexistent/teacher/config.json"},
		{"certify-eps without certify-images", trn("--certify-eps", "0.1"), 2, "--certify-eps is read only with --certify-images, which is off"},
		{"certify-images without a radius", trn("--certify-images", "4"), 2, "--certify-images needs a radius: set --certify-eps, or --ibp-eps with --ibp"},
		{"negative certify-images", trn("--certify-images", "-1"), 2, "--certify-images -1 is negative"},
		{"certify radius wider than the range", trn("--certify-images", "4", "--certify-eps", "3"), 2, "--certify-eps 3: want a positive radius no wider than the input range [-1, 1]"},
		{"certify radius NaN", trn("--certify-images", "4", "--certify-eps", "NaN"), 2, "--certify-eps NaN: want a positive radius"},
		{"certify timeout 0", trn("--certify-images", "4", "--certify-eps", "0.1", "--certify-timeout", "0s"), 2, "--certify-timeout 0s must be positive"},
		{"multi30k without --from", []string{"data", "multi30k"}, 2, "--from is required"},
		{"multi30k from a missing directory", []string{"data", "multi30k", "--from", "/nonexistent/m30k", "--dir", t.TempDir()}, 1, "/nonexistent/m30k"},
		{"multi30k from a file", []string{"data", "multi30k", "--from", badPNG, "--dir", t.TempDir()}, 1, "bad.png is not a directory"},
		{"multi30k from a directory without it", []string{"data", "multi30k", "--from", tmp, "--dir", t.TempDir()}, 1, "train.de.gz"},
		{"multi30k not imported", []string{"train", "nmt", "--corpus", "multi30k", "--multi30k-dir", filepath.Join(tmp, "none"), "--out", t.TempDir()}, 1, "lenspec data multi30k --from DIR imports it"},
		{"out is /dev/null", []string{"attack", "--model", dir, "--eps", "0.1", "--index", "0", "--budget", "2", "--out", "/dev/null"}, 1, "not a regular file"},
		{"out is /dev/full", ver("--out", "/dev/full"), 1, "not a regular file"},
		{"average without --out", []string{"train", "average", dir, dir}, 2, "--out is required"},
		{"average of one model", []string{"train", "average", "--out", filepath.Join(tmp, "avg"), dir}, 2, "give two model directories or more to average (got 1)"},
		{"average weights short", []string{"train", "average", "--out", filepath.Join(tmp, "avg"), "--weights", "1", dir, dir}, 2, "--weights: 1 weights for 2 models"},
		{"average weight NaN", []string{"train", "average", "--out", filepath.Join(tmp, "avg"), "--weights", "1,NaN", dir, dir}, 2, "--weights: weight 2 is NaN"},
		{"average weight negative", []string{"train", "average", "--out", filepath.Join(tmp, "avg"), "--weights", "-1,2", dir, dir}, 2, "--weights: weight 1 is -1"},
		{"average weights zero", []string{"train", "average", "--out", filepath.Join(tmp, "avg"), "--weights", "0,0", dir, dir}, 2, "--weights: the weights sum to 0"},
		{"average weights not numbers", []string{"train", "average", "--out", filepath.Join(tmp, "avg"), "--weights", "a,b", dir, dir}, 2, "--weights"},
		{"average into an input", []string{"train", "average", "--out", dir, dir, fifo}, 2, "is one of the models averaged"},
		{"average into a non-empty directory", []string{"train", "average", "--out", tmp, dir, dir}, 2, "is not empty: write the average to a new directory"},
		{"average into a file", []string{"train", "average", "--out", badPNG, dir, dir}, 2, "--out " + badPNG + ": not a directory (a file is in its path): write the average to a new directory"},
		{"average under a file", []string{"train", "average", "--out", filepath.Join(badPNG, "avg"), dir, dir}, 2, "avg: not a directory (a file is in its path)"},
		{"average a missing model", []string{"train", "average", "--out", filepath.Join(tmp, "avg"), dir, "/nonexistent/m"}, 1, "/nonexistent/m/config.json"},
		{"average models of two configurations", []string{"train", "average", "--out", filepath.Join(tmp, "avg"), dir, lstmModel(t)}, 1, "model 2's configuration differs from model 1's"},
		{"retry without files", []string{"results", "retry"}, 2, "give the results files"},
		{"retry a missing file", []string{"results", "retry", filepath.Join(tmp, "missing.jsonl")}, 1, "missing.jsonl"},
		{"retry /dev/null", []string{"results", "retry", "/dev/null"}, 1, "not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, c.code, stderr)
			}
			// Exactly one error line (progress lines may precede it), and it
			// says what is wrong.
			var errs []string
			for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
				if strings.HasPrefix(l, "lenspec: ") {
					errs = append(errs, l)
				}
			}
			if len(errs) != 1 || !strings.Contains(errs[0], c.want) {
				t.Fatalf("stderr %q: want one error line containing %q", stderr, c.want)
			}
		})
	}
}

// TestSecondWriterRefused: a results file held by another writer is
// refused with a clear error, and nothing in it changes.
func TestSecondWriterRefused(t *testing.T) {
	dir := smallModel(t)
	out := filepath.Join(t.TempDir(), "r.jsonl")
	f, err := results.Open(out, results.KeyFields("k"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	code, _, stderr := runCLI(t, "attack", "--model", dir, "--method", "random", "--eps", "0.1", "--index", "0", "--budget", "2", "--out", out, "-q")
	if code != 1 || !strings.Contains(stderr, "another lenspec process is writing it") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// TestSignalExitCode: a run cancelled by SIGTERM or SIGINT exits 143 or
// 130 and says finished work is saved.
func TestSignalExitCode(t *testing.T) {
	dir := smallModel(t)
	for sig, want := range map[syscall.Signal]int{syscall.SIGTERM: 143, syscall.SIGINT: 130} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(signalError{sig})
		var out, errb bytes.Buffer
		a := &app{stdout: &out, stderr: &errb}
		code := run(ctx, a, []string{"attack", "--model", dir, "--method", "random", "--eps", "0.1", "--index", "0", "--budget", "2", "--out", filepath.Join(t.TempDir(), "r.jsonl"), "-q"})
		if code != want || !strings.Contains(errb.String(), "rerun to resume") {
			t.Fatalf("%v: exit %d (%s), want %d", sig, code, errb.String(), want)
		}
	}
}

func TestDecodePNG(t *testing.T) {
	dir := smallModel(t)
	tmp := t.TempDir()
	pix := make([]uint8, multimnist.Height*multimnist.Width)
	for i := range pix {
		pix[i] = uint8(i % 251)
	}
	var first experiment.Decoded
	// What lenspec data multimnist writes (4×) decodes as the 1× file.
	for _, scale := range []int{1, 4} {
		png := filepath.Join(tmp, "x.png")
		if err := multimnist.WritePNG(png, pix, multimnist.Height, multimnist.Width, scale); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCLI(t, "decode", "--model", dir, "--image", png, "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var rec experiment.Decoded
		if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
			t.Fatalf("output %q: %v", stdout, err)
		}
		if scale == 1 {
			first = rec
			// The same image through the library gives the same tokens.
			m, err := model.Load[float64](dir)
			if err != nil {
				t.Fatal(err)
			}
			x, err := multimnist.ReadPNG(png, multimnist.Height, multimnist.Width, -1, 1)
			if err != nil {
				t.Fatal(err)
			}
			res, err := model.Decode(context.Background(), m, model.Batch[float64]{X: x}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Stopped != res[0].Stopped || !slices.Equal(rec.Tokens, res[0].Tokens) {
				t.Fatalf("CLI %+v, library %+v", rec, res[0])
			}
		} else if !slices.Equal(rec.Tokens, first.Tokens) || rec.MinMargin != first.MinMargin {
			t.Fatalf("4× PNG decodes %+v, 1× %+v", rec, first)
		}
		if rec.Stopped != (rec.Length != nil) {
			t.Fatalf("length %v with stopped=%v", rec.Length, rec.Stopped)
		}
	}
}
