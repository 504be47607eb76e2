package verify

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// PathMargins are sound upper bounds, over a box, of the margins of a
// decoding path held fixed: the robustness question verification papers
// and their libraries ask (does any input of the box make some token beat
// the clean one at some step?), as opposed to Verify's question about the
// output's length. The verifier peer benchmark (bench.VerifyPeer) asks
// both lenspec and auto_LiRPA this question on the same unrolled graph.
type PathMargins struct {
	// Upper[t][z] bounds o_t[z] − o_t[path[t]] from above over the box (0
	// at z = path[t]).
	Upper  [][]float64
	Method BoundMethod
	// NumUnstable counts the activations the bounds leave unstable.
	NumUnstable int
}

// BoundPath bounds from above, over the box [lo, hi], the margins
// o_t[z] − o_t[path[t]] of every step t < len(path) and token z ≠ path[t]
// of net's decoding with path[t] fed back to step t + 1 (the tokens held
// fixed, as a clean decoding emits them). Intermediate bounds are
// intervals, tightened by CROWN for every unstable neuron (BoundCROWN,
// BoundAlphaCROWN); the margins are bounded by intervals, CROWN
// (BoundCROWN) or CROWN with their relaxation slopes optimised by iters
// iterations of α-CROWN's search (BoundAlphaCROWN), the least bound kept.
func BoundPath(ctx context.Context, net *Net, lo, hi []float64, path []int, method BoundMethod, iters int) (*PathMargins, error) {
	if len(lo) != net.InputSize || len(hi) != net.InputSize {
		return nil, fmt.Errorf("verify: a box of %d and %d values for an input of %d", len(lo), len(hi), net.InputSize)
	}
	for i := range lo {
		if !(lo[i] <= hi[i]) {
			return nil, fmt.Errorf("verify: box coordinate %d is [%g, %g]: empty", i, lo[i], hi[i])
		}
	}
	if len(path) == 0 {
		return nil, fmt.Errorf("verify: an empty path has no margins")
	}
	for t, z := range path {
		if z < 0 || z >= net.Vocab {
			return nil, fmt.Errorf("verify: path token %d at step %d is outside the vocabulary of %d", z, t, net.Vocab)
		}
	}
	switch {
	case method == BoundAlphaCROWN && iters < 1:
		return nil, fmt.Errorf("verify: α-CROWN with %d iterations", iters)
	case method != BoundInterval && method != BoundCROWN && method != BoundAlphaCROWN:
		return nil, fmt.Errorf("verify: bound method %q: want %s, %s or %s", method, BoundInterval, BoundCROWN, BoundAlphaCROWN)
	}
	if _, err := net.stepTemplate(max(len(path)-1, 1)); err != nil {
		return nil, err
	}
	g := newGraph(net, len(path)-1)
	b := &Bounds{Method: string(method), Val: make([][]Interval, len(g.nodes)), Input: make([]Interval, len(lo))}
	for i := range lo {
		b.Input[i] = Interval{lo[i], hi[i]}
	}
	b.Val[0] = b.Input
	pm := &PathMargins{Method: method}
	actOf := g.actOf()
	for id := 1; id < len(g.nodes); id++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := g.nodes[id]
		ins, allowed := b.inputsOf(n)
		val := n.op.interval(ins, allowed)
		if a := actOf[id]; a >= 0 {
			if method != BoundInterval && !onlyInput(n) {
				g.tightenPre(ctx, b, id, val, method)
			}
			for _, iv := range val {
				if g.nodes[a].act.unstable(iv) {
					pm.NumUnstable++
				}
			}
		}
		b.Val[id] = val
		if n.step >= 0 && g.hidden[n.step] == id {
			t := n.step
			pm.Upper = append(pm.Upper, g.pathMargins(b, t, path[t], method, iters))
			// The next step is fed the path's token alone.
			al := make([]bool, net.Vocab)
			al[path[t]] = true
			b.Allowed = append(b.Allowed, al)
		}
	}
	return pm, ctx.Err()
}

// inputsOf are the bounds of n's inputs in b and, for a token-feedback
// node, the tokens b allows at the step it reads.
func (b *Bounds) inputsOf(n *node) (ins [][]Interval, allowed []bool) {
	ins = make([][]Interval, len(n.in))
	for k, p := range n.in {
		ins[k] = b.Val[p]
	}
	if n.token >= 0 {
		allowed = b.Allowed[n.token]
	}
	return ins, allowed
}

// pathMargins bounds step t's margins o_t[z] − o_t[y] from above, from its
// hidden node's bounds in b.
func (g *graph) pathMargins(b *Bounds, t, y int, method BoundMethod, iters int) []float64 {
	hd, h := g.head, g.hidden[t]
	w := slices.Clone(hd.logit.w)
	k := slices.Clone(hd.logit.b)
	for z := range k {
		for j := range hd.hidden {
			w[z*hd.hidden+j] -= hd.logit.w[y*hd.hidden+j]
		}
		k[z] -= hd.logit.b[y]
	}
	upper := make([]float64, hd.vocab)
	for z, iv := range newDense(w, k, hd.hidden, hd.vocab).interval([][]Interval{b.Val[h]}, nil) {
		upper[z] = iv.Hi
	}
	upper[y] = 0
	if method == BoundInterval {
		return upper
	}
	var toks []int
	for z := range upper {
		if z != y {
			toks = append(toks, z)
		}
	}
	c := newBlock(len(toks), hd.hidden)
	kc := make([]float64, len(toks))
	for r, z := range toks {
		copy(c.row(r), w[z*hd.hidden:(z+1)*hd.hidden])
		kc[r] = k[z]
	}
	dom := sameDomain(b, c.rows)
	var ub []float64
	if method == BoundAlphaCROWN {
		// The search starts from CROWN's slopes and keeps the best
		// iterate: never above CROWN's bound.
		opt := defaultAlpha
		opt.iters = iters
		ub, _, _, _ = g.optimise(dom, h, c, kc, nil, nil, nil, opt)
	}
	if ub == nil {
		ub = g.crownUpper(dom, h, c, kc)
	}
	for r, z := range toks {
		upper[z] = math.Min(upper[z], ub[r])
	}
	return upper
}
