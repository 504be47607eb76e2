package verify

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/mip"
)

// The rule tests: one row per operator. Adding an operator adds a row
// here (its rules sampled against its evaluation), and nothing else.

// ruleBox draws a pre-activation box of one of five kinds: narrow, wide
// (|z| up to 50), one side of 0, degenerate (a point) and nearly so.
func ruleBox(rng *rand.Rand, kind int) Interval {
	c := 12*rng.Float64() - 6
	switch kind {
	case 0:
		w := 4 * rng.Float64()
		return Interval{c - w/2, c + w/2}
	case 1:
		a, b := 100*rng.Float64()-50, 100*rng.Float64()-50
		return Interval{min(a, b), max(a, b)}
	case 2:
		a, w := rng.Float64(), 5*rng.Float64()
		if rng.IntN(2) == 0 {
			return Interval{a, a + w}
		}
		return Interval{-a - w, -a}
	case 3:
		return Interval{c, c}
	default:
		return Interval{c, c + 1e-9*rng.Float64()}
	}
}

// ruleActivations are the activations the rule tests sample.
var ruleActivations = []struct {
	name string
	act  activation
}{{"relu", relu{}}, {"sigmoid", newSigmoid()}, {"tanh", newTanh()}}

// TestActivationRules samples every activation's rules on 10⁵ points of
// random boxes (narrow, wide up to |z| = 50, one-sided, degenerate): the
// interval rule contains the function's values, and the relaxation bounds
// c·f from above for coefficients of either sign and every parameter the
// projection admits (CROWN's, random ones, the range's ends); the
// gradient in the parameters matches finite differences.
func TestActivationRules(t *testing.T) {
	for _, tc := range ruleActivations {
		rng := rand.New(rand.NewPCG(4, 4))
		np := tc.act.params()
		points, grads := 0, 0
		for box := 0; box < 1000; box++ {
			iv := ruleBox(rng, box%5)
			out := tc.act.outInterval(iv)
			def := make([]float64, np)
			tc.act.initParams(iv, def)
			ps := [][]float64{def}
			for range 2 {
				p := make([]float64, np)
				for k := range p {
					p[k] = iv.Lo + (iv.Hi-iv.Lo)*(1.4*rng.Float64()-0.2) // also outside: projected
					if np == 1 && tc.name == "relu" {
						p[k] = 1.4*rng.Float64() - 0.2
					}
				}
				tc.act.project(iv, p)
				ps = append(ps, p)
			}
			for _, c := range []float64{2.5, -0.7} {
				for _, p := range ps {
					s, d := tc.act.relax(c, iv, p)
					for trial := 0; trial < 17; trial++ {
						z := iv.Lo + (iv.Hi-iv.Lo)*rng.Float64()
						switch trial {
						case 0:
							z = iv.Lo
						case 1:
							z = iv.Hi
						case 2:
							z = min(max(0, iv.Lo), iv.Hi)
						}
						points++
						a := tc.act.apply(z)
						if a < out.Lo || a > out.Hi {
							t.Fatalf("%s on %+v: value %v at %v outside interval %+v", tc.name, iv, a, z, out)
						}
						if rel := c * (s*z - a); c*a > c*s*z+d+1e-12*(1+math.Abs(rel)) {
							t.Fatalf("%s on %+v, c = %v, p = %v: c·f = %v above the relaxation %v at z = %v", tc.name, iv, c, p, c*a, c*s*z+d, z)
						}
						if trial > 4 {
							continue
						}
						// The gradient in each parameter of c·(s·z + d), by
						// finite differences inside the feasible range.
						g := make([]float64, np)
						tc.act.gradParams(c, iv, p, z, g)
						for k := range p {
							h := 1e-6 * (1 + math.Abs(p[k]))
							up, down := slices.Clone(p), slices.Clone(p)
							up[k] += h
							down[k] -= h
							tc.act.project(iv, up)
							tc.act.project(iv, down)
							hu, hd := up[k]-p[k], p[k]-down[k]
							if hu < h/2 || hd < h/2 {
								continue // at the range's end
							}
							su, du := tc.act.relax(c, iv, up)
							sd, dd := tc.act.relax(c, iv, down)
							fu, fm, fl := c*su*z+du, c*s*z+d, c*sd*z+dd
							if r, l := (fu-fm)/hu, (fm-fl)/hd; math.Abs(r-l) > 1e-4*(1+math.Abs(r)) {
								continue // a kink (a line's case changes at p): no derivative
							}
							fd := (fu - fl) / (hu + hd)
							if math.Abs(g[k]-fd) > 1e-4*(1+math.Abs(fd)) {
								t.Fatalf("%s on %+v, c = %v, p = %v, z = %v: gradient %v in parameter %d, finite difference %v", tc.name, iv, c, p, z, g[k], k, fd)
							}
							if g[k] != 0 {
								grads++
							}
						}
					}
				}
			}
			// The score is 0 where a split removes nothing, and the split
			// point lies in the box.
			if !tc.act.unstable(iv) && tc.act.score(1, iv) != 0 {
				t.Fatalf("%s on %+v: stable, but score %v", tc.name, iv, tc.act.score(1, iv))
			}
			if at := tc.act.splitAt(iv); tc.act.unstable(iv) && (at < iv.Lo || at > iv.Hi) {
				t.Fatalf("%s on %+v: split point %v outside", tc.name, iv, at)
			}
		}
		if points < 100000 || grads < 500 {
			t.Fatalf("%s: only %d points and %d gradient entries checked", tc.name, points, grads)
		}
	}
}

// linearCase is an affine operator with the shapes of its inputs.
type linearCase struct {
	name string
	op   backOp
	ins  []int // input widths (none: a source, the token feedback)
	out  int
}

func linearCases(rng *rand.Rand) []linearCase {
	randn := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			if rng.IntN(4) > 0 {
				v[i] = rng.NormFloat64()
			}
		}
		return v
	}
	var cs []linearCase
	for range 5 {
		in, out := 1+rng.IntN(7), 1+rng.IntN(6)
		cs = append(cs, linearCase{"dense", newDense(randn(in*out), randn(out), in, out), []int{in}, out})
	}
	for _, g := range []ad.ConvGeom{{Kernel: 3, Stride: 2, Pad: 1}, {Kernel: 3, Stride: 1, Pad: 1}, {Kernel: 2, Stride: 1, Pad: 0}} {
		c, h, w, o := 1+rng.IntN(3), 3+rng.IntN(4), 3+rng.IntN(5), 1+rng.IntN(3)
		cv := newConv(randn(o*c*g.Kernel*g.Kernel), randn(o), []int{c, h, w}, o, g)
		cs = append(cs, linearCase{"conv", cv, []int{c * h * w}, cv.outSize()})
	}
	cs = append(cs, linearCase{"add", add{}, []int{4, 4, 4}, 4},
		linearCase{"sub", add{w: []float64{1, -1}}, []int{5, 5}, 5},
		linearCase{"slice", slice{from: 2, to: 5}, []int{7}, 3},
		linearCase{"concat", concat{widths: []int{3, 1, 2}}, []int{3, 1, 2}, 6},
		linearCase{"const", constant{v: randn(4)}, nil, 4})
	return cs
}

// TestLinearRules: for every affine operator the interval rule contains
// sampled outputs, the batched forward rule equals the evaluation, the
// backward rule is the exact identity c·op(in) + k = Σ (backed c)·in + k',
// and the convolution's evaluation equals a naive loop over its
// definition.
func TestLinearRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, tc := range linearCases(rng) {
		g := &graph{}
		var ins []int
		for k, w := range tc.ins {
			ins = append(ins, g.add("in", nil, w, -1))
			_ = k
		}
		id := g.add(tc.name, tc.op, tc.out, -1, ins...)
		n := g.nodes[id]
		boxes := make([][]Interval, len(tc.ins))
		for k, w := range tc.ins {
			boxes[k] = make([]Interval, w)
			for i := range boxes[k] {
				lo := rng.NormFloat64()
				boxes[k][i] = Interval{lo, lo + rng.Float64()}
			}
		}
		const rows = 3
		c := newBlock(rows, tc.out)
		for i := range c.v {
			c.v[i] = rng.NormFloat64()
		}
		dom := make([]*Bounds, rows)
		for r := range dom {
			dom[r] = &Bounds{}
		}
		s := g.newBack(dom, nil, true, false)
		s.coef[id], s.abs[id] = c, &block{rows: rows, cols: tc.out, v: absOf(c.v)}
		tc.op.back(s, n)
		for trial := 0; trial < 40; trial++ {
			x := make([][]float64, len(tc.ins))
			xb := make([]*block, len(tc.ins))
			for k := range tc.ins {
				x[k] = make([]float64, tc.ins[k])
				for i, iv := range boxes[k] {
					x[k][i] = iv.Lo + (iv.Hi-iv.Lo)*rng.Float64()
				}
				xb[k] = &block{rows: 1, cols: tc.ins[k], v: x[k]}
			}
			z := tc.op.eval(x, -1)
			iv := tc.op.interval(boxes, nil)
			for j, v := range z {
				if v < iv[j].Lo || v > iv[j].Hi {
					t.Fatalf("%s output %d: %v outside %+v", tc.name, j, v, iv[j])
				}
			}
			if fz := tc.op.forward(nil, n, xb).v; !close(fz, z, 1e-12) {
				t.Fatalf("%s: batched forward %v, evaluation %v", tc.name, fz, z)
			}
			if cv, ok := tc.op.(*conv); ok {
				if nv := naiveConv(cv, x[0]); !close(nv, z, 1e-12) {
					t.Fatalf("conv: evaluation %v, naive loop %v", z, nv)
				}
			}
			for r := 0; r < rows; r++ {
				want, got := 0.0, s.k[r]
				for j, v := range z {
					want += c.v[r*tc.out+j] * v
				}
				for k, p := range ins {
					if s.coef[p] == nil {
						continue
					}
					for i, v := range x[k] {
						got += s.coef[p].v[r*tc.ins[k]+i] * v
					}
				}
				if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
					t.Fatalf("%s row %d: backward rule %v, forward %v", tc.name, r, got, want)
				}
			}
		}
	}
}

// naiveConv is a convolution straight from its definition.
func naiveConv(cv *conv, x []float64) []float64 {
	out := make([]float64, cv.outSize())
	for o := 0; o < cv.o; o++ {
		for oy := 0; oy < cv.oh; oy++ {
			for ox := 0; ox < cv.ow; ox++ {
				s := cv.bias[o]
				for ch := 0; ch < cv.c; ch++ {
					for ky := 0; ky < cv.k; ky++ {
						for kx := 0; kx < cv.k; kx++ {
							iy, ix := oy*cv.stride-cv.padding+ky, ox*cv.stride-cv.padding+kx
							if iy >= 0 && iy < cv.h && ix >= 0 && ix < cv.w {
								s += cv.weight[((o*cv.c+ch)*cv.k+ky)*cv.k+kx] * x[(ch*cv.h+iy)*cv.w+ix]
							}
						}
					}
				}
				out[(o*cv.oh+oy)*cv.ow+ox] = s
			}
		}
	}
	return out
}

func close(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol*(1+math.Abs(b[i])) {
			return false
		}
	}
	return true
}

// TestFeedbackRules: over the allowed tokens, the interval rule contains
// each token's term and the backward rule bounds c·term from above per
// row, each row with its own domain's allowed tokens; tokens that are not
// allowed do not widen either.
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
	allowed := [][]bool{{true, false, true, true, false}, {false, true, false, false, false}}
	g := &graph{}
	id := g.add("token", f, 4, 1)
	g.nodes[id].token = 0
	dom := []*Bounds{{Allowed: [][]bool{allowed[0]}}, {Allowed: [][]bool{allowed[1]}}}
	c := &block{rows: 2, cols: 4, v: []float64{0.3, -1, 2, 0, -0.5, 0.2, 0, 1}}
	s := g.newBack(dom, nil, true, true)
	s.coef[id], s.abs[id] = c, &block{rows: 2, cols: 4, v: absOf(c.v)}
	f.back(s, g.nodes[id])
	for r, al := range allowed {
		for z, ok := range al {
			if !ok {
				continue
			}
			v := dot(c.row(r), f.tokens[z])
			if v > s.k[r] {
				t.Fatalf("row %d token %d: c·term %v above the backward bound %v", r, z, v, s.k[r])
			}
			for j, iv := range f.interval(nil, al) {
				if f.tokens[z][j] < iv.Lo || f.tokens[z][j] > iv.Hi {
					t.Fatalf("token %d coordinate %d outside %+v", z, j, iv)
				}
			}
		}
		if s.rec.token[id][r] < 0 || !al[s.rec.token[id][r]] {
			t.Fatalf("row %d: recorded token %d not allowed", r, s.rec.token[id][r])
		}
	}
	if iv := f.interval(nil, allowed[0]); iv[0].Hi >= 100 {
		t.Fatalf("a token that is not allowed widened the interval to %v", iv[0].Hi)
	}
}

// openStep unrolls n for steps 0..K and bounds it by CROWN over the box:
// the graph, its bounds and step K's hidden node; ok false when the bounds
// already prove the property (nothing left to optimise).
func openStep(n *Net, lo, hi []float64, K int) (g *graph, b *Bounds, L int, ok bool) {
	g = newGraph(n, K)
	b = computeBounds(context.Background(), g, lo, hi, BoundCROWN)
	return g, b, g.hidden[K], !b.Proven
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

// boundWith is the unpadded bound of row r's objective with parameters
// rx, its vertex and its back-substitution.
func boundWith(g *graph, dom []*Bounds, L int, c *block, k []float64, rx *relaxation) ([]float64, *block, *backState) {
	s := g.newBack(dom, rx, false, true)
	s.run(L, c, k)
	xs := newBlock(len(dom), g.nodes[0].width)
	return s.concretize(xs), xs, s
}

// TestAlphaGradient checks the batched α gradient against finite
// differences of the bound, each row with its own slopes, and that the
// optimised bound is sound (above every sampled margin) and no looser
// than CROWN's.
func TestAlphaGradient(t *testing.T) {
	for _, cell := range testCells {
		t.Run(cell, func(t *testing.T) { testAlphaGradient(t, cell) })
	}
}

func testAlphaGradient(t *testing.T, cell string) {
	checked := 0
	for seed := uint64(1); seed <= 12; seed++ {
		_, n := tinyNet(t, seed, int(seed%3), cell)
		rng := rand.New(rand.NewPCG(seed, 77))
		lo, hi := randomBox(rng, n.InputSize, 0.3)
		const K = 1
		g, b, L, ok := openStep(n, lo, hi, K)
		if !ok {
			continue
		}
		toks := nonEOS(n)
		c, k := g.head.marginRows(toks, 1)
		dom := sameDomain(b, len(toks))
		rx := g.defaultRelaxation(dom, L)
		// Random parameters the projection admits: a ReLU's slope in
		// [0.2, 0.8], a tangent point inside its pre-activation's interval.
		neuronOf := func(id, i int) (Interval, []float64) {
			nd := g.nodes[id]
			np, a := nd.act.params(), rx.alpha[id]
			r, j := i/a.cols, (i%a.cols)/np
			return dom[r].Val[nd.in[0]][j], a.v[r*a.cols+j*np : r*a.cols+(j+1)*np]
		}
		for id, a := range rx.alpha {
			if a == nil {
				continue
			}
			for i := range a.v {
				iv, p := neuronOf(id, i)
				u := 0.2 + 0.6*rng.Float64()
				a.v[i] = u
				if _, ok := g.nodes[id].act.(relu); !ok {
					a.v[i] = iv.Lo + (iv.Hi-iv.Lo)*u
				}
				g.nodes[id].act.project(iv, p)
			}
		}
		_, xs, s := boundWith(g, dom, L, c, k, rx)
		grad := g.alphaGrad(s, g.relaxedForward(s, xs, L), L)
		for id, a := range rx.alpha {
			if a == nil {
				continue
			}
			for i := range a.v {
				const h = 1e-6
				r := i / a.cols
				iv, p := neuronOf(id, i)
				q := (i % a.cols) % len(p)
				inside := true
				for _, step := range []float64{h, -h} {
					moved := slices.Clone(p)
					moved[q] += step
					g.nodes[id].act.project(iv, moved)
					inside = inside && moved[q] == p[q]+step
				}
				if !inside {
					continue // at the end of its range: no two-sided difference
				}
				a.v[i] += h
				up, _, _ := boundWith(g, dom, L, c, k, rx)
				a.v[i] -= 2 * h
				down, _, _ := boundWith(g, dom, L, c, k, rx)
				a.v[i] += h
				fd := (up[r] - down[r]) / (2 * h)
				gv := 0.0
				if grad[id] != nil {
					gv = grad[id].v[i]
				}
				if math.Abs(fd-gv) > 1e-5*(1+math.Abs(fd)) {
					t.Fatalf("seed %d node %d entry %d: gradient %v, finite difference %v", seed, id, i, gv, fd)
				}
				if gv != 0 {
					checked++
				}
			}
		}
		// Sound and no looser than CROWN.
		opt, _, _, _ := g.optimise(dom, L, c, k, nil, nil, nil, defaultAlpha)
		cr := g.crownUpper(dom, L, c, k)
		for r, z := range toks {
			if opt[r] > cr[r] {
				t.Fatalf("seed %d token %d: α-CROWN %v looser than CROWN %v", seed, z, opt[r], cr[r])
			}
			for trial := 0; trial < 200; trial++ {
				m, _, ok := coveredMargin(g, b, sampleIn(rng, lo, hi), K, z)
				if ok && m > opt[r] {
					t.Fatalf("seed %d token %d: sampled margin %v above the α-CROWN bound %v", seed, z, m, opt[r])
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
	for _, cell := range testCells {
		t.Run(cell, func(t *testing.T) { testBetaGradient(t, cell) })
	}
}

func testBetaGradient(t *testing.T, cell string) {
	checked, sampled := 0, 0
	for seed := uint64(1); seed <= 16; seed++ {
		_, n := tinyNet(t, seed, int(seed%3), cell)
		rng := rand.New(rand.NewPCG(seed, 78))
		lo, hi := randomBox(rng, n.InputSize, 0.4)
		const K = 1
		g, b, L, ok := openStep(n, lo, hi, K)
		if !ok {
			continue
		}
		var unstable []neuron
		for _, nu := range unstableNeurons(g, b) {
			if nu.node <= L {
				unstable = append(unstable, nu)
			}
		}
		if len(unstable) == 0 {
			continue
		}
		splits := splitSet{}
		for range 2 {
			nu := unstable[rng.IntN(len(unstable))]
			splits[nu] = childCut(g, b, nu, splits.of(nu), rng.IntN(2) == 0)
		}
		sb := computeSplitBounds(context.Background(), g, lo, hi, BoundCROWN, splits, nil, nil, 0, false)
		if sb.Proven {
			continue
		}
		toks := nonEOS(n)
		c, k := g.head.marginRows(toks, 1)
		dom := sameDomain(sb, len(toks))
		rx := g.defaultRelaxation(dom, L)
		sides := map[int]*betaSides{}
		for nu, ct := range splits {
			w := g.nodes[nu.node].width
			sd := sides[nu.node]
			if sd == nil {
				sd = &betaSides{lo: make([]float64, len(toks)*w), hi: make([]float64, len(toks)*w)}
				for i := range sd.lo {
					sd.lo[i], sd.hi[i] = math.Inf(-1), math.Inf(1)
				}
				sides[nu.node] = sd
				rx.betaLo[nu.node], rx.betaHi[nu.node], rx.beta[nu.node] = newBlock(len(toks), w), newBlock(len(toks), w), newBlock(len(toks), w)
			}
			for r := range toks {
				i := r*w + nu.index
				sd.lo[i], sd.hi[i] = ct.lo, ct.hi
				sd.offZero = sd.offZero || !math.IsInf(ct.lo, -1) && ct.lo != 0 || !math.IsInf(ct.hi, 1) && ct.hi != 0
				if !math.IsInf(ct.lo, -1) {
					rx.betaLo[nu.node].v[i] = 0.5 * rng.Float64()
				}
				if !math.IsInf(ct.hi, 1) {
					rx.betaHi[nu.node].v[i] = 0.5 * rng.Float64()
				}
			}
		}
		for id, sd := range sides {
			rx.setBeta(id, sd)
		}
		_, xs, s := boundWith(g, dom, L, c, k, rx)
		zeta := g.relaxedForward(s, xs, L)
		for nu, ct := range splits {
			p := g.nodes[nu.node].in[0]
			for r := range toks {
				i := r*g.nodes[nu.node].width + nu.index
				z := zeta[p].v[r*g.nodes[p].width+nu.index]
				for _, side := range []struct {
					b    *block
					want float64
				}{{rx.betaLo[nu.node], z - ct.lo}, {rx.betaHi[nu.node], ct.hi - z}} {
					if math.IsInf(side.want, 0) {
						continue
					}
					const h = 1e-6
					side.b.v[i] += h
					rx.setBeta(nu.node, sides[nu.node])
					up, _, _ := boundWith(g, dom, L, c, k, rx)
					side.b.v[i] -= 2 * h
					rx.setBeta(nu.node, sides[nu.node])
					down, _, _ := boundWith(g, dom, L, c, k, rx)
					side.b.v[i] += h
					rx.setBeta(nu.node, sides[nu.node])
					fd := (up[r] - down[r]) / (2 * h)
					if math.Abs(fd-side.want) > 1e-5*(1+math.Abs(fd)) {
						t.Fatalf("seed %d row %d split %v (%+v): gradient %v, finite difference %v", seed, r, nu, ct, side.want, fd)
					}
					checked++
				}
			}
		}
		sp := make([]splitSet, len(toks))
		for r := range sp {
			sp[r] = splits
		}
		ub, _, _, _ := g.optimise(dom, L, c, k, sp, nil, nil, defaultAlpha)
		cr := g.crownUpper(dom, L, c, k)
		for r, z := range toks {
			if ub[r] > cr[r] {
				t.Fatalf("seed %d token %d: α,β-CROWN %v looser than CROWN %v", seed, z, ub[r], cr[r])
			}
			for trial := 0; trial < 400; trial++ {
				m, tr, ok := coveredMargin(g, sb, sampleIn(rng, lo, hi), K, z)
				if !ok || !inDomain(g, tr.val, splits) {
					continue
				}
				sampled++
				if m > ub[r] {
					t.Fatalf("seed %d token %d: sampled margin %v above the α,β-CROWN bound %v of domain %v", seed, z, m, ub[r], splits)
				}
			}
		}
	}
	if checked < 20 || sampled < 500 {
		t.Fatalf("only %d gradient entries and %d samples checked", checked, sampled)
	}
}

// TestBatchedEqualsAlone: rows bounded together — each over its own
// domain (different splits and tokens), with its own parameters — get the
// bounds they get bounded one at a time: optimised, exactly what a batch
// of copies of the row gets (same arithmetic; see optimiseCopies); with
// fixed parameters (CROWN's, and those the optimiser chose), what the row
// alone gets, within what rounding allows (see paddedRows).
func TestBatchedEqualsAlone(t *testing.T) {
	for _, cell := range testCells {
		t.Run(cell, func(t *testing.T) { testBatchedEqualsAlone(t, cell) })
	}
}

func testBatchedEqualsAlone(t *testing.T, cell string) {
	compared := 0
	for seed := uint64(1); seed <= 10; seed++ {
		_, n := tinyNet(t, seed, 2, cell)
		rng := rand.New(rand.NewPCG(seed, 91))
		lo, hi := randomBox(rng, n.InputSize, 0.4)
		g, root, L, ok := openStep(n, lo, hi, 1)
		if !ok {
			continue
		}
		unstable := unstableNeurons(g, root)
		var dom []*Bounds
		var sp []splitSet
		var toks []int
		for d := 0; d < 4 && len(unstable) > 0; d++ {
			nu := unstable[rng.IntN(len(unstable))]
			s := splitSet{nu: childCut(g, root, nu, uncut, rng.IntN(2) == 0)}
			b := computeSplitBounds(context.Background(), g, lo, hi, BoundCROWN, s, nil, nil, 0, false)
			if b.Proven {
				continue
			}
			for z, al := range b.Allowed[1] {
				if al {
					dom, sp, toks = append(dom, b), append(sp, s), append(toks, z)
				}
			}
		}
		if len(dom) < 2 {
			continue
		}
		c, k := g.head.marginRows(toks, 1)
		ub, xs, best, _ := g.optimise(dom, L, c, k, sp, nil, nil, defaultAlpha)
		crown, crownPad := paddedRows(g, dom, L, c, k, nil)
		optimised, optimisedPad := paddedRows(g, dom, L, c, k, best)
		for r := range dom {
			if cp, x := optimiseCopies(g, dom, L, toks, sp, nil, r, defaultAlpha); cp != ub[r] || !slices.Equal(x, xs.row(r)) {
				t.Fatalf("seed %d row %d: batched bound %v, in a batch of its copies %v (the same vertex: %v)", seed, r, ub[r], cp, slices.Equal(x, xs.row(r)))
			}
			cr, kr := g.head.marginRows(toks[r:r+1], 1)
			if c1, p1 := paddedRows(g, dom[r:r+1], L, cr, kr, nil); !withinRounding(crown[r], c1[0], crownPad[r], p1[0]) {
				t.Fatalf("seed %d row %d: batched CROWN %v, alone %v (allowances %v, %v)", seed, r, crown[r], c1[0], crownPad[r], p1[0])
			}
			if o1, p1 := paddedRows(g, dom[r:r+1], L, cr, kr, rowOf(best, r)); !withinRounding(optimised[r], o1[0], optimisedPad[r], p1[0]) {
				t.Fatalf("seed %d row %d: batched bound with the optimiser's parameters %v, alone %v (allowances %v, %v)", seed, r, optimised[r], o1[0], optimisedPad[r], p1[0])
			}
			compared++
		}
	}
	if compared < 20 {
		t.Fatalf("only %d rows compared", compared)
	}
}

// A row bounded alone and the same row in a batch are not computed in the
// same arithmetic: a matrix product's rounding depends on its shape (on
// an Intel Xeon, OpenBLAS rounds a row of a batched product unlike the
// row alone), and the optimiser's normalised (Adam) steps grow a
// difference in the last bits without bound (issue 53: 1.9e-7 apart after
// ten steps; batched products moved by one ulp moved a bound by 2e-3). So
// the tests compare a batch's rows in two ways that hold on every CPU.

// optimiseCopies returns the optimised bound and vertex of row r of a
// batch of len(dom) copies of row r's problem (its domain, token, splits
// sp[r] if sp is set, and the cuts of row r). The products have the
// batch's shapes and the row its place in them, and a product's kernel
// rounds an entry by those, whatever the other rows hold (OpenBLAS's and
// gonum's do), so the row's arithmetic is the batch's, and the two agree
// exactly unless a row reads another's data. (Rows of copies read, if
// wrongly, copies of their own data.)
func optimiseCopies(g *graph, dom []*Bounds, L int, toks []int, sp []splitSet, cuts []rowCut, r int, opt alphaOptions) (float64, []float64) {
	R := len(dom)
	d, tk := make([]*Bounds, R), make([]int, R)
	var s []splitSet
	var cs []rowCut
	for q := range R {
		d[q], tk[q] = dom[r], toks[r]
		if sp != nil {
			s = append(s, sp[r])
		}
		for _, ct := range cuts {
			if ct.row == r {
				ct.row = q
				cs = append(cs, ct)
			}
		}
	}
	c, k := g.head.marginRows(tk, 1)
	ub, xs, _, _ := g.optimise(d, L, c, k, s, cs, nil, opt)
	return ub[r], xs.row(r)
}

// paddedRows returns each row's padded bound of c·a_L + k over its domain
// with parameters rx (nil: CROWN's) and the rounding allowance in it. The
// allowance covers the rounding of the back-substitution in any order of
// summation (see relPad), so the bound lies between the exact value of
// the relaxation and twice its allowance above it, however the products
// were rounded.
func paddedRows(g *graph, dom []*Bounds, L int, c *block, k []float64, rx *relaxation) (ub, allowance []float64) {
	s := g.newBack(dom, rx, true, false)
	s.run(L, c, k)
	defer s.release()
	ub = s.concretize(nil)
	allowance = make([]float64, len(ub))
	for r := range ub {
		allowance[r] = s.paddedConst(r, dom[r].Input) - s.k[r]
	}
	return ub, allowance
}

// withinRounding reports whether padded bounds a and b of the same
// relaxation, with allowances pa and pb, differ by no more than rounding
// can make them: each is within twice its allowance above the exact value.
func withinRounding(a, b, pa, pb float64) bool {
	return math.Abs(a-b) <= 2*max(pa, pb)
}

// rowOf returns row r of rx's parameters as a relaxation of one row
// (without cut terms: a row's are valid only for its own cuts).
func rowOf(rx *relaxation, r int) *relaxation {
	out := newRelaxation(len(rx.alpha))
	for k, part := range rx.parts() {
		for id, b := range part {
			if b != nil {
				out.parts()[k][id] = &block{rows: 1, cols: b.cols, v: slices.Clone(b.row(r))}
			}
		}
	}
	return out
}

// slowReLU is relu without its fast path (only the activation interface's
// methods are promoted): relaxActivation takes the generic loop over the
// operator's rules for it.
type slowReLU struct{ activation }

// TestReLURowMatchesRule: the ReLU's fast back-substitution loop
// (reluRow) gives what the generic loop over relu.relax gives — the
// input coefficients, constants, rounding allowances and recorded lines
// — with and without slopes, multipliers, padding and records.
func TestReLURowMatchesRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for trial := 0; trial < 40; trial++ {
		w, rows := 1+rng.IntN(9), 1+rng.IntN(4)
		pre := make([]Interval, w)
		for i := range pre {
			lo := 2*rng.Float64() - 1.5
			pre[i] = Interval{lo, lo + 2*rng.Float64()}
		}
		padded, record := rng.IntN(2) == 0, rng.IntN(2) == 0
		var out [2][]float64
		for v, act := range []activation{relu{}, slowReLU{relu{}}} {
			g := &graph{pool: pool{}}
			in := g.add("in", nil, w, -1)
			id := g.add("act", act, w, -1, in)
			dom := make([]*Bounds, rows)
			for r := range dom {
				dom[r] = &Bounds{Val: [][]Interval{pre, nil}}
			}
			r2 := rand.New(rand.NewPCG(uint64(trial), 1))
			rx := newRelaxation(2)
			if trial%3 > 0 {
				rx.alpha[id], rx.beta[id] = newBlock(rows, w), newBlock(rows, w)
				for i := range rx.alpha[id].v {
					rx.alpha[id].v[i] = r2.Float64()
					if r2.IntN(3) == 0 {
						rx.beta[id].v[i] = r2.NormFloat64()
					}
				}
			}
			c := newBlock(rows, w)
			for i := range c.v {
				if r2.IntN(4) > 0 {
					c.v[i] = r2.NormFloat64()
				}
			}
			s := g.newBack(dom, rx, padded, record)
			s.run(id, c, make([]float64, rows))
			res := append(append([]float64(nil), s.coef[in].v...), s.k...)
			if padded {
				res = append(append(res, s.abs[in].v...), s.kabs...)
			}
			if record {
				for i, cv := range s.rec.coef[id].v {
					if cv != 0 {
						res = append(res, s.rec.slope[id].v[i], s.rec.shift[id].v[i])
					}
				}
			}
			out[v] = res
		}
		if !close(out[0], out[1], 1e-12) {
			t.Fatalf("trial %d (padded %v, record %v): fast loop %v, rule %v", trial, padded, record, out[0], out[1])
		}
	}
}

// TestMulRules: the product's interval contains sampled products, its
// backward rule bounds c·x·y from above for coefficients of both signs
// (one row each, every row over its own box), its relaxed forward pass is
// the plane the backward rule took, and its MIP encoding is feasible at
// the true values.
func TestMulRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := 0; trial < 30; trial++ {
		w := 1 + rng.IntN(5)
		g := &graph{pool: pool{}}
		x := g.add("x", nil, w, -1)
		y := g.add("y", nil, w, -1)
		id := g.add("mul", mul{}, w, -1, x, y)
		box := func() []Interval {
			b := make([]Interval, w)
			for i := range b {
				lo := 2*rng.NormFloat64() - 1
				b[i] = Interval{lo, lo + 2*rng.Float64()}
			}
			return b
		}
		const rows = 2
		dom := make([]*Bounds, rows)
		for r := range dom {
			bx, by := box(), box()
			dom[r] = &Bounds{Val: [][]Interval{bx, by, mul{}.interval([][]Interval{bx, by}, nil)}}
		}
		c := newBlock(rows, w)
		for i := range c.v {
			c.v[i] = rng.NormFloat64()
		}
		s := g.newBack(dom, nil, false, true)
		s.coef[id] = c
		mul{}.back(s, g.nodes[id])
		for r := 0; r < rows; r++ {
			bx, by := dom[r].Val[x], dom[r].Val[y]
			for trial := 0; trial < 100; trial++ {
				xv, yv := make([]float64, w), make([]float64, w)
				for i := range xv {
					xv[i] = bx[i].Lo + (bx[i].Hi-bx[i].Lo)*rng.Float64()
					yv[i] = by[i].Lo + (by[i].Hi-by[i].Lo)*rng.Float64()
				}
				z := mul{}.eval([][]float64{xv, yv}, -1)
				want, got := 0.0, s.k[r]
				for i, v := range z {
					if iv := dom[r].Val[id][i]; v < iv.Lo || v > iv.Hi {
						t.Fatalf("product %v outside %+v", v, iv)
					}
					want += c.v[r*w+i] * v
					got += s.coef[x].v[r*w+i]*xv[i] + s.coef[y].v[r*w+i]*yv[i]
				}
				if want > got+1e-9*(1+math.Abs(want)) {
					t.Fatalf("row %d: c·xy = %v above the relaxation %v", r, want, got)
				}
				// The relaxed forward pass is the linear form the backward
				// rule produced.
				xb := &block{rows: rows, cols: w, v: append(append([]float64(nil), xv...), xv...)}
				yb := &block{rows: rows, cols: w, v: append(append([]float64(nil), yv...), yv...)}
				f := mul{}.forward(s, g.nodes[id], []*block{xb, yb})
				sum := 0.0 // the planes' constants are in s.k
				for i := range z {
					sum += c.v[r*w+i] * f.v[r*w+i]
				}
				if math.Abs(sum-got) > 1e-9*(1+math.Abs(got)) {
					t.Fatalf("row %d: forward gives %v, the backward rule %v", r, sum, got)
				}
				// The MIP encoding admits the true values.
				e := &encoding{m: mip.NewModel("mul"), g: g, b: dom[r]}
				vals := make([]float64, 0, 3*w)
				ex, ey := make([]lin, w), make([]lin, w)
				for i := range xv {
					ex[i] = varExpr(e.m.AddVar(fmt.Sprint("x", i), bx[i].Lo, bx[i].Hi, mip.Continuous))
					ey[i] = varExpr(e.m.AddVar(fmt.Sprint("y", i), by[i].Lo, by[i].Hi, mip.Continuous))
					vals = append(vals, xv[i], yv[i])
				}
				mul{}.encode(e, g.nodes[id], [][]lin{ex, ey})
				vals = append(vals, z...)
				if err := e.m.Check(vals, 1e-9); err != nil {
					t.Fatalf("row %d: the encoding excludes the true product: %v", r, err)
				}
			}
		}
	}
}

// nonEOS lists the tokens other than eos: every margin's.
func nonEOS(n *Net) []int {
	var toks []int
	for z := 0; z < n.Vocab; z++ {
		if z != n.EOS {
			toks = append(toks, z)
		}
	}
	return toks
}
