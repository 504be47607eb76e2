package verify

import "math"

// α-CROWN (Xu et al., "Fast and Complete", ICLR 2021): CROWN's bound on an
// objective holds for every lower-relaxation slope α ∈ [0, 1] of every
// unstable ReLU, so the slopes can be optimised for that objective by
// projected gradient descent on the bound; β-CROWN (Wang et al., NeurIPS
// 2021) adds a multiplier β ≥ 0 per split constraint of a branch-and-bound
// domain, which carries the split back to the input. Each iterate is
// itself a sound bound; the best is kept. Rows are optimised together, as
// one batch of back-substitutions, each row with its own parameters.

// alphaOptions are the optimiser's settings: Adam on the slopes (lr) and
// on the split multipliers (betaLR).
type alphaOptions struct {
	iters      int
	lr, betaLR float64
}

var defaultAlpha = alphaOptions{iters: 20, lr: 0.2, betaLR: 0.1}

// babAlpha optimises the slopes and split multipliers of the roots of
// branch and bound.
var babAlpha = alphaOptions{iters: 60, lr: 0.2, betaLR: 0.5}

// babFinalAlpha is the search of a domain with nothing left to split:
// its worst margin's relaxation is exact, and only the split constraints'
// multipliers stand between its bound and the linear program's optimum.
var babFinalAlpha = alphaOptions{iters: 300, lr: 0.2, betaLR: 0.5}

// babChildAlpha is the shorter search of a child domain, warm-started
// from its parent's.
var babChildAlpha = alphaOptions{iters: 5, lr: 0.2, betaLR: 0.5}

// defaultRelaxation returns CROWN's slopes for the rows on their domains,
// for every activation node up to start, and no β.
func (g *graph) defaultRelaxation(dom []*Bounds, start int) *relaxation {
	rx := &relaxation{alpha: make([]*block, len(g.nodes)), beta: make([]*block, len(g.nodes))}
	for _, n := range g.nodes[:start+1] {
		if n.act == nil {
			continue
		}
		a := newBlock(len(dom), n.width)
		_, isReLU := n.act.(relu)
		for r, b := range dom {
			ar := a.row(r)
			if r > 0 && dom[r-1].Val[n.in[0]] != nil && &dom[r-1].Val[n.in[0]][0] == &b.Val[n.in[0]][0] {
				copy(ar, a.row(r-1)) // the same bounds as the row before
				continue
			}
			for i, iv := range b.Val[n.in[0]] {
				if isReLU {
					if iv.Hi >= -iv.Lo {
						ar[i] = 1
					}
				} else {
					ar[i] = n.act.slope(iv)
				}
			}
		}
		rx.alpha[n.id] = a
	}
	return rx
}

// optimise bounds the rows c·a_start + k from above, row r over its
// domain dom[r] whose splits are splits[r] (nil: none), by projected Adam on
// the rows' slopes and split multipliers, starting from init (nil:
// CROWN's slopes, β = 0; its blocks are read, not changed). It returns the
// rows' bounds (padded: sound), the vertices that attain them and the
// parameters that gave them.
func (g *graph) optimise(dom []*Bounds, start int, c *block, k []float64, splits []splitSet, init *relaxation, opt alphaOptions) (ub []float64, xs *block, best *relaxation, final *backState) {
	R := len(dom)
	rx := g.defaultRelaxation(dom, start)
	if init != nil {
		for id, a := range init.alpha {
			if a == nil || rx.alpha[id] == nil {
				continue
			}
			p := g.nodes[id].in[0]
			act := g.nodes[id].act
			for r := 0; r < R; r++ {
				for i, iv := range dom[r].Val[p] {
					if act.unstable(iv) {
						rx.alpha[id].v[r*a.cols+i] = a.v[r*a.cols+i]
					}
				}
			}
		}
	}
	// β ≥ 0 per split, sign[n] its side: rx.beta = sign·β.
	sign := make([]*block, len(g.nodes))
	beta := make([]*block, len(g.nodes))
	for r, s := range splits {
		for nu, active := range s {
			if nu.node > start {
				continue
			}
			if sign[nu.node] == nil {
				w := g.nodes[nu.node].width
				sign[nu.node], beta[nu.node], rx.beta[nu.node] = newBlock(R, w), newBlock(R, w), newBlock(R, w)
			}
			i := r*sign[nu.node].cols + nu.index
			sign[nu.node].v[i] = -1
			if active {
				sign[nu.node].v[i] = 1
			}
			if init != nil && init.beta[nu.node] != nil {
				beta[nu.node].v[i] = math.Abs(init.beta[nu.node].v[i])
			}
			rx.beta[nu.node].v[i] = sign[nu.node].v[i] * beta[nu.node].v[i]
		}
	}
	best = &relaxation{alpha: make([]*block, len(g.nodes)), beta: make([]*block, len(g.nodes))}
	for id := range rx.alpha {
		best.alpha[id], best.beta[id] = rx.alpha[id].clone(), rx.beta[id].clone()
	}
	mA, vA, mB, vB := zerosLike(rx.alpha), zerosLike(rx.alpha), zerosLike(beta), zerosLike(beta)
	bestUB := make([]float64, R)
	for r := range bestUB {
		bestUB[r] = math.Inf(1)
	}
	const beta1, beta2 = 0.9, 0.999
	adam := func(p, gr, m, v []float64, lr, hi float64, it int) {
		bc1, bc2 := 1-math.Pow(beta1, float64(it)), 1-math.Pow(beta2, float64(it))
		for i, gi := range gr {
			if gi == 0 {
				continue
			}
			m[i] = beta1*m[i] + (1-beta1)*gi
			v[i] = beta2*v[i] + (1-beta2)*gi*gi
			p[i] -= lr * (m[i] / bc1) / (math.Sqrt(v[i]/bc2) + 1e-12)
			p[i] = min(max(p[i], 0), hi)
		}
	}
	inW := g.nodes[0].width
	for it := 1; it <= opt.iters; it++ {
		s := g.newBack(dom, rx, false, true)
		s.run(start, c, k)
		xsIt := newBlock(R, inW)
		vals := s.concretize(xsIt)
		for r, v := range vals {
			if v < bestUB[r] {
				bestUB[r] = v
				copyRow(best.alpha, rx.alpha, r)
				copyRow(best.beta, rx.beta, r)
			}
		}
		if it == opt.iters {
			s.release()
			break
		}
		zeta := g.relaxedForward(s, xsIt, start)
		ga := g.alphaGrad(s, zeta, start)
		s.release()
		for id, a := range rx.alpha {
			if a != nil && ga[id] != nil {
				adam(a.v, ga[id].v, mA[id].v, vA[id].v, opt.lr, 1, it)
			}
		}
		for id, sg := range sign {
			if sg == nil {
				continue
			}
			// ∂bound/∂β = sign·ζ: the split neuron's pre-activation in the
			// relaxed network at the maximising vertex.
			z := zeta[g.nodes[id].in[0]]
			gb := make([]float64, len(sg.v))
			for i, sv := range sg.v {
				if sv != 0 {
					gb[i] = sv * z.v[i]
				}
			}
			adam(beta[id].v, gb, mB[id].v, vB[id].v, opt.betaLR, math.Inf(1), it)
			for i, sv := range sg.v {
				rx.beta[id].v[i] = sv * beta[id].v[i]
			}
		}
		g.pool.put(zeta...)
		g.pool.put(ga...)
	}
	// The iterates skipped the rounding allowance: the bounds returned are
	// the best parameters' back-substitution with it.
	final = g.newBack(dom, best, true, true)
	final.run(start, c, k)
	xs = newBlock(R, inW)
	return final.concretize(xs), xs, best, final
}

// copyRow copies row r of every block of src into dst.
func copyRow(dst, src []*block, r int) {
	for id, b := range src {
		if b != nil {
			copy(dst[id].row(r), b.row(r))
		}
	}
}

func zerosLike(bs []*block) []*block {
	out := make([]*block, len(bs))
	for i, b := range bs {
		if b != nil {
			out[i] = newBlock(b.rows, b.cols)
		}
	}
	return out
}

// relaxedForward evaluates, for each row, the relaxed network its
// back-substitution s chose (every activation replaced by the line its
// relaxation took; a neuron the objective does not reach by any line of
// its relaxation, a subgradient) at the row's vertex xs, up to node
// upto. It returns every node's values: the pre-activations ζ whose
// products with the recorded coefficients are the gradients.
func (g *graph) relaxedForward(s *backState, xs *block, upto int) []*block {
	vals := make([]*block, upto+1)
	vals[0] = xs
	R := xs.rows
	for _, n := range g.nodes[1 : upto+1] {
		if n.act != nil {
			p := n.in[0]
			z := vals[p]
			out := g.pool.dirty(R, n.width)
			coef, slope, shift := s.rec.coef[n.id], s.rec.slope[n.id], s.rec.shift[n.id]
			var alpha *block
			if s.rx != nil {
				alpha = s.rx.alpha[n.id]
			}
			for r := 0; r < R; r++ {
				pre := s.dom[r].Val[p]
				zr, or := z.row(r), out.row(r)
				for i, zi := range zr {
					if coef != nil && coef.v[r*n.width+i] != 0 {
						or[i] = slope.v[r*n.width+i]*zi + shift.v[r*n.width+i]
						continue
					}
					al := n.act.slope(pre[i])
					if alpha != nil {
						al = alpha.v[r*n.width+i]
					}
					sl, d := n.act.relax(-1, pre[i], al)
					or[i] = sl*zi - d
				}
			}
			vals[n.id] = out
			continue
		}
		ins := make([]*block, len(n.in))
		for k, p := range n.in {
			ins[k] = vals[p]
		}
		vals[n.id] = n.lin.forward(s, n, ins)
	}
	return vals
}

func firstAllowed(al []bool) int {
	for z, ok := range al {
		if ok {
			return z
		}
	}
	return 0
}

// alphaGrad is the gradient of the rows' bounds in their slopes: the
// bound is linear in the coefficient on each activation's output, which
// the slope scales, with slope the pre-activation ζ in the relaxed network
// at the maximising vertex (the operator's gradAlpha).
func (g *graph) alphaGrad(s *backState, zeta []*block, upto int) []*block {
	grad := make([]*block, len(g.nodes))
	for _, n := range g.nodes[:upto+1] {
		coef := s.rec.coef[n.id]
		if n.act == nil || coef == nil || s.rx == nil || s.rx.alpha[n.id] == nil {
			continue
		}
		p := n.in[0]
		gb := g.pool.dirty(coef.rows, coef.cols)
		al := s.rx.alpha[n.id]
		for r := 0; r < coef.rows; r++ {
			pre := s.dom[r].Val[p]
			for i, c := range coef.row(r) {
				j := r*coef.cols + i
				gb.v[j] = 0
				if c != 0 {
					gb.v[j] = n.act.gradAlpha(c, pre[i], al.v[j], zeta[p].v[j])
				}
			}
		}
		grad[n.id] = gb
	}
	return grad
}
