package verify

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/mip/cbc"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nn"
	"github.com/lenspec/lenspec/spec"
)

// TestEncodingFeasibleAtTrueActivations: for inputs that are
// counterexamples for K (ℓ(x) > K), the MIP point built from the network's
// true activations satisfies every constraint of the encoding.
func TestEncodingFeasibleAtTrueActivations(t *testing.T) {
	for _, cell := range testCells {
		t.Run(cell, func(t *testing.T) { testEncodingFeasibleAtTrueActivations(t, cell) })
	}
}

func testEncodingFeasibleAtTrueActivations(t *testing.T, cell string) {
	checked := 0
	for seed := uint64(1); seed <= seeds(cell, 40); seed++ {
		m, n := tinyNet(t, seed, int(seed%3), cell)
		rng := rand.New(rand.NewPCG(seed, 3))
		center := make([]float64, n.InputSize)
		for i := range center {
			center[i] = 2*rng.Float64() - 1
		}
		ball, err := spec.NewBall(center, []float64{0.05, 0.3, 1}[seed%3], -1, 1)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := ball.Box()
		for trial := 0; trial < 20; trial++ {
			x := make([]float64, n.InputSize)
			ball.Sample(rng, x)
			res := decode(t, m, x, 8)
			if !res[0].Stopped || len(res[0].Tokens) == 0 {
				continue
			}
			for K := 0; K < len(res[0].Tokens); K++ {
				for _, method := range boundMethods {
					s := newGraph(n, K)
					b := computeBounds(context.Background(), s, lo, hi, method)
					if b.Proven {
						t.Fatalf("seed %d: bounds proved ℓ ≤ %d but a sample decodes %v", seed, K, res[0].Tokens)
					}
					e, err := encode(context.Background(), s, b, K, encodeOptions{relaxGap: []float64{0, 0.05, 1, 0, 0, 0}[checked%6], abstract: checked%6 >= 3,
						abstractAt: s.enc - []int{0, 0, 0, 0, 1, 0}[checked%6], box: checked%6 == 5})
					if err != nil {
						t.Fatal(err)
					}
					v, ok, err := e.assignment(m, x)
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						t.Fatalf("seed %d K %d: a counterexample's path left the allowed tokens", seed, K)
					}
					if err := e.m.Check(v, 1e-9); err != nil {
						t.Fatalf("seed %d K %d %s: true activations infeasible: %v", seed, K, method, err)
					}
					if got := v[e.mvar]; got < 0 {
						t.Fatalf("seed %d K %d: counterexample has margin %v < 0", seed, K, got)
					}
					checked++
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d assignments checked", checked)
	}
}

// gridMax decodes a dense grid over the box (points per axis) and returns
// the longest output and an input producing it.
func gridMax(t testing.TB, m model.Decoder[float64], lo, hi []float64, per, steps int) (int, []float64) {
	n := len(lo)
	total := 1
	for i := 0; i < n; i++ {
		total *= per
	}
	xs := make([]float64, 0, total*n)
	idx := make([]int, n)
	for k := 0; k < total; k++ {
		r := k
		for i := 0; i < n; i++ {
			idx[i] = r % per
			r /= per
			xs = append(xs, lo[i]+(hi[i]-lo[i])*float64(idx[i])/float64(per-1))
		}
	}
	res := decode(t, m, xs, steps)
	best, at := -1, 0
	for k, r := range res {
		l := len(r.Tokens)
		if !r.Stopped {
			l = steps + 1
		}
		if l > best {
			best, at = l, k
		}
	}
	return best, xs[at*n : (at+1)*n]
}

func pixelConfig(pixels, vocab int) *model.Config {
	c := model.DefaultCaptionerConfig()
	a := c.Arch.(*model.CaptionerConfig)
	a.Input = model.InputConfig{Channels: 1, Height: 1, Width: pixels, Min: -1, Max: 1}
	a.Conv = nil
	a.FCHidden, a.Embedding, a.Hidden = 2, 2, 3
	c.Vocab = make([]string, vocab)
	for i := range c.Vocab {
		c.Vocab[i] = string(rune('a' + i))
	}
	c.Vocab[vocab-1] = "<eos>"
	c.EOS = vocab - 1
	c.MaxSteps = 12
	return &c
}

// pixelProblem is a random pixel captioner (pixelConfig, seeded weights
// and biases) and a ball of radius delta around a random centre of
// [−1, 1]^pixels: the tiny problems the grid tests decide by brute force.
func pixelProblem(t *testing.T, seed uint64, pixels int, delta float64) (*model.Captioner[float64], spec.Ball) {
	t.Helper()
	m, err := model.NewCaptioner[float64](pixelConfig(pixels, 3), rand.New(rand.NewPCG(seed, 77)))
	if err != nil {
		t.Fatal(err)
	}
	randomBiases(m, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	center := make([]float64, pixels)
	for i := range center {
		center[i] = 2*rng.Float64() - 1
	}
	ball, _ := spec.NewBall(center, delta, -1, 1)
	return m, ball
}

func verifyOpts() Options {
	o := DefaultOptions()
	o.Solver = cbc.Solver{}
	o.NewLP = func(m *mip.Model) (LPRelaxation, error) {
		lp, err := cbc.NewLP(m)
		if err != nil {
			return nil, err
		}
		return lp, nil
	}
	o.TimeLimit = 20 * time.Second
	// No falsifier and no branch and bound (on by default): the MIP
	// stages must decide on their own; tests turn it on where they mean it.
	o.BaB = false
	o.MaxSteps = 12
	return o
}

func verifyOne(t *testing.T, m model.Decoder[float64], ball spec.Ball, K int, opt Options) *Result {
	t.Helper()
	n, err := Lower(m)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Verify(context.Background(), n, m, Sample{Name: "t", Set: ball, K: K}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict == Vulnerable {
		if !ball.Contains(r.Witness) {
			t.Fatal("witness outside the ball")
		}
		res := decode(t, m, r.Witness, 12)
		if !spec.Exceeds(res[0], K) {
			t.Fatalf("vulnerable witness decodes %v, not longer than %d", res[0].Tokens, K)
		}
	}
	return r
}

// toyModel is the appendix's toy model: a 2-pixel image, an embedding
// network with one hidden layer of two ReLUs a and b, a ReLU RNN cell and a
// vocabulary of one token plus eos. The weights were chosen (by a search
// over seeds, then written out) so the longest output over [-1, 1]² is 3.
func toyModel(t testing.TB) *model.Captioner[float64] {
	c := pixelConfig(2, 2)
	m, err := model.NewCaptioner[float64](c, nil)
	if err != nil {
		t.Fatal(err)
	}
	cell := m.RNN
	set := func(dst []float64, v ...float64) { copy(dst, v) }
	set(m.FC1.W.W.Data, 1.0, -1.0, 0.5, 1.0) // a = ReLU(x1 − x2), b = ReLU(0.5x1 + x2)
	set(m.FC1.B.W.Data, 0, 0)
	set(m.FC2.W.W.Data, 1.0, 0.0, 0.0, 1.0) // i0 = (a, b)
	set(m.FC2.B.W.Data, 0, 0)
	set(m.Emb.W.W.Data, 0.0, 0.0, 0.0, 0.0)
	// h1 = ReLU(i0 + counter), h_{t+1} = ReLU(h_t − 0.4 …): the first hidden
	// unit carries a + b and decays by 0.4 a step; eos wins once it is small.
	set(cell.Wih.W.Data, 1, 1, 0, 0, 0, 0)
	set(cell.Whh.W.Data, 1, 0, 0, 0, 0, 0, 0, 0, 0)
	set(cell.Bih.W.Data, -0.4, 1, 0)
	set(cell.Bhh.W.Data, 0, 0, 0)
	// o[token] = h[0], o[eos] = 0.1·h[1] (h[1] = 1 always): the token wins
	// while h[0] > 0.1.
	set(m.Out.W.W.Data, 1, 0, 0, 0, 0.1, 0)
	set(m.Out.B.W.Data, 0, 0)
	return m
}

func TestToyModelMatchesGrid(t *testing.T) {
	m := toyModel(t)
	ball, _ := spec.NewBall([]float64{0, 0}, 1, -1, 1)
	lo, hi := ball.Box()
	maxLen, _ := gridMax(t, m, lo, hi, 401, 12)
	if maxLen < 2 || maxLen > 10 {
		t.Fatalf("toy model's longest output over the box is %d; the test needs 2..10", maxLen)
	}
	opt := verifyOpts()
	for _, method := range boundMethods {
		opt.Bounds = method
		if r := verifyOne(t, m, ball, maxLen-1, opt); r.Verdict != Vulnerable {
			t.Errorf("%s: K̂ = %d (one below the true maximum): %s (%s)", method, maxLen-1, r.Verdict, r.Reason)
		}
		if r := verifyOne(t, m, ball, maxLen, opt); r.Verdict != Robust {
			t.Errorf("%s: K̂ = %d (the true maximum): %s (%s)", method, maxLen, r.Verdict, r.Reason)
		}
	}
}

// TestRandomTinyCaptionersAgainstGrid: on random captioners with 2–4 pixel
// inputs, verify never contradicts a dense grid search: robust only where
// the grid finds nothing longer than K̂, and every vulnerable witness
// replays. Most samples must be decided.
func TestRandomTinyCaptionersAgainstGrid(t *testing.T) {
	// The default pipeline, and the token search straight after the
	// bounds (no abstractions), which must settle some samples itself.
	tokensFirst := verifyOpts()
	tokensFirst.Abstract = false
	// Branch and bound alone (no MIP) must settle some samples itself.
	babOnly := verifyOpts()
	babOnly.BaB, babOnly.Solver, babOnly.NewLP, babOnly.Abstract = true, nil, nil, false
	byBaB, babTotal, babDecided := 0, 0, 0
	byTokens, byLeaves := 0, 0
	decided, total := 0, 0
	for seed := uint64(1); seed <= 48; seed++ {
		pixels := 2 + int(seed%3)
		m, ball := pixelProblem(t, seed, pixels, []float64{0.05, 0.2, 0.5, 1}[seed%4])
		lo, hi := ball.Box()
		per := map[int]int{2: 301, 3: 61, 4: 25}[pixels]
		maxLen, _ := gridMax(t, m, lo, hi, per, 12)
		if maxLen > 11 {
			continue // runs to the cap: no finite K̂ to test around
		}
		for _, K := range []int{maxLen - 1, maxLen} {
			if K < 0 {
				continue
			}
			for i, opt := range []Options{verifyOpts(), tokensFirst, babOnly} {
				r := verifyOne(t, m, ball, K, opt)
				if i == 2 {
					babTotal++
					if r.Verdict == Robust && maxLen > K {
						t.Fatalf("seed %d: branch and bound says robust (%s) at K̂ %d but the grid finds length %d", seed, r.Stage, K, maxLen)
					}
					if r.Verdict != Unknown {
						babDecided++
					}
					t.Logf("bab seed %d K̂ %d grid %d: %s %s %s %+v", seed, K, maxLen, r.Verdict, r.Stage, r.Reason, r.Phases)
					if r.Stage == "bab" && r.Verdict == Robust {
						byBaB++
					}
					continue
				}
				total++
				switch r.Verdict {
				case Robust:
					if maxLen > K {
						t.Fatalf("seed %d: robust (%s) at K̂ %d but the grid finds length %d", seed, r.Stage, K, maxLen)
					}
					decided++
				case Vulnerable:
					decided++
				default:
					t.Logf("seed %d K̂ %d (grid max %d): unknown: %s", seed, K, maxLen, r.Reason)
				}
				if r.Stage == "tokens" {
					byTokens++
					for _, ph := range r.Phases {
						if ph.Name == "tokens" && ph.LeavesOpen > 0 {
							byLeaves++
						}
					}
				}
			}
		}
	}
	t.Logf("decided %d of %d samples, %d by the token search (%d through branch and bound on its leaves); branch and bound alone decided %d of %d, proved %d the root bounds did not", decided, total, byTokens, byLeaves, babDecided, babTotal, byBaB)
	if byBaB == 0 {
		t.Fatal("branch and bound proved no sample the root bounds left open")
	}
	if byTokens == 0 || byLeaves == 0 {
		t.Fatalf("the token search settled %d samples, %d through branch and bound on its leaves", byTokens, byLeaves)
	}
	if total < 20 || decided < total*9/10 {
		t.Fatalf("decided %d of %d samples", decided, total)
	}
}

// TestRobustSurvivesAttacks: samples verified robust are not broken by
// random search or PGD at the same radius.
func TestRobustSurvivesAttacks(t *testing.T) {
	robust := 0
	for seed := uint64(1); seed <= 12; seed++ {
		m, n := tinyNet(t, seed, 1)
		rng := rand.New(rand.NewPCG(seed, 5))
		center := make([]float64, n.InputSize)
		for i := range center {
			center[i] = 2*rng.Float64() - 1
		}
		orig := decode(t, m, center, 8)
		if !orig[0].Stopped {
			continue
		}
		K := len(orig[0].Tokens)
		ball, _ := spec.NewBall(center, 0.1, -1, 1)
		r := verifyOne(t, m, ball, K, verifyOpts())
		if r.Verdict != Robust {
			continue
		}
		robust++
		tg := attack.Target[[]float64]{Set: attack.NewContinuous(ball), K: K, Seed: seed}
		m32, err := model.Cast[float32](m)
		if err != nil {
			t.Fatal(err)
		}
		ro, err := attack.RandomSearch(context.Background(), m32, m, tg, attack.RandomOptions{Samples: 20000, Batch: 2000})
		if err != nil {
			t.Fatal(err)
		}
		pgd := attack.DefaultPGD()
		pgd.Steps, pgd.LR, pgd.Restarts = 500, 0.01, 4
		po, err := attack.PGD(context.Background(), m32, m, []attack.Target[[]float64]{tg}, pgd)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []attack.Outcome[[]float64]{ro, po[0]} {
			if spec.Exceeds(o.Result, K) {
				t.Fatalf("seed %d: verified robust at K̂ %d, an attack decodes %v", seed, K, o.Result.Tokens)
			}
		}
	}
	if robust == 0 {
		t.Fatal("no sample was verified robust")
	}
}

// randomBiases replaces the zero initial biases: with all biases zero, a
// dead hidden state gives all-zero logits, an exact tie, and the
// interesting outputs would all be ties (which lenspec never claims).
func randomBiases(m model.Decoder[float64], seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1234))
	for _, p := range m.Params() {
		if len(p.W.Shape) == 1 {
			for i := range p.W.Data {
				p.W.Data[i] = 0.3 * rng.NormFloat64()
			}
		}
	}
}

// opaque hides a decoder's lowering.
type opaque struct{ model.Decoder[float64] }

// badLowering lowers a captioner's encoder and then misdescribes its step.
type badLowering struct {
	*model.Captioner[float64]
	how int
}

func (b badLowering) LowerStep(bd nn.Builder, first bool, s map[string]nn.Value) (nn.Value, map[string]nn.Value, error) {
	out, next, err := b.Captioner.LowerStep(bd, first, s)
	switch b.how {
	case 0: // a sum of vectors of different widths
		bd.Add("bad", out, s["i0"], out)
	case 1: // a state it reads but does not write back
		if !first {
			delete(next, "h")
		}
	case 2: // an activation the verifier has no rules for
		bd.Act("bad", "softplus", out)
	case 3: // a token at the first step
		bd.Embed("bad", nn.Values{1}, 1, 1)
	}
	return out, next, err
}

// TestLowerRefuses: a decoder without a lowering, and lowerings that
// misdescribe themselves, are refused with the reason.
func TestLowerRefuses(t *testing.T) {
	m, _ := tinyNet(t, 1, 1)
	if _, err := Lower(opaque{m}); err == nil || !strings.Contains(err.Error(), "does not lower itself") {
		t.Fatalf("Lower(a decoder without a lowering) = %v", err)
	}
	for how, want := range []string{"width", `state "h"`, `activation "softplus"`, "only a decoder step after the first"} {
		if _, err := Lower(badLowering{m, how}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("lowering %d: %v, want an error about %s", how, err, want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	m, n := tinyNet(t, 1, 1)
	ball, _ := spec.NewBall(make([]float64, n.InputSize), 0.1, -1, 1)
	for _, c := range []struct {
		change func(*Options, *Sample)
		want   string
	}{
		{func(o *Options, _ *Sample) { o.RelaxGap = math.NaN() }, "relaxation gap"},
		{func(o *Options, _ *Sample) { o.Safety = math.Inf(1) }, "safety"},
		{func(o *Options, _ *Sample) { o.Threads = 0 }, "threads"},
		{func(o *Options, _ *Sample) { o.Bounds = "zonotope" }, "bound method"},
		{func(o *Options, _ *Sample) { o.MaxSteps = model.MaxStepCap + 1 }, "step cap"},
		{func(_ *Options, s *Sample) { s.K = MaxK + 1 }, "K̂"},
		{func(_ *Options, s *Sample) { s.K = -1 }, "K̂"},
	} {
		o, s := verifyOpts(), Sample{Name: "t", Set: ball, K: 1}
		c.change(&o, &s)
		_, err := Verify(context.Background(), n, m, s, o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
}

// TestFalsifierWitness: a falsifier's candidate that replays settles the
// sample as vulnerable at stage "attack"; one that does not replay is only
// a candidate, and the verifier goes on.
func TestFalsifierWitness(t *testing.T) {
	m := toyModel(t)
	ball, _ := spec.NewBall([]float64{0, 0}, 1, -1, 1)
	lo, hi := ball.Box()
	maxLen, at := gridMax(t, m, lo, hi, 401, 12)
	opt := verifyOpts()
	opt.Falsifier = fixedCandidate(at)
	if r := verifyOne(t, m, ball, maxLen-1, opt); r.Verdict != Vulnerable || r.Stage != "attack" {
		t.Fatalf("a replaying candidate gave %s at stage %q", r.Verdict, r.Stage)
	}
	opt.Falsifier = fixedCandidate([]float64{0, 0})
	if r := verifyOne(t, m, ball, maxLen, opt); r.Verdict != Robust {
		t.Fatalf("K̂ at the true maximum with a useless candidate: %s (%s)", r.Verdict, r.Reason)
	}
	m32, err := model.Cast[float32](m)
	if err != nil {
		t.Fatal(err)
	}
	pgd := attack.DefaultPGD()
	pgd.Steps, pgd.LR, pgd.Restarts = 300, 0.01, 2
	opt.Falsifier = attack.Falsifier{D32: m32, D64: m, PGD: pgd, Seed: 1}
	if r := verifyOne(t, m, ball, maxLen-1, opt); r.Verdict != Vulnerable {
		t.Fatalf("with the PGD falsifier: %s (%s)", r.Verdict, r.Reason)
	}
}

type fixedCandidate []float64

func (f fixedCandidate) Falsify(context.Context, spec.Region, int, int, uint64) ([]float64, error) {
	return append([]float64(nil), f...), nil
}

// TestWitnessJudgedOnDecidingSteps is the 2-pixel model: whatever
// the input, it decodes five tokens, with clear margins at steps 0–3 and an
// exact tie between two tokens at step 4, then eos. ℓ > K̂ is settled by
// steps 0..K̂, so for K̂ = 2 and 3 the tie is irrelevant and the answer is
// vulnerable; for K̂ = 4 the tie is on the deciding path and no witness may
// be claimed; for K̂ = 5 the model is robust.
func TestWitnessJudgedOnDecidingSteps(t *testing.T) {
	m, ball := fiveTokens(t)
	for _, c := range []struct {
		k    int
		want Verdict
	}{{2, Vulnerable}, {3, Vulnerable}, {4, Unknown}, {5, Robust}} {
		opt := verifyOpts()
		opt.TimeLimit = 5 * time.Second
		r := verifyOne(t, m, ball, c.k, opt)
		if r.Verdict != c.want {
			t.Errorf("K̂ = %d: %s (%s), want %s", c.k, r.Verdict, r.Reason, c.want)
		}
	}
}

// countingFalsifier returns x (nil: nothing) and counts its calls.
type countingFalsifier struct {
	x     []float64
	calls int
}

func (f *countingFalsifier) Falsify(context.Context, spec.Region, int, int, uint64) ([]float64, error) {
	f.calls++
	return slices.Clone(f.x), nil
}

// TestSearchStage: the wide falsifier runs as the first stage only where
// the bounds do not prove the property; its witness is replayed and
// decides the sample, and without one the later stages go on.
func TestSearchStage(t *testing.T) {
	m, ball := fiveTokens(t)
	for _, c := range []struct {
		k     int
		x     []float64
		want  Verdict
		stage string
		calls int
		phase string // the first phase's status
	}{
		{2, ball.X, Vulnerable, "falsify", 1, "witness"},
		{2, nil, Vulnerable, "", 1, "no witness"}, // decided by a later stage
		{5, ball.X, Robust, "bounds", 0, ""},
	} {
		opt := verifyOpts()
		opt.TimeLimit = 5 * time.Second
		f := &countingFalsifier{x: c.x}
		opt.Search = f
		r := verifyOne(t, m, ball, c.k, opt)
		if r.Verdict != c.want || f.calls != c.calls {
			t.Fatalf("K̂ = %d, candidate %v: %s at %q (%s) after %d calls, want %s after %d", c.k, c.x, r.Verdict, r.Stage, r.Reason, f.calls, c.want, c.calls)
		}
		if c.stage != "" && r.Stage != c.stage || c.stage == "" && r.Stage == "falsify" {
			t.Errorf("K̂ = %d, candidate %v: stage %q, want %q", c.k, c.x, r.Stage, c.stage)
		}
		if c.phase != "" && (len(r.Phases) == 0 || r.Phases[0].Name != "falsify" || r.Phases[0].Status != c.phase) {
			t.Errorf("K̂ = %d, candidate %v: phases %+v, want falsify (%s) first", c.k, c.x, r.Phases, c.phase)
		}
	}
}

// fiveTokens is a 2-pixel captioner that decodes five tokens whatever the
// input, with clear margins at steps 0–3 and an exact tie between two
// tokens at step 4, then eos; and a ball.
func fiveTokens(t *testing.T) (*model.Captioner[float64], spec.Ball) {
	t.Helper()
	c := pixelConfig(2, 3)
	m, err := model.NewCaptioner[float64](c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params() {
		clear(p.W.Data)
	}
	// h_{t+1}[0] = t + 1 counts the steps; the input does not matter.
	m.RNN.Whh.W.Data[0] = 1
	m.RNN.Bih.W.Data[0] = 1
	// Step t (h[0] = t+1): o[a] = 10, o[b] = 2h, o[eos] = 5h − 17: a wins
	// by ≥ 2 at steps 0–3, a and b tie at step 4, eos wins at step 5.
	copy(m.Out.W.W.Data, []float64{0, 0, 0, 2, 0, 0, 5, 0, 0})
	copy(m.Out.B.W.Data, []float64{10, 0, -17})
	ball, _ := spec.NewBall([]float64{0.3, -0.2}, 0.5, -1, 1)
	res := decode(t, m, ball.X, 12)
	if len(res[0].Tokens) != 5 || !res[0].Stopped || !res[0].Tie() {
		t.Fatalf("the model decodes %v (stopped %v, margin %g); the test needs 5 tokens with a tie", res[0].Tokens, res[0].Stopped, res[0].MinRelMargin)
	}
	return m, ball
}

// TestBaBResumes: a branch-and-bound search stopped by its deadline keeps
// its frontier, so one cut into many short slices (as the pipeline's two
// branch-and-bound stages cut it) ends as the uninterrupted search does:
// proven, or at a replayed counterexample, never robust where the grid
// finds a longer output.
func TestBaBResumes(t *testing.T) {
	compared, sliced, between := 0, 0, 0
	forBaBProblems(t, 40, func(seed uint64) (int, float64) { return 2 + int(seed%2), []float64{0.2, 0.5}[seed%2] }, func() bool { return compared < 8 }, func(p babProblem) {
		maxLen, K, lo, hi, g, b, candidate := p.maxLen, p.K, p.lo, p.hi, p.g, p.b, p.candidate
		search := func() *babSearch {
			return g.newBaB(context.Background(), lo, hi, verifyOpts(), []*domain{{splits: splitSet{}, b: b}}, candidate)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		whole, err := search().run(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if whole.status == babTimeLimit {
			return
		}
		s := search()
		var out babOutcome
		for slices := 0; ; slices++ {
			// Pauses land at every point of the loop, between a
			// domain's children among them.
			out, err = s.run(&countdown{Context: context.Background(), left: 1 + slices%4})
			if err != nil {
				t.Fatal(err)
			}
			if out.status != babTimeLimit || slices > 1e5 {
				sliced += slices
				break
			}
			if len(s.queued) > 0 {
				between++
			}
		}
		if out.status != whole.status {
			t.Fatalf("seed %d K̂ %d: sliced search ends %v, whole search %v", p.seed, K, out.status, whole.status)
		}
		// A resumed search does no work twice: it bounds exactly the
		// domains the whole search bounds.
		if out.domains != whole.domains {
			t.Fatalf("seed %d K̂ %d: sliced search bounded %d domains, whole search %d", p.seed, K, out.domains, whole.domains)
		}
		if out.status == babProven && maxLen > K {
			t.Fatalf("seed %d: branch and bound proves K̂ %d, the grid finds length %d", p.seed, K, maxLen)
		}
		if again, _ := s.run(context.Background()); again.status != out.status {
			t.Fatalf("seed %d: an ended search resumed ends %v, had ended %v", p.seed, again.status, out.status)
		}
		compared++
	})
	if compared < 4 || sliced == 0 || between == 0 {
		t.Fatalf("%d searches compared, %d slices, %d paused between a domain's children: too few", compared, sliced, between)
	}
	t.Logf("%d searches compared, cut into %d slices in all, %d between a domain's children", compared, sliced, between)
}

// countdown is a context whose deadline passes after its Err has said nil
// left times: a search stopped at the same points on every run.
type countdown struct {
	context.Context
	left int
}

func (c *countdown) Err() error {
	if c.left <= 0 {
		return context.DeadlineExceeded
	}
	c.left--
	return nil
}

// TestProofOutOfReach: the adaptive search's rule for another falsifier
// round, and the distinct restarts of each round.
func TestProofOutOfReach(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		before, after float64
		slice, left   time.Duration
		want          bool
	}{
		{4, 2, s, 10 * s, false},           // 2/s: 1 s to go
		{4, 3.9, s, 10 * s, true},          // 0.1/s: 39 s to go
		{4, 4, s, 10 * s, true},            // no progress
		{4, 4.5, s, 10 * s, true},          // worse (a resumed search's frontier)
		{4, -1, s, 10 * s, false},          // proven
		{math.Inf(1), 3, s, 100 * s, true}, // no bound before
		{10, 5, 2 * s, 3 * s, false},       // 2.5/s: 2 s to go, 3 s left
	} {
		if got := proofOutOfReach(c.before, c.after, c.slice, c.left); got != c.want {
			t.Errorf("%v → %v in %v, %v left: %v, want %v", c.before, c.after, c.slice, c.left, got, c.want)
		}
	}
	seen := map[uint64]bool{}
	for stream := uint64(0); stream < 50; stream++ {
		for round := 0; round < 20; round++ {
			st := roundStream(stream, round)
			if round == 0 && st != stream {
				t.Fatalf("round 0 of stream %d draws %d", stream, st)
			}
			if seen[st] {
				t.Fatalf("stream %d round %d repeats restarts %d", stream, round, st)
			}
			seen[st] = true
		}
	}
}

// stuckSolver takes d whatever its context says (a solver busy where it
// does not look at its clock), then reports the time limit.
type stuckSolver struct{ d time.Duration }

func (s stuckSolver) Solve(context.Context, *mip.Model, mip.Options) (*mip.Result, error) {
	time.Sleep(s.d)
	return &mip.Result{Status: mip.TimeLimit, Bound: math.Inf(-1)}, nil
}

// TestLimitHoldsWhenSolverDoesNot: a solver that ignores the time limit
// does not carry the sample past it; the sample is unknown by the time
// limit. Broken (the solve awaited), the sample takes the solver's 6 s.
func TestLimitHoldsWhenSolverDoesNot(t *testing.T) {
	m, ball := fiveTokens(t)
	opt := verifyOpts()
	opt.Solver, opt.NewLP = stuckSolver{6 * time.Second}, nil
	opt.TimeLimit = time.Second
	t0 := time.Now()
	r := verifyOne(t, m, ball, 2, opt)
	took := time.Since(t0)
	if r.Verdict != Unknown || !strings.Contains(r.Reason, "time limit") {
		t.Fatalf("%s (%s), want unknown by the time limit", r.Verdict, r.Reason)
	}
	if took > 3*time.Second {
		t.Fatalf("the sample took %v of a 1 s limit: it waited for the solver", took)
	}
	t.Logf("%v of a 1 s limit (phases %+v)", took, r.Phases)
}

// boundlessSolver stops at once without a bound, as CBC does when the
// deadline falls inside its root LP.
type boundlessSolver struct{}

func (boundlessSolver) Solve(context.Context, *mip.Model, mip.Options) (*mip.Result, error) {
	return &mip.Result{Status: mip.Cancelled, Bound: math.Inf(-1)}, nil
}

// TestSolverReasonNamesSampleBound: a solve that stops before its root has
// no bound of its own, and the reason must still name the margin the
// sample's earlier stages proved (its Bound), not +Inf. Broken (the solve's
// own bound), the reason reads "proven margin ≤ +Inf".
func TestSolverReasonNamesSampleBound(t *testing.T) {
	m, ball := fiveTokens(t)
	opt := verifyOpts()
	opt.Solver, opt.NewLP = boundlessSolver{}, nil
	opt.TimeLimit = time.Second
	r := verifyOne(t, m, ball, 2, opt)
	if r.Verdict != Unknown || !strings.Contains(r.Reason, "solver stopped") {
		t.Fatalf("%s (%s), want unknown from the solver", r.Verdict, r.Reason)
	}
	if math.IsInf(r.Bound, 0) || math.IsNaN(r.Bound) {
		t.Fatalf("bound %v: the bounds stage proved no finite margin, the test needs one", r.Bound)
	}
	if want := fmt.Sprintf("proven margin ≤ %.3g", r.Bound); !strings.Contains(r.Reason, want) {
		t.Fatalf("reason %q does not name the sample's bound (%q)", r.Reason, want)
	}
}

// TestBaBReasonNamesSampleBound: branch and bound stopped by the time
// limit before it bounded its root has no margin bound of its own (+Inf),
// and its reason must name the sample's, the record's proven_bound, as the
// solver's does (TestSolverReasonNamesSampleBound). Broken, the reason
// reads "margin ≤ +Inf".
func TestBaBReasonNamesSampleBound(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the time limit, before the root
	res := &Result{Verdict: Unknown, Bound: 1.25}
	done, _, err := babPhase(ctx, &babSearch{roots: []*domain{{}}}, res)
	if err != nil || done {
		t.Fatalf("done %v, err %v: want a search stopped by its time limit", done, err)
	}
	if res.Bound != 1.25 {
		t.Fatalf("the sample's bound became %v", res.Bound)
	}
	if want := "margin ≤ 1.25"; !strings.Contains(res.Reason, want) || strings.Contains(res.Reason, "Inf") {
		t.Fatalf("reason %q does not name the sample's bound (%q)", res.Reason, want)
	}
}

// babProblem is a brute-forced branch-and-bound problem: a random pixel
// captioner, its ball's box, K̂ next to the grid's longest output, the
// graph, its root bounds (not proven) and the replay of a candidate.
type babProblem struct {
	seed      uint64
	maxLen, K int
	lo, hi    []float64
	g         *graph
	b         *Bounds
	candidate func([]float64) (bool, error)
}

// forBaBProblems calls each on the problems of seeds 1..seeds while more
// says so (asked before each seed): shape picks a seed's pixels and δ, K̂
// is the grid's longest output and one less, and problems whose root
// bounds prove the property are skipped.
func forBaBProblems(t *testing.T, seeds uint64, shape func(seed uint64) (int, float64), more func() bool, each func(p babProblem)) {
	t.Helper()
	for seed := uint64(1); seed <= seeds && more(); seed++ {
		pixels, delta := shape(seed)
		m, ball := pixelProblem(t, seed, pixels, delta)
		lo, hi := ball.Box()
		maxLen, _ := gridMax(t, m, lo, hi, map[int]int{2: 301, 3: 61, 4: 25}[pixels], 12)
		if maxLen > 11 {
			continue
		}
		n, err := Lower(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, K := range []int{maxLen - 1, maxLen} {
			if K < 0 {
				continue
			}
			g := newGraph(n, K)
			b := computeBounds(context.Background(), g, lo, hi, BoundCROWN)
			if b.Proven {
				continue
			}
			candidate := func(x []float64) (bool, error) {
				return spec.Exceeds(decode(t, m, x, 12)[0], K), nil
			}
			each(babProblem{seed: seed, maxLen: maxLen, K: K, lo: lo, hi: hi, g: g, b: b, candidate: candidate})
		}
	}
}
