package verify

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestReluCutRule: the joint rule's line a·ẑ + ψ0 lies above c·h + π·d at
// every point of the tetrahedron (sampled, and its vertices) for every α,
// touches the slice's maximum at ẑ = 0, is CROWN's rule when π = 0, and
// its derivatives in c and π are the finite differences' and give back
// the line (a and ψ0 are homogeneous in (c, π)).
func TestReluCutRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 1))
	for trial := 0; trial < 3000; trial++ {
		l, u := -0.05-2*rng.Float64(), 0.05+2*rng.Float64()
		iv := Interval{l, u}
		c, pi := 4*rng.Float64()-2, 4*rng.Float64()-2
		switch trial % 5 {
		case 0:
			pi = 0
		case 1:
			c = 0
		}
		al := rng.Float64()
		if trial%7 == 0 {
			al = float64(rng.IntN(2))
		}
		rc := newReluCut(c, pi, iv, al)
		verts := [4][3]float64{{l, 0, 0}, {0, 0, 0}, {0, 0, 1}, {u, u, 1}}
		for s := 0; s < 200; s++ {
			var w [4]float64
			sum := 0.0
			for i := range w {
				w[i] = -math.Log(1 - rng.Float64()) // uniform on the simplex
				if s < 4 {
					w[i] = 0
				}
				sum += w[i]
			}
			if s < 4 {
				w[s], sum = 1, 1
			}
			var z, h, d float64
			for i := range w {
				z += w[i] / sum * verts[i][0]
				h += w[i] / sum * verts[i][1]
				d += w[i] / sum * verts[i][2]
			}
			if v, line := c*h+pi*d, rc.a*z+rc.psi0; v > line+1e-12*(1+math.Abs(v)) {
				t.Fatalf("c %v π %v on [%v, %v], α %v: c·h + π·d = %v at (%v, %v, %v) above the line's %v", c, pi, l, u, al, v, z, h, d, line)
			}
		}
		// The slice at 0 holds (0, 0, 0), (0, 0, 1) and the long edge's
		// crossing: ψ0 is the largest of the three.
		tt := -l / (u - l)
		if want := max(0, pi, tt*(c*u+pi)); math.Abs(rc.psi0-want) > 1e-12 {
			t.Fatalf("ψ0 %v, the slice's maximum %v", rc.psi0, want)
		}
		if pi == 0 {
			sl, k := relu{}.relax(c, iv, []float64{al})
			if math.Abs(c*sl-rc.a) > 1e-12 || math.Abs(k-rc.psi0) > 1e-12 {
				t.Fatalf("π = 0, c %v on [%v, %v], α %v: line %v·ẑ + %v, CROWN's %v·ẑ + %v", c, l, u, al, rc.a, rc.psi0, c*sl, k)
			}
		}
		if got := c*rc.dac + pi*rc.dap; math.Abs(got-rc.a) > 1e-9*(1+math.Abs(rc.a)) {
			t.Fatalf("c·∂a/∂c + π·∂a/∂π = %v, a = %v", got, rc.a)
		}
		if got := c*rc.dpc + pi*rc.dpp; math.Abs(got-rc.psi0) > 1e-9*(1+math.Abs(rc.psi0)) {
			t.Fatalf("c·∂ψ0/∂c + π·∂ψ0/∂π = %v, ψ0 = %v", got, rc.psi0)
		}
		const h = 1e-7
		for _, dir := range []struct {
			dc, dp   float64
			wa, wpsi float64
		}{{1, 0, rc.dac, rc.dpc}, {0, 1, rc.dap, rc.dpp}} {
			up := newReluCut(c+h*dir.dc, pi+h*dir.dp, iv, al)
			dn := newReluCut(c-h*dir.dc, pi-h*dir.dp, iv, al)
			if up.dpc != dn.dpc || up.dpp != dn.dpp {
				continue // a kink of ψ0 between them
			}
			if fd := (up.a - dn.a) / (2 * h); math.Abs(fd-dir.wa) > 1e-5*(1+math.Abs(fd)) {
				t.Fatalf("c %v π %v on [%v, %v]: ∂a = %v, finite difference %v", c, pi, l, u, dir.wa, fd)
			}
			if fd := (up.psi0 - dn.psi0) / (2 * h); math.Abs(fd-dir.wpsi) > 1e-5*(1+math.Abs(fd)) {
				t.Fatalf("c %v π %v on [%v, %v]: ∂ψ0 = %v, finite difference %v", c, pi, l, u, dir.wpsi, fd)
			}
		}
	}
}

// randomCuts draws, for each of rows rows over one domain (bounds b,
// bound from node L), up to three cuts of one to three of b's unstable
// ReLUs on random sides.
func randomCuts(rng *rand.Rand, g *graph, b *Bounds, L, rows int) []rowCut {
	var pool []neuron
	for _, nu := range unstableNeurons(g, b) {
		if _, ok := g.nodes[nu.node].act.(relu); ok && nu.node <= L {
			pool = append(pool, nu)
		}
	}
	if len(pool) == 0 {
		return nil
	}
	var cuts []rowCut
	for r := 0; r < rows; r++ {
		for j := rng.IntN(4); j > 0; j-- {
			var lits []cutLit
			for n := 1 + rng.IntN(3); n > 0; n-- {
				nu := pool[rng.IntN(len(pool))]
				if slices.ContainsFunc(lits, func(l cutLit) bool { return l.node == nu.node && l.index == nu.index }) {
					continue
				}
				lits = append(lits, cutLit{nu.node, nu.index, rng.IntN(2) == 0})
			}
			down := 0
			for _, l := range lits {
				if !l.up {
					down++
				}
			}
			cuts = append(cuts, rowCut{row: r, lits: lits, k: float64(down - len(lits) + 1)})
		}
	}
	return cuts
}

// randomCutParams returns random slopes in [0.2, 0.8] for the ReLUs
// (CROWN's for the other activations) and random multipliers in
// [0.1, 1.1] for the cuts, with the cut terms they give.
func randomCutParams(rng *rand.Rand, g *graph, dom []*Bounds, L int, cuts []rowCut) (*relaxation, []float64) {
	rx := g.defaultRelaxation(dom, L)
	for id, a := range rx.alpha {
		if _, isReLU := g.nodes[id].act.(relu); a != nil && isReLU {
			for i := range a.v {
				a.v[i] = 0.2 + 0.6*rng.Float64()
			}
		}
	}
	mu := make([]float64, len(cuts))
	for j := range mu {
		mu[j] = 0.1 + rng.Float64()
	}
	rx.cuts = g.newCutTerms(cuts, len(dom))
	rx.cuts.set(cuts, mu)
	return rx, mu
}

// excluded reports whether a decoding's node values val satisfy every
// literal of some cut of row r (its region as splits at 0): a point the
// cuts remove.
func excluded(g *graph, val [][]float64, cuts []rowCut, r int) bool {
	for _, ct := range cuts {
		if ct.row != r {
			continue
		}
		region := splitSet{}
		for _, l := range ct.lits {
			region[neuron{l.node, l.index}] = uncut.side(0, l.up)
		}
		if inDomain(g, val, region) {
			return true
		}
	}
	return false
}

// cutProblem is one step-1 margin problem of a tiny decoder with random
// cuts on its rows (one per non-eos token, all over the root's bounds b).
type cutProblem struct {
	seed   uint64
	rng    *rand.Rand
	lo, hi []float64
	g      *graph
	b      *Bounds
	L      int
	toks   []int
	c      *block
	k      []float64
	dom    []*Bounds
	cuts   []rowCut
}

// forCutProblems calls each on the open problems of 16 tiny decoders of
// cell whose root has an unstable ReLU to cut (stream seeds the draws).
func forCutProblems(t *testing.T, cell string, stream uint64, each func(p cutProblem)) {
	for seed := uint64(1); seed <= 16; seed++ {
		_, n := tinyNet(t, seed, int(seed%3), cell)
		rng := rand.New(rand.NewPCG(seed, stream))
		lo, hi := randomBox(rng, n.InputSize, 0.3)
		g, b, L, ok := openStep(n, lo, hi, 1)
		if !ok {
			continue
		}
		toks := nonEOS(n)
		c, k := g.head.marginRows(toks, 1)
		dom := sameDomain(b, len(toks))
		if cuts := randomCuts(rng, g, b, L, len(toks)); len(cuts) > 0 {
			each(cutProblem{seed, rng, lo, hi, g, b, L, toks, c, k, dom, cuts})
		}
	}
}

// TestCutGradient: the gradient of the bound in the cuts' multipliers is
// −g(d̃) at the relaxed network's indicators, and in the slopes of the
// neurons the cuts touch (sL to sR), both checked against finite
// differences of the bound, with random cuts, multipliers and slopes.
func TestCutGradient(t *testing.T) {
	for _, cell := range testCells {
		t.Run(cell, func(t *testing.T) { testCutGradient(t, cell) })
	}
}

func testCutGradient(t *testing.T, cell string) {
	checkedMu, checkedAlpha := 0, 0
	forCutProblems(t, cell, 43, func(p cutProblem) {
		seed, rng, g, L, c, k, dom, cuts := p.seed, p.rng, p.g, p.L, p.c, p.k, p.dom, p.cuts
		rx, mu := randomCutParams(rng, g, dom, L, cuts)
		_, xs, s := boundWith(g, dom, L, c, k, rx)
		zeta := g.relaxedForward(s, xs, L)
		gm := g.cutGrad(s, zeta, cuts)
		ga := g.alphaGrad(s, zeta, L)
		const h = 1e-6
		for j, ct := range cuts {
			mu[j] += h
			rx.cuts.set(cuts, mu)
			up, _, _ := boundWith(g, dom, L, c, k, rx)
			mu[j] -= 2 * h
			rx.cuts.set(cuts, mu)
			down, _, _ := boundWith(g, dom, L, c, k, rx)
			mu[j] += h
			rx.cuts.set(cuts, mu)
			fd := (up[ct.row] - down[ct.row]) / (2 * h)
			if math.Abs(fd-gm[j]) > 1e-5*(1+math.Abs(fd)) {
				t.Fatalf("seed %d cut %d (%+v): gradient %v, finite difference %v", seed, j, ct, gm[j], fd)
			}
			checkedMu++
			for _, l := range ct.lits {
				a := rx.alpha[l.node]
				e := ct.row*a.cols + l.index
				a.v[e] += h
				up, _, _ := boundWith(g, dom, L, c, k, rx)
				a.v[e] -= 2 * h
				down, _, _ := boundWith(g, dom, L, c, k, rx)
				a.v[e] += h
				fd := (up[ct.row] - down[ct.row]) / (2 * h)
				gv := 0.0
				if ga[l.node] != nil {
					gv = ga[l.node].v[e]
				}
				if math.Abs(fd-gv) > 1e-5*(1+math.Abs(fd)) {
					t.Fatalf("seed %d cut %d literal %+v: α gradient %v, finite difference %v", seed, j, l, gv, fd)
				}
				if gv != 0 {
					checkedAlpha++
				}
			}
		}
	})
	if checkedMu < 20 || checkedAlpha < 10 {
		t.Fatalf("only %d multiplier and %d slope gradients checked", checkedMu, checkedAlpha)
	}
}

// TestCutMultipliersSound: with random cuts (each a region some inputs
// fall in, not a proved one), the optimised bound of each row is above the
// margin of every sampled input the row's cuts leave in, some rows are
// tighter than without the cuts, and batched rows get what they get one
// at a time: optimised, exactly what a batch of copies of the row gets;
// with fixed random slopes and multipliers, what the row alone with its
// own cuts gets, within what rounding allows (see optimiseCopies and
// paddedRows). (The decoders' bounds are too loose for a cut to bring one
// below a sample; TestCutMultipliersExact shows the cuts biting.)
func TestCutMultipliersSound(t *testing.T) {
	for _, cell := range testCells {
		t.Run(cell, func(t *testing.T) { testCutMultipliersSound(t, cell) })
	}
}

func testCutMultipliersSound(t *testing.T, cell string) {
	kept, tighter := 0, 0
	opt := alphaOptions{iters: 40, lr: 0.2, betaLR: 0.5}
	forCutProblems(t, cell, 47, func(p cutProblem) {
		seed, rng, lo, hi, g, b, L, toks, c, k, dom, cuts := p.seed, p.rng, p.lo, p.hi, p.g, p.b, p.L, p.toks, p.c, p.k, p.dom, p.cuts
		const K = 1
		with, _, _, _ := g.optimise(dom, L, c, k, nil, cuts, nil, opt)
		without, _, _, _ := g.optimise(dom, L, c, k, nil, nil, nil, opt)
		short := alphaOptions{iters: 10, lr: 0.2, betaLR: 0.5}
		batched, _, _, _ := g.optimise(dom, L, c, k, nil, cuts, nil, short)
		rx, mu := randomCutParams(rand.New(rand.NewPCG(seed, 59)), g, dom, L, cuts)
		fixed, fixedPad := paddedRows(g, dom, L, c, k, rx)
		for r, z := range toks {
			if with[r] < without[r]-1e-9 {
				tighter++
			}
			for trial := 0; trial < 300; trial++ {
				m, tr, ok := coveredMargin(g, b, sampleIn(rng, lo, hi), K, z)
				if !ok {
					continue
				}
				if excluded(g, tr.val, cuts, r) {
					continue
				}
				kept++
				if m > with[r] {
					t.Fatalf("seed %d token %d: sampled margin %v outside every cut, above the bound with cuts %v (without: %v)", seed, z, m, with[r], without[r])
				}
			}
			if cp, _ := optimiseCopies(g, dom, L, toks, nil, cuts, r, short); cp != batched[r] {
				t.Fatalf("seed %d row %d: batched bound with cuts %v, in a batch of its copies %v", seed, r, batched[r], cp)
			}
			// The row alone, its slopes and its own cuts (renumbered)
			// with their multipliers.
			one := rowOf(rx, r)
			var mine []rowCut
			var muMine []float64
			for j, ct := range cuts {
				if ct.row == r {
					ct.row = 0
					mine, muMine = append(mine, ct), append(muMine, mu[j])
				}
			}
			one.cuts = g.newCutTerms(mine, 1)
			one.cuts.set(mine, muMine)
			cr, kr := g.head.marginRows(toks[r:r+1], 1)
			if alone, pad := paddedRows(g, dom[r:r+1], L, cr, kr, one); !withinRounding(fixed[r], alone[0], fixedPad[r], pad[0]) {
				t.Fatalf("seed %d row %d: batched bound with cuts %v, alone %v (allowances %v, %v)", seed, r, fixed[r], alone[0], fixedPad[r], pad[0])
			}
		}
	})
	t.Logf("%d samples outside the cuts under their bounds; %d rows tighter with random cuts", kept, tighter)
	if kept < 500 || tighter == 0 {
		t.Fatalf("%d samples checked, %d rows tighter with cuts: the cuts are not exercised", kept, tighter)
	}
}

// TestCutMultipliersExact: on one hidden ReLU layer over a 2-D box, where
// the relaxation with a cut is the linear program's and a dense grid gives
// the maximum, the optimised bound with random cuts is never below the
// grid's maximum over the points the cuts leave in, and a cut that
// removes the side of a neuron the maximiser lies on brings the bound
// below the maximum over the whole box in most problems (it would never,
// were the cut terms dropped, and would fall below the kept maximum, were
// they wrong).
func TestCutMultipliersExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 2))
	const H, grid = 4, 120
	problems, bit := 0, 0
	for trial := 0; trial < 60; trial++ {
		w1, b1 := make([]float64, 2*H), make([]float64, H)
		w2 := make([]float64, H)
		for i := range w1 {
			w1[i] = rng.NormFloat64()
		}
		for i := range b1 {
			b1[i] = 0.5 * rng.NormFloat64()
		}
		for i := range w2 {
			w2[i] = rng.NormFloat64()
		}
		g := &graph{pool: pool{}}
		in := g.add("in", nil, 2, -1)
		d1 := newDense(w1, b1, 2, H)
		pre := g.add("fc", d1, H, -1, in)
		act := g.add("relu", relu{}, H, -1, pre)
		box := []Interval{{-1, 1}, {-1, 1}}
		preIv := d1.interval([][]Interval{box}, nil)
		b := &Bounds{Input: box, Val: [][]Interval{box, preIv, relu{}.interval([][]Interval{preIv}, nil)}}
		var unstable []int
		for i, iv := range preIv {
			if iv.Lo < 0 && iv.Hi > 0 {
				unstable = append(unstable, i)
			}
		}
		if len(unstable) < 2 {
			continue
		}
		c := &block{rows: 1, cols: H, v: w2}
		// The grid: each point's pre-activations and objective.
		type point struct {
			z []float64
			m float64
		}
		var pts []point
		best := -1
		for a := 0; a <= grid; a++ {
			for bb := 0; bb <= grid; bb++ {
				x := []float64{-1 + 2*float64(a)/grid, -1 + 2*float64(bb)/grid}
				z := d1.eval([][]float64{x}, 0)
				m := 0.0
				for i, zi := range z {
					m += w2[i] * max(zi, 0)
				}
				pts = append(pts, point{z, m})
				if best < 0 || m > pts[best].m {
					best = len(pts) - 1
				}
			}
		}
		holds := func(l cutLit, z []float64) bool { return l.up && z[l.index] >= 0 || !l.up && z[l.index] <= 0 }
		opt := alphaOptions{iters: 200, lr: 0.1, betaLR: 0.2}
		// Random cuts: sound over the points they leave in.
		for rep := 0; rep < 3; rep++ {
			var lits []cutLit
			down := 0
			for _, i := range unstable {
				if rng.IntN(2) == 0 {
					l := cutLit{act, i, rng.IntN(2) == 0}
					lits = append(lits, l)
					if !l.up {
						down++
					}
				}
			}
			if len(lits) == 0 {
				continue
			}
			cuts := []rowCut{{lits: lits, k: float64(down - len(lits) + 1)}}
			ub, _, _, _ := g.optimise([]*Bounds{b}, act, c, []float64{0}, nil, cuts, nil, opt)
			for _, p := range pts {
				all := true
				for _, l := range lits {
					all = all && holds(l, p.z)
				}
				if !all && p.m > ub[0]+1e-9 {
					t.Fatalf("trial %d cut %+v: a point the cut keeps has %v, above the bound %v", trial, lits, p.m, ub[0])
				}
			}
		}
		// One literal against the maximiser's side.
		problems++
		for _, i := range unstable {
			l := cutLit{act, i, pts[best].z[i] >= 0}
			ct := rowCut{lits: []cutLit{l}}
			if !l.up {
				ct.k = 1
			}
			ub, _, _, _ := g.optimise([]*Bounds{b}, act, c, []float64{0}, nil, []rowCut{ct}, nil, opt)
			kept := math.Inf(-1)
			for _, p := range pts {
				if !holds(l, p.z) {
					kept = max(kept, p.m)
				}
			}
			if ub[0] < kept-1e-9 {
				t.Fatalf("trial %d: one-literal cut %+v bound %v below the kept maximum %v", trial, l, ub[0], kept)
			}
			if ub[0] < pts[best].m-1e-6 {
				bit++
				break
			}
		}
	}
	t.Logf("%d problems; in %d a cut against the maximiser's side bounds below the box's maximum", problems, bit)
	if problems < 20 || 2*bit < problems {
		t.Fatalf("%d problems, the cuts bit in %d", problems, bit)
	}
}
