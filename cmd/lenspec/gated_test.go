package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
)

// TestVerifyGatedCells: verify and bound take LSTM and GRU captioners end
// to end (a 3-pixel model of each, the user's own input): the bound's
// upper end is never below what a grid over the box finds, verify proves
// K̂ = upper, and below the lower end it finds a witness.
func TestVerifyGatedCells(t *testing.T) {
	// Seeds whose outputs over the ball are longer than the centre's (1 and
	// 2 tokens), and which the verifier decides at δ = 0.1 (at δ = 0.4 the
	// gates span most of their range and neither is decided in 20 s).
	for _, c := range []struct {
		cell string
		seed uint64
	}{{model.CellLSTM, 8}, {model.CellGRU, 7}} {
		cell := c.cell
		t.Run(cell, func(t *testing.T) {
			cfg := model.DefaultCaptionerConfig()
			a := cfg.Arch.(*model.CaptionerConfig)
			a.Input = model.InputConfig{Channels: 1, Height: 1, Width: 3, Min: -1, Max: 1}
			a.Conv, a.Cell = nil, cell
			a.FCHidden, a.Embedding, a.Hidden = 4, 3, 4
			cfg.Vocab = []string{"a", "b", "<eos>"}
			cfg.EOS, cfg.MaxSteps = 2, 12
			m, err := model.New[float64](&cfg, rand.New(rand.NewPCG(c.seed, 4)))
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(c.seed, 5))
			for _, p := range m.Params() {
				for i := range p.W.Data {
					if len(p.W.Shape) == 1 {
						p.W.Data[i] = 0.5 * rng.NormFloat64()
					} else {
						p.W.Data[i] *= 2.5 // gates that move
					}
				}
			}
			dir := t.TempDir()
			if err := model.Save(dir, m); err != nil {
				t.Fatal(err)
			}
			if m, err = model.Load[float64](dir); err != nil {
				t.Fatal(err)
			}
			x := []float64{0.25, -0.5, 0.125}
			input := filepath.Join(t.TempDir(), "mine.safetensors")
			if err := safetensors.WriteFile(input, &safetensors.File{Tensors: []safetensors.Tensor{safetensors.F64("input", []int{1, 1, 3}, x)}}); err != nil {
				t.Fatal(err)
			}
			const eps = 0.1
			code, stdout, stderr := runCLI(t, "bound", "--model", dir, "--eps", fmt.Sprint(eps), "--input", input, "--max-len", "10", "--timeout", "20s", "--json", "-q")
			var b struct {
				Lower int
				Upper *int
			}
			if err := json.Unmarshal([]byte(stdout), &b); code != 0 || err != nil || b.Upper == nil {
				t.Fatalf("bound: exit %d, %q (%v): %s", code, stdout, err, stderr)
			}
			longest := 0
			const per = 21
			for i := 0; i < per*per*per; i++ {
				g := make([]float64, 3)
				for c, j := 0, i; c < 3; c, j = c+1, j/per {
					g[c] = math.Min(math.Max(x[c]-eps+2*eps*float64(j%per)/(per-1), -1), 1)
				}
				res, err := model.Decode(context.Background(), m, model.Batch[float64]{X: g}, 12)
				if err != nil {
					t.Fatal(err)
				}
				longest = max(longest, len(res[0].Tokens))
			}
			t.Logf("%s: bound [%d, %d], grid %d", cell, b.Lower, *b.Upper, longest)
			if longest > *b.Upper || b.Lower > *b.Upper {
				t.Fatalf("bound [%d, %d], but the grid finds %d tokens", b.Lower, *b.Upper, longest)
			}
			if b.Lower == *b.Upper && longest == b.Lower && b.Lower == 0 {
				t.Fatalf("a property with nothing to decide: every output is empty")
			}
			verdict := func(k int) string {
				code, stdout, stderr := runCLI(t, "verify", "--model", dir, "--eps", fmt.Sprint(eps), "--input", input, "--max-len", fmt.Sprint(k),
					"--timeout", "20s", "--out", filepath.Join(t.TempDir(), "v.jsonl"), "-q")
				if code != 0 {
					t.Fatalf("verify: exit %d: %s", code, stderr)
				}
				return strings.TrimSpace(stdout)
			}
			if v := verdict(*b.Upper); v != "robust" {
				t.Fatalf("verify at K̂ = upper %d: %s", *b.Upper, v)
			}
			if b.Lower > 0 {
				if v := verdict(b.Lower - 1); v != "vulnerable" {
					t.Fatalf("verify at K̂ = lower−1 = %d: %s", b.Lower-1, v)
				}
			}
		})
	}
}
