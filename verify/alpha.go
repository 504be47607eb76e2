package verify

import "math"

// α-CROWN (Xu et al., "Fast and Complete", ICLR 2021): CROWN's bound on an
// objective holds for every lower-relaxation slope α ∈ [0, 1] of every
// unstable ReLU, so the slopes can be optimised for that objective by
// projected gradient descent on the bound. Each iterate is itself a sound
// bound; the best is kept. lenspec optimises the slopes for the margins
// o_t[z] − o_t[eos] that CROWN leaves at or above 0, the bounds that decide
// whether eos provably wins and which tokens a counterexample can emit.

// backRecord is what one back-substitution chose, per node: the
// coefficients on the node's output before the activation's relaxation,
// the relaxation (a ≈ slope·z + shift), and the fed-back token that
// attained the maximum (−1: none).
type backRecord struct {
	coef, slope, shift [][]float64
	token              []int
}

func newBackRecord(n int) *backRecord {
	r := &backRecord{coef: make([][]float64, n), slope: make([][]float64, n), shift: make([][]float64, n), token: make([]int, n)}
	for i := range r.token {
		r.token[i] = -1
	}
	return r
}

// relaxation holds the free parameters of a back-substitution: alpha, the
// lower slopes of unstable ReLUs per node and neuron (nil rows: CROWN's
// choice), and beta, β-CROWN's multipliers of split constraints, signed
// (+β for z ≥ 0, −β for z ≤ 0; nil rows: none).
type relaxation struct {
	alpha, beta [][]float64
	// unpadded skips the rounding allowance: the optimiser's iterates,
	// whose best is then bounded again with it.
	unpadded bool
}

// alphaOptions are the optimiser's settings: Adam on the slopes (lr) and
// on the split multipliers (betaLR).
type alphaOptions struct {
	iters      int
	lr, betaLR float64
}

var defaultAlpha = alphaOptions{iters: 20, lr: 0.2, betaLR: 0.1}

// babAlpha optimises the slopes and split multipliers of branch-and-bound
// domains.
var babAlpha = alphaOptions{iters: 60, lr: 0.2, betaLR: 0.5}

// babChildAlpha is the shorter search of a child domain, warm-started
// from its parent's.
var babChildAlpha = alphaOptions{iters: 5, lr: 0.2, betaLR: 0.5}

// alphaUpper returns an upper bound of r·a_L + r.B over the input box, at
// least as tight as CROWN's: the best over the slopes tried, starting from
// CROWN's own.
func (g *graph) alphaUpper(b *Bounds, L int, r Row, opt alphaOptions) float64 {
	ub, _, _ := g.optimisedUpper(b, L, r, nil, nil, opt)
	return ub
}

// optimisedUpper is alphaUpper over a branch-and-bound domain: with
// splits, their multipliers β ≥ 0 are optimised with the slopes (β-CROWN,
// Wang et al., NeurIPS 2021), which carries the split constraints back to
// the input, where cutting the split neurons' bounds alone does not. Every
// iterate is a sound bound on the domain; the best is returned with the
// box vertex that attains it and the parameters that gave it. init, if
// set, starts the slopes and multipliers where a parent domain's search
// ended (a warm start: a child needs fewer iterations).
func (g *graph) optimisedUpper(b *Bounds, L int, r Row, splits splitSet, init *relaxation, opt alphaOptions) (float64, []float64, *relaxation) {
	rx := &relaxation{alpha: make([][]float64, L+1), beta: make([][]float64, L+1), unpadded: true}
	sign := make([][]float64, L+1)
	for l := 0; l <= L; l++ {
		rx.alpha[l] = make([]float64, len(b.Pre[l]))
		for i, iv := range b.Pre[l] {
			rx.alpha[l][i] = g.nodes[l].act.slope(iv)
		}
	}
	for nu, active := range splits {
		if nu.node > L {
			continue
		}
		if sign[nu.node] == nil {
			sign[nu.node] = make([]float64, len(b.Pre[nu.node]))
			rx.beta[nu.node] = make([]float64, len(b.Pre[nu.node]))
		}
		sign[nu.node][nu.index] = -1
		if active {
			sign[nu.node][nu.index] = 1
		}
	}
	beta := zerosLike(rx.beta) // β ≥ 0; rx.beta = sign·β
	if init != nil {
		for l := 0; l <= L && l < len(init.alpha); l++ {
			for i, a := range init.alpha[l] {
				if g.nodes[l].act.unstable(b.Pre[l][i]) {
					rx.alpha[l][i] = a
				}
			}
		}
		for l, sg := range sign {
			if sg == nil || l >= len(init.beta) || init.beta[l] == nil {
				continue
			}
			for i, s := range sg {
				if s != 0 {
					beta[l][i] = math.Abs(init.beta[l][i])
					rx.beta[l][i] = s * beta[l][i]
				}
			}
		}
	}
	m, v := zerosLike(rx.alpha), zerosLike(rx.alpha)
	mb, vb := zerosLike(beta), zerosLike(beta)
	best, bestX := math.Inf(1), []float64(nil)
	var bestRx *relaxation
	const beta1, beta2 = 0.9, 0.999
	adam := func(p, g, m, v []float64, lr, hi float64, it int) {
		bc1, bc2 := 1-math.Pow(beta1, float64(it)), 1-math.Pow(beta2, float64(it))
		for i, gi := range g {
			if gi == 0 {
				continue
			}
			m[i] = beta1*m[i] + (1-beta1)*gi
			v[i] = beta2*v[i] + (1-beta2)*gi*gi
			p[i] -= lr * (m[i] / bc1) / (math.Sqrt(v[i]/bc2) + 1e-12)
			p[i] = min(max(p[i], 0), hi)
		}
	}
	for it := 1; it <= opt.iters; it++ {
		rec := newBackRecord(L + 1)
		xc, k, abs, absc := g.back(b, L, r.dense(g.width(b, L)), r.B, rx, rec)
		xs := make([]float64, len(xc))
		if ub := concretize(b, xc, k, abs, absc, xs); ub < best {
			best = ub
			bestRx = &relaxation{alpha: cloneRows(rx.alpha), beta: cloneRows(rx.beta)}
		}
		if it == opt.iters {
			break
		}
		ga, zeta := g.alphaGrad(b, L, xs, rx.alpha, rec, sign)
		for l := range rx.alpha {
			adam(rx.alpha[l], ga[l], m[l], v[l], opt.lr, 1, it)
		}
		for l, sg := range sign {
			if sg == nil {
				continue
			}
			// ∂bound/∂β = sign·ζ: the split neuron's pre-activation in the
			// relaxed network at the maximising vertex.
			gb := make([]float64, len(sg))
			for i, s := range sg {
				gb[i] = s * zeta[l][i]
			}
			adam(beta[l], gb, mb[l], vb[l], opt.betaLR, math.Inf(1), it)
			for i, s := range sg {
				rx.beta[l][i] = s * beta[l][i]
			}
		}
	}
	// The iterates skipped the rounding allowance: the bound returned is
	// the best parameters' back-substitution with it.
	xc, k, abs, absc := g.back(b, L, r.dense(g.width(b, L)), r.B, bestRx, nil)
	bestX = make([]float64, len(xc))
	return concretize(b, xc, k, abs, absc, bestX), bestX, bestRx
}

func cloneRows(a [][]float64) [][]float64 {
	out := make([][]float64, len(a))
	for i, r := range a {
		if r != nil {
			out[i] = append([]float64(nil), r...)
		}
	}
	return out
}

// alphaGrad is the gradient of the bound in the slopes. The bound is
// linear in the coefficient λ on each node's pre-activations, with slope
// the value ζ of those pre-activations in the relaxed network (every
// activation replaced by the line back-substitution chose) at the maximising
// input xs; a slope α scales λᵢ = cᵢ·α, so ∂bound/∂α = cᵢ·ζᵢ wherever α is
// in use (cᵢ < 0 on an unstable ReLU). It also returns ζ.
// split marks (non-zero) the neurons whose ζ is wanted even when they are
// stably off (β-CROWN's inactive splits); nil for none.
func (g *graph) alphaGrad(b *Bounds, L int, xs []float64, al [][]float64, rec *backRecord, split [][]float64) (grad, zeta [][]float64) {
	grad = zerosLike(al)
	zeta = make([][]float64, L+1)
	in := xs
	for l := 0; l <= L; l++ {
		n := g.nodes[l]
		// A neuron that is stably off outputs 0 under every relaxation, so
		// its pre-activation is needed only as a split's ζ; skipping the
		// others saves most of the pass.
		z := n.aff.evalRows(in, func(j int) bool {
			oi := n.act.interval(b.Pre[l][j])
			return oi.Lo == 0 && oi.Hi == 0 && (split == nil || split[l] == nil || split[l][j] == 0)
		})
		if n.fb != nil {
			tok := rec.token[l]
			if tok < 0 { // nothing above depends on this node's token
				for t, ok := range b.Allowed[n.step-1] {
					if ok {
						tok = t
						break
					}
				}
			}
			if tok >= 0 {
				for j, v := range n.fb.eval(tok) {
					z[j] += v
				}
			}
		}
		zeta[l] = z
		out := make([]float64, len(z))
		for i, zi := range z {
			iv := b.Pre[l][i]
			c := 0.0
			if rec.coef[l] != nil {
				c = rec.coef[l][i]
			}
			switch {
			case c != 0:
				out[i] = rec.slope[l][i]*zi + rec.shift[l][i]
			default: // a subgradient: any line of the relaxation will do
				out[i] = n.act.slope(iv) * zi
			}
			if c < 0 && n.act.unstable(iv) {
				grad[l][i] = c * zi
			}
		}
		in = out
	}
	return grad, zeta
}

func zerosLike(a [][]float64) [][]float64 {
	out := make([][]float64, len(a))
	for i, r := range a {
		out[i] = make([]float64, len(r))
	}
	return out
}
