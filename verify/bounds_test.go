package verify

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
)

// testCells are the decoder cells the verifier's tests run on.
var testCells = []string{model.CellReLU, model.CellLSTM, model.CellGRU}

// seeds is how many seeds a test runs for a cell: n for the ReLU RNN, a
// third of them for a gated cell, whose graphs (four or three gates, and
// their products, per step) take longer to bound; their rules are
// sampled on their own in ops_test.go.
func seeds(cell string, n uint64) uint64 {
	if cell == model.CellReLU {
		return n
	}
	return max(n/3, 6)
}

func tinyConfig(convs int, cell ...string) *model.Config {
	c := model.DefaultCaptionerConfig()
	a := c.Arch.(*model.CaptionerConfig)
	if len(cell) > 0 {
		a.Cell = cell[0]
	}
	a.Input = model.InputConfig{Channels: 1, Height: 4, Width: 6, Min: -1, Max: 1}
	a.Conv = []model.ConvConfig{{OutChannels: 3, Kernel: 3, Stride: 2, Padding: 1}, {OutChannels: 2, Kernel: 3, Stride: 1, Padding: 1}}[:convs]
	a.FCHidden, a.Embedding, a.Hidden = 6, 4, 5
	c.Vocab = []string{"a", "b", "c", "<eos>"}
	c.EOS = 3
	c.MaxSteps = 8
	return &c
}

// decode decodes inputs xs (one after the other) with the float64 model.
func decode(t testing.TB, m model.Decoder[float64], xs []float64, steps int) []model.Result {
	t.Helper()
	res, err := model.Decode(context.Background(), m, model.Batch[float64]{X: xs}, steps)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// tinyNet is a random captioner on a 4×6 input with convs convolutions
// and the given cell (default the ReLU RNN), lowered.
func tinyNet(t testing.TB, seed uint64, convs int, cell ...string) (*model.Captioner[float64], *Net) {
	t.Helper()
	return randomNet(t, tinyConfig(convs, cell...), seed)
}

// randomNet is a captioner of configuration c with random weights and
// biases drawn from seed, lowered.
func randomNet(t testing.TB, c *model.Config, seed uint64) (*model.Captioner[float64], *Net) {
	t.Helper()
	m, err := model.NewCaptioner[float64](c, rand.New(rand.NewPCG(seed, 21)))
	if err != nil {
		t.Fatal(err)
	}
	randomBiases(m, seed)
	n, err := Lower(m)
	if err != nil {
		t.Fatal(err)
	}
	return m, n
}

// greedy decodes x with the verifier's IR unrolled for steps steps,
// returning every node's output, the logits and the tokens.
func greedy(n *Net, x []float64, steps int) (val [][]float64, logits [][]float64, toks []int) {
	tr := newGraph(n, steps-1).eval(x, nil)
	return tr.val, tr.logits, tr.tokens
}

// checkPath checks a decoding's values against bounds b: every node it
// evaluated whose step is still a counterexample candidate (no eos
// emitted before it), the logits, the margins and that every non-eos token
// emitted is allowed.
func checkPath(t *testing.T, what string, g *graph, b *Bounds, val, logits [][]float64, toks []int) {
	t.Helper()
	eosAt := len(toks)
	for s, y := range toks {
		if y == g.net.EOS {
			eosAt = s
			break
		}
	}
	for id, v := range val {
		n := g.nodes[id]
		if id >= len(b.Val) || b.Val[id] == nil || n.step > eosAt || n.step >= len(b.Logits) {
			continue
		}
		checkIn(t, BoundMethod(what), n.name, b.Val[id], v)
	}
	for step := 0; step < len(logits) && step < len(b.Logits) && step <= eosAt; step++ {
		checkIn(t, BoundMethod(what), "logits", b.Logits[step], logits[step])
		for z := range logits[step] {
			if z == g.net.EOS {
				continue
			}
			d := logits[step][z] - logits[step][g.net.EOS]
			if mg := b.Margin[step][z]; d < mg.Lo || d > mg.Hi {
				t.Fatalf("%s step %d: margin %v of token %d outside %+v", what, step, d, z, mg)
			}
		}
		if y := toks[step]; y != g.net.EOS && !b.Allowed[step][y] {
			t.Fatalf("%s step %d: token %d emitted but not allowed", what, step, y)
		}
	}
}

// modelLogits decodes x with the model's own forward pass (no eos
// stopping), returning each step's logits and argmax.
func modelLogits(t testing.TB, m model.Decoder[float64], x []float64, steps int) (logits [][]float64, toks []int) {
	t.Helper()
	tp := ad.NewTape[float64](false)
	_, err := model.Greedy(tp, m, model.Input[float64]{X: tp.Const(ad.FromSlice(x, 1, len(x)))}, model.GreedyOptions[float64]{MaxSteps: steps, OnStep: func(_ int, o *ad.Node[float64], _ []int, _ []bool) {
		row := append([]float64(nil), o.Value.Data[:m.Vocab()]...)
		logits = append(logits, row)
		y, _, _ := model.Argmax(row)
		toks = append(toks, y)
	}})
	if err != nil {
		t.Fatal(err)
	}
	return logits, toks
}

// TestLowerMatchesModel: the IR's float64 evaluation is the model's
// forward pass: the same logits at every step (to rounding: the IR sums in
// another order) and the same tokens.
func TestLowerMatchesModel(t *testing.T) {
	for _, cell := range testCells {
		t.Run(cell, func(t *testing.T) { testLowerMatchesModel(t, cell) })
	}
}

func testLowerMatchesModel(t *testing.T, cell string) {
	for _, convs := range []int{0, 1, 2} {
		m, n := tinyNet(t, 3, convs, cell)
		rng := rand.New(rand.NewPCG(1, 1))
		for trial := 0; trial < 50; trial++ {
			x := make([]float64, n.InputSize)
			for i := range x {
				x[i] = 2*rng.Float64() - 1
			}
			_, logits, toks := greedy(n, x, 8)
			want, wantToks := modelLogits(t, m, x, 8)
			if len(toks) != len(wantToks) {
				t.Fatalf("convs %d: IR decodes %v, model %v", convs, toks, wantToks)
			}
			for k := range toks {
				if toks[k] != wantToks[k] {
					t.Fatalf("convs %d: IR decodes %v, model %v", convs, toks, wantToks)
				}
				for z, v := range logits[k] {
					if d := math.Abs(v - want[k][z]); d > 1e-12*(1+math.Abs(v)) {
						t.Fatalf("convs %d step %d token %d: IR logit %v, model %v", convs, k, z, v, want[k][z])
					}
				}
			}
		}
	}
}

// TestBoundsContainSamples: every sampled input's activations along its
// greedy path lie inside the bounds, for every method and for bounds cut
// short by their context's end, as long as the path is still a
// counterexample candidate (no eos yet).
func TestBoundsContainSamples(t *testing.T) {
	for _, cell := range testCells {
		t.Run(cell, func(t *testing.T) { testBoundsContainSamples(t, cell) })
	}
}

func testBoundsContainSamples(t *testing.T, cell string) {
	const K = 3
	for seed := uint64(1); seed <= seeds(cell, 30); seed++ {
		convs := int(seed % 3)
		_, n := tinyNet(t, seed, convs, cell)
		rng := rand.New(rand.NewPCG(seed, 9))
		center := make([]float64, n.InputSize)
		for i := range center {
			center[i] = 2*rng.Float64() - 1
		}
		delta := []float64{0.01, 0.1, 0.5, 2}[seed%4]
		lo, hi := make([]float64, n.InputSize), make([]float64, n.InputSize)
		for i, c := range center {
			lo[i], hi[i] = max(c-delta, -1), min(c+delta, 1)
		}
		s := newGraph(n, K)
		type bounded struct {
			method BoundMethod
			b      *Bounds
		}
		var all []bounded
		for _, method := range boundMethods {
			all = append(all, bounded{method, computeBounds(context.Background(), s, lo, hi, method)})
		}
		for _, left := range []int{0, 3, 20} {
			// Cut after left checks of the context: the rest by intervals.
			b := computeBounds(&countdown{context.Background(), left}, s, lo, hi, BoundAlphaCROWNFull)
			checkCut(t, seed, left, all[0].b, b) // all[0]: intervals, the cheapest method
			all = append(all, bounded{BoundMethod(fmt.Sprint("cut-", left)), b})
		}
		for _, bd := range all {
			method, b := bd.method, bd.b
			for trial := 0; trial < 300; trial++ {
				x := sampleIn(rng, lo, hi)
				if trial == 0 {
					copy(x, lo)
				}
				val, logits, toks := greedy(n, x, K+1)
				checkPath(t, fmt.Sprintf("%s seed %d", method, seed), s, b, val, logits, toks)
				if b.Empty {
					t.Fatalf("%s seed %d: the box called empty, but %v is in it", method, seed, x)
				}
				if b.Proven && len(toks) > b.ProvenAt && toks[b.ProvenAt] != n.EOS {
					// A proof that eos wins at ProvenAt for paths without earlier eos.
					early := false
					for _, y := range toks[:b.ProvenAt] {
						early = early || y == n.EOS
					}
					if !early {
						t.Fatalf("%s seed %d: bounds proved eos at step %d, sample decodes %v", method, seed, b.ProvenAt, toks)
					}
				}
			}
		}
	}
}

// checkCut checks bounds cut after left checks of their context against
// the interval bounds ib: never looser, and equal when cut at once.
func checkCut(t *testing.T, seed uint64, left int, ib, cut *Bounds) {
	t.Helper()
	for L := range cut.Val {
		if L >= len(ib.Val) || ib.Val[L] == nil || cut.Val[L] == nil {
			continue
		}
		for j, iv := range cut.Val[L] {
			want := ib.Val[L][j]
			if iv.Lo < want.Lo-1e-9 || iv.Hi > want.Hi+1e-9 || left == 0 && iv != want {
				t.Fatalf("seed %d, cut after %d: node %d neuron %d %+v, intervals give %+v", seed, left, L, j, iv, want)
			}
		}
	}
	if left == 0 && (cut.Proven != ib.Proven || len(cut.Logits) != len(ib.Logits)) {
		t.Fatalf("seed %d: bounds cut at once differ from intervals (proven %v against %v)", seed, cut.Proven, ib.Proven)
	}
}

func checkIn(t *testing.T, method BoundMethod, name string, b []Interval, v []float64) {
	t.Helper()
	for j, x := range v {
		if x < b[j].Lo || x > b[j].Hi {
			t.Fatalf("%s: %s[%d] = %v outside [%v, %v]", method, name, j, x, b[j].Lo, b[j].Hi)
		}
	}
}

// TestCROWNTighter: CROWN bounds are never looser (by construction) and
// strictly tighter somewhere on deeper layers; so are α-CROWN's optimised
// intermediate bounds against CROWN's.
func TestCROWNTighter(t *testing.T) {
	tighter, alphaTighter := 0, 0
	for seed := uint64(1); seed <= 10; seed++ {
		_, n := tinyNet(t, seed, 2)
		lo, hi := make([]float64, n.InputSize), make([]float64, n.InputSize)
		for i := range lo {
			lo[i], hi[i] = -0.3, 0.3
		}
		s := newGraph(n, 2)
		bi := computeBounds(context.Background(), s, lo, hi, BoundInterval)
		bc := computeBounds(context.Background(), s, lo, hi, BoundCROWN)
		ba := computeBounds(context.Background(), s, lo, hi, BoundAlphaCROWNFull)
		for L := range ba.Val {
			if L >= len(bc.Val) || ba.Val[L] == nil || bc.Val[L] == nil {
				continue
			}
			for j, iv := range ba.Val[L] {
				if iv.Lo < bc.Val[L][j].Lo-1e-9 || iv.Hi > bc.Val[L][j].Hi+1e-9 {
					t.Fatalf("seed %d: α-CROWN looser than CROWN at node %d neuron %d: %+v against %+v", seed, L, j, iv, bc.Val[L][j])
				}
				if iv.Hi-iv.Lo < 0.99*(bc.Val[L][j].Hi-bc.Val[L][j].Lo) {
					alphaTighter++
				}
			}
		}
		for L := range bc.Val {
			if L >= len(bi.Val) || bc.Val[L] == nil || bi.Val[L] == nil {
				continue
			}
			for j := range bc.Val[L] {
				if bc.Val[L][j].Lo < bi.Val[L][j].Lo-1e-9 || bc.Val[L][j].Hi > bi.Val[L][j].Hi+1e-9 {
					t.Fatalf("CROWN looser than intervals at node %d neuron %d", L, j)
				}
				if bc.Val[L][j].Hi-bc.Val[L][j].Lo < 0.99*(bi.Val[L][j].Hi-bi.Val[L][j].Lo) {
					tighter++
				}
			}
		}
	}
	if tighter == 0 {
		t.Fatal("CROWN never tightened an interval bound")
	}
	if alphaTighter == 0 {
		t.Fatal("α-CROWN never tightened a CROWN bound")
	}
}

// TestSplitBoundsContainSamples: the bounds of a branch-and-bound domain
// contain every sampled input that satisfies its splits (its activations,
// logits and margins along the greedy path), a domain the bounds call
// empty has no such input, and a child domain's bounds computed from its
// parent's equal those computed from scratch (or, inheriting the parent's
// intermediate bounds, contain the samples too).
func TestSplitBoundsContainSamples(t *testing.T) {
	for _, cell := range testCells {
		t.Run(cell, func(t *testing.T) { testSplitBoundsContainSamples(t, cell) })
	}
}

func testSplitBoundsContainSamples(t *testing.T, cell string) {
	const K = 3
	inside, emptied := 0, 0
	for seed := uint64(1); seed <= seeds(cell, 24); seed++ {
		_, n := tinyNet(t, seed, int(seed%3), cell)
		rng := rand.New(rand.NewPCG(seed, 19))
		lo, hi := randomBox(rng, n.InputSize, 0.5)
		g := newGraph(n, K)
		method := boundMethods[seed%uint64(len(boundMethods))]
		root := computeBounds(context.Background(), g, lo, hi, method)
		unstable := unstableNeurons(g, root)
		if len(unstable) < 2 {
			continue
		}
		// Two splits, the second bounded both from its parent and from scratch.
		a, c := unstable[rng.IntN(len(unstable))], unstable[rng.IntN(len(unstable))]
		if c.node < a.node {
			a, c = c, a
		}
		s1 := splitSet{a: childCut(g, root, a, uncut, rng.IntN(2) == 0)}
		parent := computeSplitBounds(context.Background(), g, lo, hi, method, s1, nil, root, g.nodes[a.node].in[0], false)
		if parent.Proven {
			continue
		}
		// Odd seeds bound the child from its parent's intermediate bounds
		// (inherit), even ones by CROWN, which must equal a bound from scratch.
		inherit := seed%2 == 1
		// A neuron split again (c = a) is cut again at its new split point:
		// a sigmoid's or tanh's interval narrows.
		s2 := maps.Clone(s1)
		s2[c] = childCut(g, parent, c, s2.of(c), rng.IntN(2) == 0)
		b := computeSplitBounds(context.Background(), g, lo, hi, method, s2, nil, parent, g.nodes[c.node].in[0], inherit)
		if again := computeSplitBounds(context.Background(), g, lo, hi, method, s2, nil, nil, 0, false); !inherit && (!reflect.DeepEqual(again.Val, b.Val) || !reflect.DeepEqual(again.Margin, b.Margin)) {
			t.Fatalf("seed %d: a child's bounds from its parent differ from its bounds from scratch", seed)
		}
		for trial := 0; trial < 2000; trial++ {
			x := sampleIn(rng, lo, hi)
			val, logits, toks := greedy(n, x, K+1)
			if !inDomain(g, val, s2) {
				continue
			}
			if b.Empty {
				t.Fatalf("seed %d: domain %v called empty, but %v satisfies it", seed, s2, x)
			}
			inside++
			checkPath(t, fmt.Sprintf("%s seed %d domain %v", method, seed, s2), g, b, val, logits, toks)
		}
		if b.Empty {
			emptied++
		}
	}
	if inside < 1000 {
		t.Fatalf("only %d samples fell in the domains tested", inside)
	}
	t.Logf("%d samples inside the split domains, %d domains empty", inside, emptied)
}

// sampleIn draws a point of the box [lo, hi] uniformly.
func sampleIn(rng *rand.Rand, lo, hi []float64) []float64 {
	x := make([]float64, len(lo))
	for i := range x {
		x[i] = lo[i] + (hi[i]-lo[i])*rng.Float64()
	}
	return x
}

// randomBox is a box of half-width r around a random centre of [−1, 1]ⁿ,
// clipped to it.
func randomBox(rng *rand.Rand, n int, r float64) (lo, hi []float64) {
	lo, hi = make([]float64, n), make([]float64, n)
	for i := range lo {
		c := 2*rng.Float64() - 1
		lo[i], hi[i] = max(c-r, -1), min(c+r, 1)
	}
	return lo, hi
}

// inDomain reports whether a decoding's node values val satisfy every
// split of s (on its activation's pre-activation).
func inDomain(g *graph, val [][]float64, s splitSet) bool {
	for nu, c := range s {
		p := g.nodes[nu.node].in[0]
		if p >= len(val) {
			return false
		}
		if v := val[p][nu.index]; v < c.lo || v > c.hi {
			return false
		}
	}
	return true
}

// unstableNeurons lists the activations b leaves unstable.
func unstableNeurons(g *graph, b *Bounds) []neuron {
	var out []neuron
	for _, id := range g.activations() {
		if b.Val[id] == nil {
			continue
		}
		for j, iv := range b.Val[g.nodes[id].in[0]] {
			if g.nodes[id].act.unstable(iv) {
				out = append(out, neuron{id, j})
			}
		}
	}
	return out
}

// TestTokenBoundsContainSamples: bounds with a token sequence fixed (the
// token search's leaves, bounded from the root's nodes) contain every
// sample that decodes that sequence, and a proof covers them: each emits
// eos by the proven step. The sequences are sampled decodings (which some
// inputs follow) and random ones (which may be empty).
func TestTokenBoundsContainSamples(t *testing.T) {
	for _, cell := range testCells {
		t.Run(cell, func(t *testing.T) { testTokenBoundsContainSamples(t, cell) })
	}
}

func testTokenBoundsContainSamples(t *testing.T, cell string) {
	const K = 3
	following, proven := 0, 0
	for seed := uint64(1); seed <= seeds(cell, 24); seed++ {
		_, n := tinyNet(t, seed, int(seed%3), cell)
		rng := rand.New(rand.NewPCG(seed, 29))
		lo, hi := randomBox(rng, n.InputSize, []float64{0.1, 0.5, 1}[seed%3])
		g := newGraph(n, K)
		method := boundMethods[seed%uint64(len(boundMethods))]
		root := computeBounds(context.Background(), g, lo, hi, method)
		if root.Proven {
			continue
		}
		for try := 0; try < 4; try++ {
			var leaf []int
			if try%2 == 0 {
				_, _, toks := greedy(n, sampleIn(rng, lo, hi), K+1)
				for _, y := range toks {
					if y == n.EOS {
						break
					}
					leaf = append(leaf, y)
				}
			} else {
				for range K + 1 {
					leaf = append(leaf, rng.IntN(n.Vocab))
				}
			}
			if len(leaf) == 0 {
				continue
			}
			tk := tokenSet{}
			for s, z := range leaf {
				tk[s] = z
			}
			b := computeSplitBounds(context.Background(), g, lo, hi, method, nil, tk, root, g.tokenStart(), false)
			if b.Proven {
				proven++
			}
			for trial := 0; trial < 500; trial++ {
				x := sampleIn(rng, lo, hi)
				val, logits, toks := greedy(n, x, K+1)
				if len(toks) < len(leaf) || !slices.Equal(toks[:len(leaf)], leaf) {
					continue
				}
				following++
				if b.Proven {
					if !slices.Contains(toks[:b.ProvenAt+1], n.EOS) {
						t.Fatalf("%s seed %d: tokens %v proven to end by step %d, sample %v decodes %v", method, seed, leaf, b.ProvenAt, x, toks)
					}
					continue
				}
				checkPath(t, fmt.Sprintf("%s seed %d tokens %v", method, seed, leaf), g, b, val, logits, toks)
			}
		}
	}
	if following < 1000 || proven == 0 {
		t.Fatalf("%d samples followed the token sequences tested, %d sequences proven: too few to test", following, proven)
	}
	t.Logf("%d samples followed the sequences tested; %d sequences proven", following, proven)
}
