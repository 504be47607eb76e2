package verify

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/mip"
)

// The rule tests: one row per operator. Adding an operator adds a row
// here (its rules sampled against its evaluation), and nothing else.

// TestActivationRules samples every activation's rules: the interval rule
// contains the function's values, the CROWN relaxation bounds c·f from
// above for coefficients of either sign and every α, and the gradient in
// α matches finite differences.
func TestActivationRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, tc := range []struct {
		name string
		act  activation
	}{{"relu", relu{}}} {
		for _, iv := range []Interval{{-3, -1}, {-2, 0}, {0, 2}, {1, 4}, {-1, 3}, {-3, 1}, {-1, 1}, {-1e-9, 1e-9}} {
			out := tc.act.outInterval(iv)
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
						a := tc.act.apply(z)
						if a < out.Lo || a > out.Hi {
							t.Fatalf("%s on %+v: value %v at %v outside interval %+v", tc.name, iv, a, z, out)
						}
						if c*a > c*s*z+d+1e-12 {
							t.Fatalf("%s on %+v, c = %v, α = %v: c·a = %v above the relaxation %v at z = %v", tc.name, iv, c, alpha, c*a, c*s*z+d, z)
						}
						// The gradient in α of c·(s·z + d), by finite differences.
						const h = 1e-6
						if alpha-h < 0 || alpha+h > 1 {
							continue
						}
						su, du := tc.act.relax(c, iv, alpha+h)
						sd, dd := tc.act.relax(c, iv, alpha-h)
						fd := (c*(su*z+du) - c*(sd*z+dd)) / (2 * h)
						if g := tc.act.gradAlpha(c, iv, alpha, z); math.Abs(g-fd) > 1e-6*(1+math.Abs(fd)) {
							t.Fatalf("%s on %+v, c = %v, α = %v, z = %v: gradient %v, finite difference %v", tc.name, iv, c, alpha, z, g, fd)
						}
					}
				}
			}
			// The score is 0 where a split removes nothing.
			if !tc.act.unstable(iv) && tc.act.score(1, iv) != 0 {
				t.Fatalf("%s on %+v: stable, but score %v", tc.name, iv, tc.act.score(1, iv))
			}
		}
	}
}

// linearCase is an affine operator with the shapes of its inputs.
type linearCase struct {
	name string
	op   linearOp
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
	cs = append(cs, linearCase{"add", add{}, []int{4, 4, 4}, 4})
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
	checked := 0
	for seed := uint64(1); seed <= 12; seed++ {
		_, n := tinyNet(t, seed, int(seed%3))
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
		for _, a := range rx.alpha {
			if a != nil {
				for i := range a.v {
					a.v[i] = 0.2 + 0.6*rng.Float64()
				}
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
		opt, _, _, _ := g.optimise(dom, L, c, k, nil, nil, defaultAlpha)
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
			splits[unstable[rng.IntN(len(unstable))]] = rng.IntN(2) == 0
		}
		sb := computeSplitBounds(context.Background(), g, lo, hi, BoundCROWN, splits, nil, nil, 0, false)
		if sb.Proven {
			continue
		}
		toks := nonEOS(n)
		c, k := g.head.marginRows(toks, 1)
		dom := sameDomain(sb, len(toks))
		rx := g.defaultRelaxation(dom, L)
		for nu, active := range splits {
			if rx.beta[nu.node] == nil {
				rx.beta[nu.node] = newBlock(len(toks), g.nodes[nu.node].width)
			}
			for r := range toks {
				v := 0.5 * rng.Float64()
				if !active {
					v = -v
				}
				rx.beta[nu.node].v[r*g.nodes[nu.node].width+nu.index] = v
			}
		}
		_, xs, s := boundWith(g, dom, L, c, k, rx)
		zeta := g.relaxedForward(s, xs, L)
		for nu := range splits {
			p := g.nodes[nu.node].in[0]
			for r := range toks {
				const h = 1e-6
				i := r*g.nodes[nu.node].width + nu.index
				rx.beta[nu.node].v[i] += h
				up, _, _ := boundWith(g, dom, L, c, k, rx)
				rx.beta[nu.node].v[i] -= 2 * h
				down, _, _ := boundWith(g, dom, L, c, k, rx)
				rx.beta[nu.node].v[i] += h
				fd := (up[r] - down[r]) / (2 * h)
				if want := zeta[p].v[r*g.nodes[p].width+nu.index]; math.Abs(fd-want) > 1e-5*(1+math.Abs(fd)) {
					t.Fatalf("seed %d row %d split %v: gradient %v, finite difference %v", seed, r, nu, want, fd)
				}
				checked++
			}
		}
		sp := make([]splitSet, len(toks))
		for r := range sp {
			sp[r] = splits
		}
		ub, _, _, _ := g.optimise(dom, L, c, k, sp, nil, defaultAlpha)
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
// bounds and vertices they get bounded one at a time (to the rounding of
// a matrix product's summation order, far inside the padding).
func TestBatchedEqualsAlone(t *testing.T) {
	compared := 0
	for seed := uint64(1); seed <= 10; seed++ {
		_, n := tinyNet(t, seed, 2)
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
			s := splitSet{unstable[rng.IntN(len(unstable))]: rng.IntN(2) == 0}
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
		ub, xs, _, _ := g.optimise(dom, L, c, k, sp, nil, defaultAlpha)
		crown := g.crownUpper(dom, L, c, k)
		for r := range dom {
			cr, kr := g.head.marginRows(toks[r:r+1], 1)
			one, x1, _, _ := g.optimise(dom[r:r+1], L, cr, kr, sp[r:r+1], nil, defaultAlpha)
			if math.Abs(one[0]-ub[r]) > 1e-9*(1+math.Abs(one[0])) || !close(x1.row(0), xs.row(r), 0) {
				t.Fatalf("seed %d row %d: batched bound %v, alone %v", seed, r, ub[r], one[0])
			}
			if c1 := g.crownUpper(dom[r:r+1], L, cr, kr); math.Abs(c1[0]-crown[r]) > 1e-9*(1+math.Abs(c1[0])) {
				t.Fatalf("seed %d row %d: batched CROWN %v, alone %v", seed, r, crown[r], c1[0])
			}
			compared++
		}
	}
	if compared < 20 {
		t.Fatalf("only %d rows compared", compared)
	}
}

// slowReLU is relu without its fast path: relaxActivation takes the
// generic loop over the operator's rules for it.
type slowReLU struct{ relu }

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
		for v, act := range []activation{relu{}, slowReLU{}} {
			g := &graph{pool: pool{}}
			in := g.add("in", nil, w, -1)
			id := g.add("act", act, w, -1, in)
			dom := make([]*Bounds, rows)
			for r := range dom {
				dom[r] = &Bounds{Val: [][]Interval{pre, nil}}
			}
			r2 := rand.New(rand.NewPCG(uint64(trial), 1))
			rx := &relaxation{alpha: make([]*block, 2), beta: make([]*block, 2)}
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
