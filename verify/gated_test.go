package verify

import (
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// gatedPixelProblem is pixelProblem with an LSTM or GRU decoder.
func gatedPixelProblem(t *testing.T, seed uint64, pixels int, delta float64, cell string) (*model.Captioner[float64], spec.Ball) {
	t.Helper()
	c := pixelConfig(pixels, 3)
	c.Arch.(*model.CaptionerConfig).Cell = cell
	m, err := model.NewCaptioner[float64](c, rand.New(rand.NewPCG(seed, 77)))
	if err != nil {
		t.Fatal(err)
	}
	randomBiases(m, seed)
	// Stronger weights than PyTorch's ±1/√hidden initialisation: gates
	// that move, so that outputs of several lengths meet in one ball.
	for _, p := range m.Params() {
		for i := range p.W.Data {
			p.W.Data[i] *= 3
		}
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	center := make([]float64, pixels)
	for i := range center {
		center[i] = 2*rng.Float64() - 1
	}
	ball, _ := spec.NewBall(center, delta, -1, 1)
	return m, ball
}

// randomMax is the longest output of n random inputs of the ball (its
// vertices among them), the random search beside the grid.
func randomMax(t *testing.T, m model.Decoder[float64], ball spec.Ball, n, steps int, rng *rand.Rand) int {
	lo, hi := ball.Box()
	xs := make([]float64, 0, n*len(lo))
	for k := 0; k < n; k++ {
		for i := range lo {
			u := rng.Float64()
			if k%2 == 0 {
				u = float64(rng.IntN(2)) // a vertex
			}
			xs = append(xs, lo[i]+(hi[i]-lo[i])*u)
		}
	}
	best := 0
	for _, r := range decode(t, m, xs, steps) {
		l := len(r.Tokens)
		if !r.Stopped {
			l = steps + 1
		}
		best = max(best, l)
	}
	return best
}

// TestGatedCaptionersAgainstGrid: on random LSTM and GRU captioners with
// 2–4 pixel inputs, verification (the default pipeline, with the MIP's
// outer approximation of sigmoid and tanh, and branch and bound alone)
// never says robust where a dense grid or a random search finds an output
// longer than K̂, and every vulnerable witness replays (verifyOne). Both
// must decide some samples of each kind.
func TestGatedCaptionersAgainstGrid(t *testing.T) {
	babOnly := verifyOpts()
	babOnly.BaB, babOnly.Solver, babOnly.NewLP, babOnly.Abstract = true, nil, nil, false
	for _, cell := range []string{model.CellLSTM, model.CellGRU} {
		robust, vulnerable, total := 0, 0, 0
		for seed := uint64(1); seed <= 18; seed++ {
			pixels := 2 + int(seed%3)
			m, ball := gatedPixelProblem(t, seed, pixels, []float64{0.05, 0.2, 0.5, 1}[seed%4], cell)
			lo, hi := ball.Box()
			per := map[int]int{2: 201, 3: 41, 4: 17}[pixels]
			maxLen, _ := gridMax(t, m, lo, hi, per, 12)
			maxLen = max(maxLen, randomMax(t, m, ball, 4000, 12, rand.New(rand.NewPCG(seed, 8))))
			if maxLen > 11 {
				continue // runs to the cap: no finite K̂ to test around
			}
			for _, K := range []int{maxLen - 1, maxLen} {
				if K < 0 {
					continue
				}
				for _, opt := range []Options{verifyOpts(), babOnly} {
					opt.TimeLimit = 2e9 // 2 s
					r := verifyOne(t, m, ball, K, opt)
					total++
					switch r.Verdict {
					case Robust:
						if maxLen > K {
							t.Fatalf("%s seed %d: robust (%s) at K̂ %d but the search finds length %d", cell, seed, r.Stage, K, maxLen)
						}
						robust++
					case Vulnerable:
						vulnerable++
					}
				}
			}
		}
		t.Logf("%s: %d robust, %d vulnerable of %d", cell, robust, vulnerable, total)
		if total < 20 || robust == 0 || vulnerable == 0 {
			t.Fatalf("%s: %d robust and %d vulnerable of %d samples", cell, robust, vulnerable, total)
		}
	}
}
