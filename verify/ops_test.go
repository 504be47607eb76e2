package verify

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// TestActivationRules samples every activation's rules: the interval rule
// contains the function's values, and the CROWN relaxation bounds c·a from
// above for coefficients of either sign, on stable and unstable ranges.
func TestActivationRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, tc := range []struct {
		name string
		act  activation
	}{{"relu", relu{}}, {"identity", identity{}}} {
		for _, iv := range []Interval{{-3, -1}, {-2, 0}, {0, 2}, {1, 4}, {-1, 3}, {-3, 1}, {-1, 1}, {-1e-9, 1e-9}} {
			out := tc.act.interval(iv)
			for _, c := range []float64{2.5, -0.7} {
				for _, alpha := range []float64{tc.act.slope(iv), 0, 0.3, 1} {
					s, d := tc.act.relax(c, iv, alpha)
					for trial := 0; trial < 200; trial++ {
						z := iv.Lo + (iv.Hi-iv.Lo)*rng.Float64()
						if trial == 0 {
							z = iv.Lo
						} else if trial == 1 {
							z = iv.Hi
						}
						a := tc.act.eval(z)
						if a < out.Lo || a > out.Hi {
							t.Fatalf("%s on %+v: value %v at %v outside interval %+v", tc.name, iv, a, z, out)
						}
						if c*a > c*s*z+d+1e-12 {
							t.Fatalf("%s on %+v, c = %v, α = %v: c·a = %v above the relaxation %v at z = %v", tc.name, iv, c, alpha, c*a, c*s*z+d, z)
						}
					}
				}
			}
		}
	}
}

// TestAffineRules: the interval rule contains sampled outputs and the
// backward rule is the exact identity c·(A·in + b) + k = (Aᵀc)·in + k'.
func TestAffineRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := 0; trial < 50; trial++ {
		in, out := 1+rng.IntN(6), 1+rng.IntN(5)
		a := &affine{in: in}
		for j := 0; j < out; j++ {
			w := make([]float64, in)
			for i := range w {
				if rng.IntN(3) > 0 {
					w[i] = rng.NormFloat64()
				}
			}
			a.rows = append(a.rows, denseRow(w, rng.NormFloat64()))
		}
		box := make([]Interval, in)
		for i := range box {
			lo := rng.NormFloat64()
			box[i] = Interval{lo, lo + rng.Float64()}
		}
		c := make([]float64, out)
		absc := make([]float64, out)
		for j := range c {
			c[j] = rng.NormFloat64()
			absc[j] = math.Abs(c[j])
		}
		// A recycled vector full of garbage must come back zeroed.
		bufs := &buffers{}
		dirty := make([]float64, in)
		for i := range dirty {
			dirty[i] = math.NaN()
		}
		bufs.put(dirty)
		next, _, k, _ := a.back(c, absc, 0.5, 0.5, bufs)
		for s := 0; s < 50; s++ {
			x := make([]float64, in)
			for i := range x {
				x[i] = box[i].Lo + (box[i].Hi-box[i].Lo)*rng.Float64()
			}
			z := a.eval(x)
			want, got := 0.5, k
			for j, v := range z {
				if iv := a.interval(box, j); v < iv.Lo || v > iv.Hi {
					t.Fatalf("row %d: %v outside %+v", j, v, iv)
				}
				want += c[j] * v
			}
			for i, v := range x {
				got += next[i] * v
			}
			if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
				t.Fatalf("backward rule: %v, forward %v", got, want)
			}
		}
	}
}

// TestFeedbackRules: over the allowed tokens, the interval rule contains
// each token's term and the backward rule bounds c·term from above; tokens
// that are not allowed do not widen either.
func TestFeedbackRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	f := &feedback{}
	for z := 0; z < 5; z++ {
		row := make([]float64, 4)
		for j := range row {
			row[j] = rng.NormFloat64()
		}
		f.tokens = append(f.tokens, row)
	}
	f.tokens[4] = []float64{100, 100, -100, 100} // outside every allowed set below
	allowed := []bool{true, false, true, true, false}
	c := []float64{0.3, -1, 2, 0}
	best, _, _ := f.back(c, allowed)
	for z, ok := range allowed {
		if !ok {
			continue
		}
		var v float64
		for j := range c {
			v += c[j] * f.eval(z)[j]
			if lo, hi := f.interval(j, allowed); f.eval(z)[j] < lo || f.eval(z)[j] > hi {
				t.Fatalf("token %d coordinate %d outside [%v, %v]", z, j, lo, hi)
			}
		}
		if v > best {
			t.Fatalf("token %d: c·term %v above the backward bound %v", z, v, best)
		}
	}
	if _, hi := f.interval(0, allowed); hi >= 100 {
		t.Fatalf("a token that is not allowed widened the interval to %v", hi)
	}
}

// openStep unrolls n for steps 0..K and bounds it by CROWN over the box:
// the graph, its bounds and step K's hidden node; ok false when the bounds
// already prove the property (nothing left to optimise).
func openStep(n *Net, lo, hi []float64, K int) (g *graph, b *Bounds, L int, ok bool) {
	g = newGraph(n, K)
	b = computeBounds(context.Background(), g, lo, hi, BoundCROWN)
	return g, b, g.hidden(K), !b.Proven
}

// coveredMargin decodes x greedily and returns the margin of token z over
// eos at step K, with the trace; ok is false when the path is not one the
// bounds cover (eos before K, or a token the bounds do not allow at K−1).
func coveredMargin(g *graph, b *Bounds, x []float64, K, z int) (m float64, tr trace, ok bool) {
	tr = g.eval(x, nil)
	eos := g.net.EOS
	if len(tr.logits) <= K || tr.tokens[K-1] == eos || !b.Allowed[K-1][tr.tokens[K-1]] {
		return 0, tr, false
	}
	return tr.logits[K][z] - tr.logits[K][eos], tr, true
}

// TestAlphaGradient checks α-CROWN's gradient against finite differences
// of the bound, and that the optimised bound is sound (above every
// sampled margin) and no looser than CROWN's.
func TestAlphaGradient(t *testing.T) {
	checked := 0
	for seed := uint64(1); seed <= 12; seed++ {
		_, n := tinyNet(t, seed, int(seed%3))
		rng := rand.New(rand.NewPCG(seed, 77))
		center := make([]float64, n.InputSize)
		for i := range center {
			center[i] = 2*rng.Float64() - 1
		}
		lo, hi := make([]float64, n.InputSize), make([]float64, n.InputSize)
		for i, c := range center {
			lo[i], hi[i] = max(c-0.3, -1), min(c+0.3, 1)
		}
		const K = 1
		g, b, L, ok := openStep(n, lo, hi, K)
		if !ok {
			continue
		}
		for z := range g.head.margin {
			if z == n.EOS {
				continue
			}
			r := g.head.margin[z]
			al := make([][]float64, L+1)
			for l := range al {
				al[l] = make([]float64, len(b.Pre[l]))
				for i := range al[l] {
					al[l][i] = 0.2 + 0.6*rng.Float64()
				}
			}
			bound := func(al [][]float64, rec *backRecord) (float64, []float64) {
				c := make([]float64, len(g.nodes[L].aff.rows))
				for k, idx := range r.Idx {
					c[idx] = r.W[k]
				}
				xc, k, _, _ := g.back(b, L, c, r.B, &relaxation{alpha: al}, rec)
				xs := make([]float64, len(xc))
				for i, ci := range xc {
					if ci >= 0 {
						k, xs[i] = k+ci*b.Input[i].Hi, b.Input[i].Hi
					} else {
						k, xs[i] = k+ci*b.Input[i].Lo, b.Input[i].Lo
					}
				}
				return k, xs
			}
			rec := newBackRecord(L + 1)
			_, xs := bound(al, rec)
			grad, _ := g.alphaGrad(b, L, xs, al, rec, nil)
			for l := range al {
				for i := range al[l] {
					const h = 1e-6
					al[l][i] += h
					up, _ := bound(al, nil)
					al[l][i] -= 2 * h
					down, _ := bound(al, nil)
					al[l][i] += h
					fd := (up - down) / (2 * h)
					if math.Abs(fd-grad[l][i]) > 1e-5*(1+math.Abs(fd)) {
						t.Fatalf("seed %d token %d node %d neuron %d: gradient %v, finite difference %v", seed, z, l, i, grad[l][i], fd)
					}
					if grad[l][i] != 0 {
						checked++
					}
				}
			}
			// Sound and no looser than CROWN.
			opt := g.alphaUpper(b, L, r, defaultAlpha)
			if cr := g.crownLinear(b, L, r).Hi; opt > cr {
				t.Fatalf("seed %d token %d: α-CROWN %v looser than CROWN %v", seed, z, opt, cr)
			}
			for trial := 0; trial < 200; trial++ {
				m, _, ok := coveredMargin(g, b, sampleIn(rng, lo, hi), K, z)
				if !ok {
					continue // not a path the bound covers
				}
				if m > opt {
					t.Fatalf("seed %d token %d: sampled margin %v above the α-CROWN bound %v", seed, z, m, opt)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d non-zero gradient entries checked", checked)
	}
}

// TestBetaGradient: the gradient of the bound in β-CROWN's signed split
// multipliers is the split neurons' pre-activation ζ in the relaxed network
// at the maximising vertex (checked against finite differences), and the
// optimised bound of a split domain is never below a sampled margin of an
// input in that domain.
func TestBetaGradient(t *testing.T) {
	checked, sampled := 0, 0
	for seed := uint64(1); seed <= 16; seed++ {
		_, n := tinyNet(t, seed, int(seed%3))
		rng := rand.New(rand.NewPCG(seed, 78))
		lo, hi := randomBox(rng, n.InputSize, 0.4)
		const K = 1
		g, b, L, ok := openStep(n, lo, hi, K)
		if !ok {
			continue
		}
		var unstable []neuron
		for l := 0; l <= L; l++ {
			for i, iv := range b.Pre[l] {
				if g.nodes[l].act.unstable(iv) {
					unstable = append(unstable, neuron{l, i})
				}
			}
		}
		if len(unstable) == 0 {
			continue
		}
		splits := splitSet{}
		for range 2 {
			splits[unstable[rng.IntN(len(unstable))]] = rng.IntN(2) == 0
		}
		sb := computeSplitBounds(context.Background(), g, lo, hi, BoundCROWN, splits, nil, nil, 0, false)
		if sb.Proven {
			continue
		}
		for z := range g.head.margin {
			if z == n.EOS {
				continue
			}
			r := g.head.margin[z]
			rx := &relaxation{beta: make([][]float64, L+1)}
			for nu, active := range splits {
				if rx.beta[nu.node] == nil {
					rx.beta[nu.node] = make([]float64, len(sb.Pre[nu.node]))
				}
				rx.beta[nu.node][nu.index] = 0.5 * rng.Float64()
				if !active {
					rx.beta[nu.node][nu.index] *= -1
				}
			}
			bound := func(rec *backRecord) (float64, []float64) {
				xc, k, abs, absc := g.back(sb, L, r.dense(g.width(sb, L)), r.B, rx, rec)
				xs := make([]float64, len(xc))
				return concretize(sb, xc, k, abs, absc, xs), xs
			}
			rec := newBackRecord(L + 1)
			_, xs := bound(rec)
			al := make([][]float64, L+1)
			for l := range al {
				al[l] = make([]float64, len(sb.Pre[l]))
				for i, iv := range sb.Pre[l] {
					al[l][i] = g.nodes[l].act.slope(iv)
				}
			}
			_, zeta := g.alphaGrad(sb, L, xs, al, rec, rx.beta)
			for nu := range splits {
				const h = 1e-6
				rx.beta[nu.node][nu.index] += h
				up, _ := bound(nil)
				rx.beta[nu.node][nu.index] -= 2 * h
				down, _ := bound(nil)
				rx.beta[nu.node][nu.index] += h
				fd := (up - down) / (2 * h)
				if want := zeta[nu.node][nu.index]; math.Abs(fd-want) > 1e-5*(1+math.Abs(fd)) {
					t.Fatalf("seed %d token %d split %v: gradient %v, finite difference %v", seed, z, nu, want, fd)
				}
				checked++
			}
			ub, _, _ := g.optimisedUpper(sb, L, r, splits, nil, defaultAlpha)
			if cr := g.crownLinear(sb, L, r).Hi; ub > cr {
				t.Fatalf("seed %d token %d: α,β-CROWN %v looser than CROWN %v", seed, z, ub, cr)
			}
			for trial := 0; trial < 400; trial++ {
				m, tr, ok := coveredMargin(g, sb, sampleIn(rng, lo, hi), K, z)
				if !ok || !inDomain(tr.pre, splits) {
					continue
				}
				sampled++
				if m > ub {
					t.Fatalf("seed %d token %d: sampled margin %v above the α,β-CROWN bound %v of domain %v", seed, z, m, ub, splits)
				}
			}
		}
	}
	if checked < 20 || sampled < 500 {
		t.Fatalf("only %d gradient entries and %d samples checked", checked, sampled)
	}
}
