package verify

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nn"
	"github.com/lenspec/lenspec/spec"
)

// maxDecoder is a pixel captioner whose logits also read the element-wise
// maximum of the embeddings of every token emitted so far: its state
// holds a cache of those embeddings, one more entry per step, as an
// attention decoder's cache of keys and values grows. It lowers with
// existing operators (the maximum as a + relu(b − a)) and Concat, and the
// verifier unrolls it with no branch of its own.
type maxDecoder[T ad.Float] struct {
	*model.Captioner[T]
	g *nn.Linear[T] // the maximum's weight in the logits, [vocabulary × embedding]
}

// maxState is the captioner's state and the cache, [B, k·E] after k
// steps (nil before the first token).
type maxState[T ad.Float] struct {
	inner model.State[T]
	cache *ad.Node[T]
}

func (s *maxState[T]) Rows(tp *ad.Tape[T], idx []int) model.State[T] {
	out := &maxState[T]{inner: s.inner.Rows(tp, idx)}
	if s.cache != nil {
		out.cache = tp.Gather(s.cache, idx)
	}
	return out
}

func (m *maxDecoder[T]) Start(tp *ad.Tape[T], in model.Input[T]) (model.State[T], error) {
	s, err := m.Captioner.Start(tp, in)
	if err != nil {
		return nil, err
	}
	return &maxState[T]{inner: s}, nil
}

// describeCache is the cache's part of a step after the first, written
// once for the tape (Step) and the verifier (LowerStep): the embedding of
// the token fed back appended to the cache (cache invalid: the first entry),
// and the maximum of its entries, entry by entry, as a + relu(b − a).
func (m *maxDecoder[T]) describeCache(b nn.Builder, cache nn.Value) (next, mx nn.Value) {
	e := m.Emb.Dim
	next = b.Embed("cache.emb", m.Emb.W, m.Vocab(), e)
	if cache.Valid() {
		next = b.Concat("cache", cache, next)
	}
	mx = b.Slice("e0", next, 0, e)
	for k := 1; k < next.Width/e; k++ {
		n := strconv.Itoa(k)
		d := b.Sub("d"+n, b.Slice("e"+n, next, k*e, (k+1)*e), mx)
		mx = b.Add("max"+n, mx, b.Act("up"+n, nn.ReLU, d))
	}
	return next, mx
}

// Step adds G·max(cache) to the captioner's logits (nothing at the first
// step), the cache as describeCache says on the tape.
func (m *maxDecoder[T]) Step(tp *ad.Tape[T], st model.State[T], prev []int) (*ad.Node[T], model.State[T]) {
	s := st.(*maxState[T])
	logits, inner := m.Captioner.Step(tp, s.inner, prev)
	next := &maxState[T]{inner: inner}
	if prev == nil {
		return logits, next
	}
	ev := nn.NewEval(tp, len(prev))
	ev.Tokens = prev
	var cache nn.Value
	if s.cache != nil {
		cache = ev.Input(s.cache)
	}
	c, mx := m.describeCache(ev, cache)
	next.cache = ev.Node(c)
	return tp.Add(logits, m.g.Forward(tp, ev.Node(mx))), next
}

// LowerStep lowers the captioner's step and the cache (describeCache).
// The output layer reads [h; max] (zeros for the maximum at the first
// step).
func (m *maxDecoder[T]) LowerStep(b nn.Builder, first bool, s map[string]nn.Value) (nn.Value, map[string]nn.Value, error) {
	inner := maps.Clone(s)
	delete(inner, "cache")
	h, next, err := m.Captioner.LowerStep(b, first, inner)
	if err != nil {
		return nn.Value{}, nil, err
	}
	if first {
		return b.Concat("out", h, b.Const("max", nn.Values(make([]float64, m.Emb.Dim)))), next, nil
	}
	cache, mx := m.describeCache(b, s["cache"])
	next["cache"] = cache
	return b.Concat("out", h, mx), next, nil
}

// LowerLogits is [W | G]·[h; max] + b.
func (m *maxDecoder[T]) LowerLogits() (w, bias []float64) {
	ow, bias := m.Captioner.LowerLogits()
	gw := m.g.W.Float64s()
	h, e := len(ow)/m.Vocab(), m.Emb.Dim
	for z := 0; z < m.Vocab(); z++ {
		w = append(w, ow[z*h:(z+1)*h]...)
		w = append(w, gw[z*e:(z+1)*e]...)
	}
	return w, bias
}

// maxProblem is a random maxDecoder on pixels pixels (weights scaled as
// gatedPixelProblem's, so that outputs of several lengths meet in one
// ball) and a ball of radius delta around a random centre.
func maxProblem(t *testing.T, seed uint64, pixels int, delta float64) (*maxDecoder[float64], spec.Ball) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 77))
	c, err := model.NewCaptioner[float64](pixelConfig(pixels, 3), rng)
	if err != nil {
		t.Fatal(err)
	}
	m := &maxDecoder[float64]{c, nn.NewLinearNoBias[float64]("max", c.Emb.Dim, c.Vocab(), rng)}
	randomBiases(m, seed)
	for _, p := range append(m.Params(), m.g.Params()...) {
		for i := range p.W.Data {
			p.W.Data[i] *= 3
		}
	}
	rng = rand.New(rand.NewPCG(seed, 1))
	center := make([]float64, pixels)
	for i := range center {
		center[i] = 2*rng.Float64() - 1
	}
	ball, _ := spec.NewBall(center, delta, -1, 1)
	return m, ball
}

// TestLowerGrowingState: a decoder whose state grows by an entry per step
// lowers (a later step recorded anew per step, each reading one more
// cached embedding) into a graph whose float64 evaluation is the model's
// forward pass, and whose bounds contain sampled decodings. A fixed-width
// captioner still records one later step.
func TestLowerGrowingState(t *testing.T) {
	m, _ := maxProblem(t, 7, 3, 0)
	n, err := Lower(m)
	if err != nil {
		t.Fatal(err)
	}
	const steps = 8
	// Unrollings of one Net run concurrently (a batch's samples): the
	// steps they record meanwhile are recorded once.
	var wg sync.WaitGroup
	sizes := make([]int, 4)
	for k := range sizes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sizes[k] = len(newGraph(n, steps-k).nodes)
		}()
	}
	wg.Wait()
	if len(n.later) != steps {
		t.Fatalf("%d later steps recorded for concurrent unrollings of at most %d", len(n.later), steps)
	}
	for k := 1; k < len(sizes); k++ {
		if sizes[k] >= sizes[k-1] {
			t.Fatalf("graphs of %d nodes for fewer steps than %d", sizes[k], sizes[k-1])
		}
	}
	rng := rand.New(rand.NewPCG(3, 1))
	lens := map[int]bool{}
	for trial := 0; trial < 100; trial++ {
		x := sampleIn(rng, negOnes(n.InputSize), ones(n.InputSize))
		_, logits, toks := greedy(n, x, steps)
		want, wantToks := modelLogits(t, m, x, steps)
		if !slices.Equal(toks, wantToks) {
			t.Fatalf("IR decodes %v, model %v", toks, wantToks)
		}
		lens[len(toks)] = true
		for k := range toks {
			for z, v := range logits[k] {
				if d := math.Abs(v - want[k][z]); d > 1e-12*(1+math.Abs(v)) {
					t.Fatalf("step %d token %d: IR logit %v, model %v", k, z, v, want[k][z])
				}
			}
		}
	}
	if len(lens) < 2 {
		t.Fatalf("every sample decodes to the same length: %v", lens)
	}
	// Step t's cache holds t embeddings, and its maximum reads them all.
	g := newGraph(n, steps)
	width := map[string]int{}
	for _, nd := range g.nodes {
		width[nd.name] = nd.width
	}
	for step := 2; step <= steps; step++ {
		p := "h" + strconv.Itoa(step+1)
		if w := width[p+".cache"]; w != step*m.Emb.Dim {
			t.Fatalf("step %d: a cache %d wide, want %d", step, w, step*m.Emb.Dim)
		}
		if _, ok := width[p+".max"+strconv.Itoa(step-1)]; !ok {
			t.Fatalf("step %d: no maximum over its %d entries", step, step)
		}
	}
	if len(n.later) != steps || n.fixed {
		t.Fatalf("%d later steps recorded (fixed %v) for an unrolling of %d", len(n.later), n.fixed, steps)
	}
	if _, f := tinyNet(t, 3, 0); len(f.later) != 1 || !f.fixed {
		t.Fatalf("a fixed-width captioner recorded %d later steps", len(f.later))
	}
	const K = 3
	lo, hi := randomBox(rng, n.InputSize, 0.3)
	g = newGraph(n, K)
	for _, method := range []BoundMethod{BoundInterval, BoundCROWN, BoundAlphaCROWNFull} {
		b := computeBounds(t.Context(), g, lo, hi, method)
		for trial := 0; trial < 300; trial++ {
			val, logits, toks := greedy(n, sampleIn(rng, lo, hi), K+1)
			checkPath(t, string(method), g, b, val, logits, toks)
		}
	}
}

// TestGrowingStateAgainstGrid: on random maxDecoders with 2–3 pixel
// inputs whose outputs reach two tokens or more, verification (the default pipeline, and branch and bound alone)
// never says robust where a dense grid or a random search finds an output
// longer than K̂, every vulnerable witness replays (verifyOne), and it
// decides some samples of each kind, some of them over steps whose cache
// holds two entries or more.
func TestGrowingStateAgainstGrid(t *testing.T) {
	var c gridTally
	problems := 0
	for seed := uint64(1); problems < 16 && seed <= 400; seed++ {
		m, ball := maxProblem(t, seed, 2+int(seed%2), []float64{0.05, 0.2, 0.5, 1}[seed%4])
		// Most random models stop at once or run to the cap; a quick
		// search keeps those whose outputs end after two steps or more,
		// where the cache holds entries to take the maximum of.
		if l := randomMax(t, m, ball, 300, 12, rand.New(rand.NewPCG(seed, 9))); l < 2 || l > 10 {
			continue
		}
		problems++
		againstGrid(t, "seed "+strconv.FormatUint(seed, 10), m, ball, seed, &c)
	}
	t.Logf("%d robust, %d vulnerable, %d unknown of %d (%d decided at K̂ ≥ 2)", c.robust, c.vulnerable, c.total-c.robust-c.vulnerable, c.total, c.long)
	if problems < 16 || c.total < 30 || c.robust == 0 || c.vulnerable == 0 || c.long == 0 {
		t.Fatalf("%d problems: %d robust, %d vulnerable (%d at K̂ ≥ 2) of %d samples", problems, c.robust, c.vulnerable, c.long, c.total)
	}
}

// lateFault is a maxDecoder whose lowering goes wrong once the cache a
// step reads holds three entries (step 4).
type lateFault struct{ *maxDecoder[float64] }

func (l lateFault) LowerStep(b nn.Builder, first bool, s map[string]nn.Value) (nn.Value, map[string]nn.Value, error) {
	out, next, err := l.maxDecoder.LowerStep(b, first, s)
	if c := s["cache"]; c.Width >= 3*l.Emb.Dim {
		b.Add("bad", out, c)
	}
	return out, next, err
}

// TestGrowingStateFaultLate: a lowering of a growing state that goes
// wrong only at a later step passes Lower (steps 1 and 2), and a property
// that unrolls that step is refused with the reason, not a panic.
func TestGrowingStateFaultLate(t *testing.T) {
	m, ball := maxProblem(t, 7, 3, 0.1)
	n, err := Lower(lateFault{m})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(t.Context(), n, m, Sample{Name: "t", Set: ball, K: 2}, verifyOpts()); err != nil {
		t.Fatalf("K̂ 2 unrolls steps 0..2: %v", err)
	}
	_, err = Verify(t.Context(), n, m, Sample{Name: "t", Set: ball, K: 5}, verifyOpts())
	if err == nil || !strings.Contains(err.Error(), "decoder step 4") || !strings.Contains(err.Error(), "width") {
		t.Fatalf("K̂ 5: %v, want an error about decoder step 4's widths", err)
	}
}
