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

// alphaOptions are the optimiser's settings: Adam on the slopes.
type alphaOptions struct {
	iters int
	lr    float64
}

var defaultAlpha = alphaOptions{iters: 20, lr: 0.2}

// alphaUpper returns an upper bound of r·a_L + r.B over the input box, at
// least as tight as CROWN's: the best over the slopes tried, starting from
// CROWN's own.
func (g *graph) alphaUpper(b *Bounds, L int, r Row, opt alphaOptions) float64 {
	al := make([][]float64, L+1)
	for l := 0; l <= L; l++ {
		al[l] = make([]float64, len(b.Pre[l]))
		for i, iv := range b.Pre[l] {
			al[l][i] = g.nodes[l].act.slope(iv)
		}
	}
	m, v := zerosLike(al), zerosLike(al)
	best := math.Inf(1)
	const beta1, beta2 = 0.9, 0.999
	for it := 1; it <= opt.iters; it++ {
		rec := newBackRecord(L + 1)
		xc, k, abs, absc := g.back(b, L, r.dense(g.width(b, L)), r.B, al, rec)
		xs := make([]float64, len(xc))
		best = math.Min(best, concretize(b, xc, k, abs, absc, xs))
		if it == opt.iters {
			break
		}
		grad := g.alphaGrad(b, L, xs, al, rec)
		// Adam, then projection onto [0, 1].
		bc1, bc2 := 1-math.Pow(beta1, float64(it)), 1-math.Pow(beta2, float64(it))
		for l := range al {
			for i, gi := range grad[l] {
				if gi == 0 {
					continue
				}
				m[l][i] = beta1*m[l][i] + (1-beta1)*gi
				v[l][i] = beta2*v[l][i] + (1-beta2)*gi*gi
				al[l][i] -= opt.lr * (m[l][i] / bc1) / (math.Sqrt(v[l][i]/bc2) + 1e-12)
				al[l][i] = min(max(al[l][i], 0), 1)
			}
		}
	}
	return best
}

// alphaGrad is the gradient of the bound in the slopes. The bound is
// linear in the coefficient λ on each node's pre-activations, with slope
// the value ζ of those pre-activations in the relaxed network (every
// activation replaced by the line back-substitution chose) at the maximising
// input xs; a slope α scales λᵢ = cᵢ·α, so ∂bound/∂α = cᵢ·ζᵢ wherever α is
// in use (cᵢ < 0 on an unstable ReLU).
func (g *graph) alphaGrad(b *Bounds, L int, xs []float64, al [][]float64, rec *backRecord) [][]float64 {
	grad := zerosLike(al)
	in := xs
	for l := 0; l <= L; l++ {
		n := g.nodes[l]
		z := n.aff.eval(in)
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
	return grad
}

func zerosLike(a [][]float64) [][]float64 {
	out := make([][]float64, len(a))
	for i, r := range a {
		out[i] = make([]float64, len(r))
	}
	return out
}
