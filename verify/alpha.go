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
// on the split multipliers (betaLR); stop (nil: never), asked before each
// iteration after the first, abandons the search: a batch of branch and
// bound's 300-iteration searches must not carry a sample past its time
// limit.
type alphaOptions struct {
	iters      int
	lr, betaLR float64
	stop       func() bool
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

// defaultRelaxation returns CROWN's parameters for the rows on their
// domains, for every activation node up to start, and no β.
func (g *graph) defaultRelaxation(dom []*Bounds, start int) *relaxation {
	rx := newRelaxation(len(g.nodes))
	for _, n := range g.nodes[:start+1] {
		if n.act == nil {
			continue
		}
		np := n.act.params()
		a := newBlock(len(dom), n.width*np)
		for r, b := range dom {
			ar := a.row(r)
			if r > 0 && dom[r-1].Val[n.in[0]] != nil && &dom[r-1].Val[n.in[0]][0] == &b.Val[n.in[0]][0] {
				copy(ar, a.row(r-1)) // the same bounds as the row before
				continue
			}
			for i, iv := range b.Val[n.in[0]] {
				n.act.initParams(iv, ar[i*np:(i+1)*np])
			}
		}
		rx.alpha[n.id] = a
	}
	return rx
}

// betaSides are the split constraints of a batch of rows on one node's
// pre-activations: lo[i], hi[i] the cut of entry i (row-major, rows ×
// width; ±Inf where a side is not cut), and whether any cut lies off 0
// (a constant term, betaK).
type betaSides struct {
	lo, hi  []float64
	offZero bool
}

// optimise bounds the rows c·a_start + k from above, row r over its
// domain dom[r] whose splits are splits[r] (nil: none), by projected Adam on
// the rows' relaxation parameters and split multipliers, starting from
// init (nil: CROWN's parameters, β = 0; its blocks are read, not changed).
// It returns the rows' bounds (padded: sound), the vertices that attain
// them and the parameters that gave them; nothing (ub nil) when opt.stop
// abandoned it.
func (g *graph) optimise(dom []*Bounds, start int, c *block, k []float64, splits []splitSet, cuts []rowCut, init *relaxation, opt alphaOptions) (ub []float64, xs *block, best *relaxation, final *backState) {
	R := len(dom)
	rx := g.defaultRelaxation(dom, start)
	if init != nil {
		for id, a := range init.alpha {
			if a == nil || rx.alpha[id] == nil {
				continue
			}
			p := g.nodes[id].in[0]
			act := g.nodes[id].act
			np := act.params()
			for r := 0; r < R; r++ {
				for i, iv := range dom[r].Val[p] {
					if act.unstable(iv) {
						j := r*a.cols + i*np
						copy(rx.alpha[id].v[j:j+np], a.v[j:j+np])
					}
				}
			}
		}
	}
	// β ≥ 0 per side of each split: z ≥ lo with βlo, z ≤ hi with βhi.
	sides := make([]*betaSides, len(g.nodes))
	for r, s := range splits {
		for nu, ct := range s {
			if nu.node > start {
				continue
			}
			w := g.nodes[nu.node].width
			sd := sides[nu.node]
			if sd == nil {
				sd = &betaSides{lo: make([]float64, R*w), hi: make([]float64, R*w)}
				for i := range sd.lo {
					sd.lo[i], sd.hi[i] = math.Inf(-1), math.Inf(1)
				}
				sides[nu.node] = sd
				rx.betaLo[nu.node], rx.betaHi[nu.node], rx.beta[nu.node] = newBlock(R, w), newBlock(R, w), newBlock(R, w)
			}
			i := r*w + nu.index
			sd.lo[i], sd.hi[i] = ct.lo, ct.hi
			sd.offZero = sd.offZero || !math.IsInf(ct.lo, -1) && ct.lo != 0 || !math.IsInf(ct.hi, 1) && ct.hi != 0
			if init != nil {
				for _, pair := range [][2]*block{{init.betaLo[nu.node], rx.betaLo[nu.node]}, {init.betaHi[nu.node], rx.betaHi[nu.node]}} {
					if pair[0] != nil {
						pair[1].v[i] = pair[0].v[i]
					}
				}
			}
		}
	}
	for id, sd := range sides {
		if sd != nil {
			rx.setBeta(id, sd)
		}
	}
	// μ ≥ 0 per cut, from 0: the first iterate is the bound without cuts.
	var mu, mM, vM []float64
	if len(cuts) > 0 {
		rx.cuts = g.newCutTerms(cuts, R)
		mu, mM, vM = make([]float64, len(cuts)), make([]float64, len(cuts)), make([]float64, len(cuts))
	}
	best = newRelaxation(len(g.nodes))
	for k, part := range rx.parts() {
		for id, b := range part {
			best.parts()[k][id] = b.clone()
		}
	}
	if rx.cuts != nil {
		best.cuts = rx.cuts.clone()
	}
	mA, vA := zerosLike(rx.alpha), zerosLike(rx.alpha)
	mL, vL, mH, vH := zerosLike(rx.betaLo), zerosLike(rx.betaLo), zerosLike(rx.betaHi), zerosLike(rx.betaHi)
	bestUB := make([]float64, R)
	for r := range bestUB {
		bestUB[r] = math.Inf(1)
	}
	const beta1, beta2 = 0.9, 0.999
	// adam takes a step on the entries with a gradient, each then kept
	// feasible by keep (its entry index).
	adam := func(p, gr, m, v []float64, lr float64, it int, keep func(i int)) {
		bc1, bc2 := 1-math.Pow(beta1, float64(it)), 1-math.Pow(beta2, float64(it))
		for i, gi := range gr {
			if gi == 0 {
				continue
			}
			m[i] = beta1*m[i] + (1-beta1)*gi
			v[i] = beta2*v[i] + (1-beta2)*gi*gi
			p[i] -= lr * (m[i] / bc1) / (math.Sqrt(v[i]/bc2) + 1e-12)
			keep(i)
		}
	}
	inW := g.nodes[0].width
	for it := 1; it <= opt.iters; it++ {
		if it > 1 && opt.stop != nil && opt.stop() {
			return nil, nil, nil, nil
		}
		s := g.newBack(dom, rx, false, true)
		s.run(start, c, k)
		xsIt := newBlock(R, inW)
		vals := s.concretize(xsIt)
		for r, v := range vals {
			if v < bestUB[r] {
				bestUB[r] = v
				for k, part := range rx.parts() {
					copyRow(best.parts()[k], part, r)
				}
				if rx.cuts != nil {
					best.cuts.copyRow(rx.cuts, r)
				}
			}
		}
		if it == opt.iters {
			s.release()
			break
		}
		zeta := g.relaxedForward(s, xsIt, start)
		ga := g.alphaGrad(s, zeta, start)
		var gm []float64
		if len(cuts) > 0 {
			gm = g.cutGrad(s, zeta, cuts)
		}
		s.release()
		for id, a := range rx.alpha {
			if a == nil || ga[id] == nil {
				continue
			}
			act, np, pre := g.nodes[id].act, g.nodes[id].act.params(), g.nodes[id].in[0]
			w := g.nodes[id].width
			adam(a.v, ga[id].v, mA[id].v, vA[id].v, opt.lr, it, func(j int) {
				r, i := j/(w*np), (j%(w*np))/np
				q := r*w*np + i*np
				act.project(dom[r].Val[pre][i], a.v[q:q+np])
			})
		}
		for id, sd := range sides {
			if sd == nil {
				continue
			}
			// ∂bound/∂βlo = ζ − lo and ∂bound/∂βhi = hi − ζ: ζ the split
			// neuron's pre-activation in the relaxed network at the
			// maximising vertex.
			z := zeta[g.nodes[id].in[0]]
			gl, gh := make([]float64, len(sd.lo)), make([]float64, len(sd.hi))
			for i, lo := range sd.lo {
				if !math.IsInf(lo, -1) {
					gl[i] = z.v[i] - lo
				}
				if hi := sd.hi[i]; !math.IsInf(hi, 1) {
					gh[i] = hi - z.v[i]
				}
			}
			bl, bh := rx.betaLo[id].v, rx.betaHi[id].v
			adam(bl, gl, mL[id].v, vL[id].v, opt.betaLR, it, func(i int) { bl[i] = max(bl[i], 0) })
			adam(bh, gh, mH[id].v, vH[id].v, opt.betaLR, it, func(i int) { bh[i] = max(bh[i], 0) })
			rx.setBeta(id, sd)
		}
		if len(cuts) > 0 {
			adam(mu, gm, mM, vM, opt.betaLR, it, func(j int) { mu[j] = max(mu[j], 0) })
			rx.cuts.set(cuts, mu)
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

// setBeta derives node id's β terms, beta = βlo − βhi and, where a cut
// lies off 0, the constants betaK = Σ βhi·hi − βlo·lo per row with the sum
// of their absolute values, from its multipliers.
func (rx *relaxation) setBeta(id int, sd *betaSides) {
	bl, bh, net := rx.betaLo[id], rx.betaHi[id], rx.beta[id]
	for i := range net.v {
		net.v[i] = bl.v[i] - bh.v[i]
	}
	if !sd.offZero {
		return
	}
	if rx.betaK[id] == nil {
		rx.betaK[id] = newBlock(net.rows, 2)
	}
	k := rx.betaK[id]
	for r := 0; r < net.rows; r++ {
		var sum, abs float64
		for i := r * net.cols; i < (r+1)*net.cols; i++ {
			if v := bl.v[i]; v != 0 {
				sum -= v * sd.lo[i]
				abs += math.Abs(v * sd.lo[i])
			}
			if v := bh.v[i]; v != 0 {
				sum += v * sd.hi[i]
				abs += math.Abs(v * sd.hi[i])
			}
		}
		k.v[2*r], k.v[2*r+1] = sum, abs
	}
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
			pi := s.rx.piOf(n.id)
			np := n.act.params()
			def := make([]float64, np)
			for r := 0; r < R; r++ {
				pre := s.dom[r].Val[p]
				zr, or := z.row(r), out.row(r)
				for i, zi := range zr {
					if coef != nil && (coef.v[r*n.width+i] != 0 || pi != nil && pi.v[r*n.width+i] != 0) {
						or[i] = slope.v[r*n.width+i]*zi + shift.v[r*n.width+i]
						continue
					}
					pv := def
					if alpha != nil {
						pv = alpha.v[(r*n.width+i)*np : (r*n.width+i+1)*np]
					} else {
						n.act.initParams(pre[i], def)
					}
					sl, d := n.act.relax(-1, pre[i], pv)
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

// alphaGrad is the gradient of the rows' bounds in their relaxation
// parameters: the bound is linear in the coefficient on each activation's
// output, times the line the parameters choose, evaluated at the
// pre-activation ζ in the relaxed network at the maximising vertex (the
// operator's gradParams).
func (g *graph) alphaGrad(s *backState, zeta []*block, upto int) []*block {
	grad := make([]*block, len(g.nodes))
	for _, n := range g.nodes[:upto+1] {
		coef := s.rec.coef[n.id]
		if n.act == nil || coef == nil || s.rx == nil || s.rx.alpha[n.id] == nil {
			continue
		}
		p := n.in[0]
		np := n.act.params()
		al := s.rx.alpha[n.id]
		pi := s.rx.piOf(n.id)
		gb := g.pool.dirty(coef.rows, coef.cols*np)
		clear(gb.v)
		for r := 0; r < coef.rows; r++ {
			pre := s.dom[r].Val[p]
			for i, c := range coef.row(r) {
				if pi != nil && pi.v[r*coef.cols+i] != 0 {
					// The joint rule's slope moves from sL to sR with α.
					j := r*coef.cols + i
					rc := newReluCut(c, pi.v[j], pre[i], al.v[j])
					gb.v[j] = (rc.sR - rc.sL) * zeta[p].v[j]
					continue
				}
				if c != 0 {
					j := (r*coef.cols + i) * np
					n.act.gradParams(c, pre[i], al.v[j:j+np], zeta[p].v[r*coef.cols+i], gb.v[j:j+np])
				}
			}
		}
		grad[n.id] = gb
	}
	return grad
}
