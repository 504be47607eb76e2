package verify

import (
	"context"
	"fmt"
	"math"
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
	for _, cell := range []string{model.CellLSTM, model.CellGRU} {
		var c gridTally
		for seed := uint64(1); seed <= 18; seed++ {
			pixels := 2 + int(seed%3)
			m, ball := gatedPixelProblem(t, seed, pixels, []float64{0.05, 0.2, 0.5, 1}[seed%4], cell)
			againstGrid(t, fmt.Sprintf("%s seed %d", cell, seed), m, ball, seed, &c)
		}
		t.Logf("%s: %d robust, %d vulnerable of %d", cell, c.robust, c.vulnerable, c.total)
		if c.total < 20 || c.robust == 0 || c.vulnerable == 0 {
			t.Fatalf("%s: %d robust and %d vulnerable of %d samples", cell, c.robust, c.vulnerable, c.total)
		}
	}
}

// gridTally counts the verdicts of againstGrid; long those decided at
// K̂ ≥ 2.
type gridTally struct{ robust, vulnerable, total, long int }

// againstGrid finds the longest output of the ball (2–4 pixels) by a
// dense grid and a random search, then verifies K̂ = longest − 1 and
// longest with the default pipeline and with branch and bound alone, 2 s
// each: it fails the test where one says robust and the search finds
// longer, and tallies the verdicts into c. Outputs that run to the cap
// have no finite K̂ to test around.
func againstGrid(t *testing.T, what string, m model.Decoder[float64], ball spec.Ball, seed uint64, c *gridTally) {
	t.Helper()
	babOnly := verifyOpts()
	babOnly.BaB, babOnly.Solver, babOnly.NewLP, babOnly.Abstract = true, nil, nil, false
	lo, hi := ball.Box()
	maxLen, _ := gridMax(t, m, lo, hi, map[int]int{2: 201, 3: 41, 4: 17}[len(lo)], 12)
	maxLen = max(maxLen, randomMax(t, m, ball, 4000, 12, rand.New(rand.NewPCG(seed, 8))))
	if maxLen > 11 {
		return
	}
	for _, K := range []int{maxLen - 1, maxLen} {
		if K < 0 {
			continue
		}
		for _, opt := range []Options{verifyOpts(), babOnly} {
			opt.TimeLimit = 2e9 // 2 s
			r := verifyOne(t, m, ball, K, opt)
			c.total++
			if K >= 2 && r.Verdict != Unknown {
				c.long++
			}
			switch r.Verdict {
			case Robust:
				if maxLen > K {
					t.Fatalf("%s: robust (%s) at K̂ %d but the search finds length %d", what, r.Stage, K, maxLen)
				}
				c.robust++
			case Vulnerable:
				c.vulnerable++
			}
		}
	}
}

// TestLowerShowTell: the Show-and-Tell captioner (its LSTM's step −1 in
// the encoder, the start token's embedding at the first step) lowers into
// a graph whose float64 evaluation is the model's forward pass, and whose
// bounds contain sampled decodings.
func TestLowerShowTell(t *testing.T) {
	cfg := model.DefaultShowTellConfig([]string{"a", "b", "c", "<eos>"})
	a := cfg.Arch.(*model.ShowTellConfig)
	a.Input = model.InputConfig{Channels: 1, Height: 4, Width: 6, Min: -1, Max: 1}
	a.Conv = []model.ConvConfig{{OutChannels: 3, Kernel: 3, Stride: 2, Padding: 1}}
	a.FCHidden, a.Embedding, a.Hidden = 6, 4, 5
	cfg.MaxSteps = 8
	m, err := model.NewShowTell[float64](&cfg, rand.New(rand.NewPCG(5, 21)))
	if err != nil {
		t.Fatal(err)
	}
	randomBiases(m, 5)
	n, err := Lower(m)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 1))
	for trial := 0; trial < 30; trial++ {
		x := sampleIn(rng, negOnes(n.InputSize), ones(n.InputSize))
		_, logits, toks := greedy(n, x, 8)
		want, wantToks := modelLogits(t, m, x, 8)
		if len(toks) != len(wantToks) {
			t.Fatalf("IR decodes %v, model %v", toks, wantToks)
		}
		for k := range toks {
			if toks[k] != wantToks[k] {
				t.Fatalf("IR decodes %v, model %v", toks, wantToks)
			}
			for z, v := range logits[k] {
				if d := math.Abs(v - want[k][z]); d > 1e-12*(1+math.Abs(v)) {
					t.Fatalf("step %d token %d: IR logit %v, model %v", k, z, v, want[k][z])
				}
			}
		}
	}
	const K = 2
	lo, hi := randomBox(rng, n.InputSize, 0.2)
	g := newGraph(n, K)
	b := computeBounds(context.Background(), g, lo, hi, BoundAlphaCROWNFull)
	for trial := 0; trial < 300; trial++ {
		val, logits, toks := greedy(n, sampleIn(rng, lo, hi), K+1)
		checkPath(t, "show-and-tell", g, b, val, logits, toks)
	}
	// The whole pipeline, its MIP stages included (the encoder's LSTM step
	// has no recurrent input: its products meet constants): never robust
	// where a random search finds a longer caption.
	decided := 0
	for _, eps := range []float64{0.02, 0.2, 1} {
		x := sampleIn(rng, negOnes(n.InputSize), ones(n.InputSize))
		ball, err := spec.NewBall(x, eps, -1, 1)
		if err != nil {
			t.Fatal(err)
		}
		maxLen := randomMax(t, m, ball, 2000, 8, rand.New(rand.NewPCG(5, uint64(eps*100))))
		for _, K := range []int{maxLen - 1, maxLen} {
			if K < 0 || maxLen >= 8 {
				continue
			}
			opt := verifyOpts()
			opt.TimeLimit = 2e9
			r := verifyOne(t, m, ball, K, opt)
			if r.Verdict == Robust && maxLen > K {
				t.Fatalf("δ %g: robust (%s) at K̂ %d but the search finds length %d", eps, r.Stage, K, maxLen)
			}
			t.Logf("δ %g K̂ %d (search: %d): %s by %s in %.2fs", eps, K, maxLen, r.Verdict, r.Stage, r.Seconds)
			if r.Verdict != Unknown {
				decided++
			}
		}
	}
	if decided == 0 {
		t.Fatal("the pipeline decided no Show-and-Tell sample")
	}
}

func ones(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

func negOnes(n int) []float64 {
	v := ones(n)
	for i := range v {
		v[i] = -1
	}
	return v
}
