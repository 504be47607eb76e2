package nn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

// torchLayers builds random torch.nn.TransformerEncoderLayer and
// TransformerDecoderLayer modules, and whole two-layer nn.Transformers
// (float64, time-major, every parameter drawn N(0, 0.5²)), runs them on random inputs with padding masks (and the
// causal tgt_mask) in training mode with dropout 0, so that PyTorch's
// inference fast path is not taken, and prints their state_dicts, inputs
// and outputs as JSON (Python's floats print exactly).
const torchLayers = `
import json, sys, torch
torch.manual_seed(int(sys.argv[1]))
torch.set_default_dtype(torch.float64)
S, T, B, D, H, FF = 5, 6, 3, 8, 2, 16
mem_pad = torch.zeros(B, S, dtype=torch.bool)
mem_pad[1, -2:] = True
tgt_pad = torch.zeros(B, T, dtype=torch.bool)
tgt_pad[2, -1] = True
causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
cases = []
for kind in ("encoder", "decoder"):
    for norm_first in (False, True):
        for act in ("relu", "gelu"):
            cls = torch.nn.TransformerEncoderLayer if kind == "encoder" else torch.nn.TransformerDecoderLayer
            layer = cls(D, H, FF, dropout=0.0, activation=act, norm_first=norm_first, layer_norm_eps=1e-5)
            with torch.no_grad():
                for p in layer.parameters():
                    p.normal_(0, 0.5)
            layer.train()
            src, tgt = torch.randn(S, B, D), torch.randn(T, B, D)
            if kind == "encoder":
                y = layer(src, src_key_padding_mask=mem_pad)
            else:
                y = layer(tgt, src, tgt_mask=causal, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=mem_pad)
            flat = lambda t: t.detach().flatten().tolist()
            cases.append({"kind": kind, "norm_first": norm_first, "activation": act,
                          "params": {k: {"shape": list(v.shape), "data": flat(v)} for k, v in layer.state_dict().items()},
                          "src": flat(src), "tgt": flat(tgt), "out": flat(y),
                          "mem_pad": flat(mem_pad), "tgt_pad": flat(tgt_pad)})
for norm_first in (False, True):
    model = torch.nn.Transformer(D, H, 2, 2, FF, dropout=0.0, norm_first=norm_first)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.5)
    model.train()
    src, tgt = torch.randn(S, B, D), torch.randn(T, B, D)
    y = model(src, tgt, tgt_mask=causal, src_key_padding_mask=mem_pad, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=mem_pad)
    cases.append({"kind": "transformer", "norm_first": norm_first, "activation": "relu",
                  "params": {k: {"shape": list(v.shape), "data": flat(v)} for k, v in model.state_dict().items()},
                  "src": flat(src), "tgt": flat(tgt), "out": flat(y),
                  "mem_pad": flat(mem_pad), "tgt_pad": flat(tgt_pad)})
print(json.dumps({"S": S, "T": T, "B": B, "D": D, "H": H, "FF": FF, "cases": cases}))
`

// torchCase is one layer of torchLayers' output: its kind and settings,
// state_dict, inputs, padding flags and output, flattened.
type torchCase struct {
	Kind, Activation string
	NormFirst        bool `json:"norm_first"`
	Params           map[string]torchTensor
	Src, Tgt, Out    []float64
	MemPad           []bool `json:"mem_pad"`
	TgtPad           []bool `json:"tgt_pad"`
}

// torchTensor is a tensor of a state_dict.
type torchTensor struct {
	Shape []int
	Data  []float64
}

// runTorch runs a Python script with Debian's PyTorch (python3-torch,
// which make test installs) and returns its standard output.
func runTorch(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import torch").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import torch (%v: %s): install Debian's python3-torch (make test does)", python, err, bytes.TrimSpace(out))
	}
	cmd := exec.Command(python, append([]string{"-c", script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v: %s", err, stderr.String())
	}
	return out
}

// loadState copies a PyTorch state_dict into ps, requiring the same names
// and shapes on both sides.
func loadState(ps []*ad.Param[float64], state map[string]torchTensor) error {
	if len(ps) != len(state) {
		names := make([]string, 0, len(state))
		for k := range state {
			names = append(names, k)
		}
		slices.Sort(names)
		return fmt.Errorf("%d parameters, PyTorch has %d: %v", len(ps), len(state), names)
	}
	for _, p := range ps {
		s, ok := state[p.Name]
		if !ok {
			return fmt.Errorf("PyTorch has no tensor %q", p.Name)
		}
		if !slices.Equal(s.Shape, p.W.Shape) {
			return fmt.Errorf("%s: shape %v, PyTorch's %v", p.Name, p.W.Shape, s.Shape)
		}
		copy(p.W.Data, s.Data)
	}
	return nil
}

// TestTransformerLayersMatchPyTorch loads random PyTorch encoder and
// decoder layers (post- and pre-norm, ReLU and GELU) and whole
// nn.Transformers (post- and pre-norm) into lenspec's by their state_dict
// names and requires PyTorch's outputs to 1e-10 in
// float64: the whole sequence at once, and the decoder's cached steps too.
func TestTransformerLayersMatchPyTorch(t *testing.T) {
	var got struct {
		S, T, B, D, H, FF int
		Cases             []torchCase
	}
	if err := json.Unmarshal(runTorch(t, torchLayers, "1"), &got); err != nil {
		t.Fatal(err)
	}
	S, L, B, D := got.S, got.T, got.B, got.D
	if len(got.Cases) != 10 {
		t.Fatalf("%d cases from PyTorch, want 10", len(got.Cases))
	}
	for _, c := range got.Cases {
		name := fmt.Sprintf("%s norm_first=%v %s", c.Kind, c.NormFirst, c.Activation)
		cfg := TransformerConfig{Dim: D, Heads: got.H, FF: got.FF, NormFirst: c.NormFirst, Activation: c.Activation}
		memPad, tgtPad := c.MemPad, c.TgtPad
		tp := ad.NewTape[float64](false)
		src := tp.Const(ad.FromSlice(c.Src, S, B, D))
		tgt := tp.Const(ad.FromSlice(c.Tgt, L, B, D))
		var y *ad.Node[float64]
		var steps func(x *ad.Node[float64]) *ad.Node[float64] // the next cached step, if a decoder
		load := func(ps []*ad.Param[float64]) {
			if err := loadState(ps, c.Params); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		switch c.Kind {
		case "encoder":
			enc := NewTransformerEncoderLayer[float64]("", cfg, nil)
			load(enc.Params())
			y = enc.Forward(tp, src, memPad, Dropout{})
		case "decoder":
			dec := NewTransformerDecoderLayer[float64]("", cfg, nil)
			load(dec.Params())
			y = dec.Forward(tp, tgt, src, tgtPad, memPad, Dropout{})
			cache := dec.Start(tp, src, memPad, L)
			steps = func(x *ad.Node[float64]) (h *ad.Node[float64]) {
				h, cache = dec.Step(tp, x, cache, Dropout{})
				return h
			}
		case "transformer":
			enc := NewTransformerEncoder[float64]("encoder", cfg, 2, true, nil)
			dec := NewTransformerDecoder[float64]("decoder", cfg, 2, true, nil)
			load(append(enc.Params(), dec.Params()...))
			mem := enc.Forward(tp, src, memPad, Dropout{})
			y = dec.Forward(tp, tgt, mem, tgtPad, memPad, Dropout{})
			cache := dec.Start(tp, mem, memPad, L)
			steps = func(x *ad.Node[float64]) (h *ad.Node[float64]) {
				h, cache = dec.Step(tp, x, cache, Dropout{})
				return h
			}
		default:
			t.Fatalf("PyTorch case of kind %q", c.Kind)
		}
		var worst float64
		for i, w := range c.Out {
			worst = math.Max(worst, math.Abs(y.Value.Data[i]-w))
		}
		if worst > 1e-10 {
			t.Errorf("%s: outputs differ from PyTorch's by up to %.3g", name, worst)
		}
		if steps == nil {
			t.Logf("%s: largest difference from PyTorch %.3g", name, worst)
			continue
		}
		// Cached steps; the padded last target of row 2 is left out (a
		// step has no target padding).
		var stepWorst float64
		for s := 0; s < L; s++ {
			h := steps(tp.Const(ad.FromSlice(c.Tgt[s*B*D:(s+1)*B*D], B, D)))
			for b := 0; b < B; b++ {
				if tgtPad[b*L+L-1] && s == L-1 {
					continue
				}
				for j := 0; j < D; j++ {
					stepWorst = math.Max(stepWorst, math.Abs(h.Value.Data[b*D+j]-c.Out[(s*B+b)*D+j]))
				}
			}
		}
		if stepWorst > 1e-10 {
			t.Errorf("%s: cached steps differ from PyTorch's outputs by up to %.3g", name, stepWorst)
		}
		t.Logf("%s: largest difference from PyTorch %.3g (whole), %.3g (steps)", name, worst, stepWorst)
	}
}
