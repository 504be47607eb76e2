package main

import (
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/model"
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
			x := []float64{0.25, -0.5, 0.125}
			const eps = 0.1
			dir, m, input := saveTiny(t, m, x)
			b := runBound(t, dir, input, eps)
			longest := gridLongest(t, m, x, eps)
			t.Logf("%s: bound [%d, %d], grid %d", cell, b.Lower, *b.Upper, longest)
			if longest > *b.Upper || b.Lower > *b.Upper {
				t.Fatalf("bound [%d, %d], but the grid finds %d tokens", b.Lower, *b.Upper, longest)
			}
			if b.Lower == *b.Upper && longest == b.Lower && b.Lower == 0 {
				t.Fatalf("a property with nothing to decide: every output is empty")
			}
			verifyAtBoundEnds(t, dir, input, eps, b)
		})
	}
}
