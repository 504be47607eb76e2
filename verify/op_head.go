package verify

import (
	"fmt"
	"math"

	"github.com/lenspec/lenspec/mip"
)

// head is the greedy-step operator on a decoder step's hidden output h:
// the logits o = W_out·h + b_out, the margins o[z] − o[eos] the property is
// about, and the argmax that picks the token fed back. It is not a node
// of the graph: its margins are the objectives the driver bounds (the
// rows a back-substitution starts from), and it decides from their bounds
// which tokens a counterexample can emit.
type head struct {
	eos, vocab, hidden int
	logit              *dense
	// margin[z] is o[z] − o[eos] as a row over h (margin[eos] is unused).
	margin *dense
}

func newHead(net *Net) *head {
	h := net.width
	hd := &head{eos: net.EOS, vocab: net.Vocab, hidden: h, logit: newDense(net.outW, net.outB, h, net.Vocab)}
	w := make([]float64, net.Vocab*h)
	b := make([]float64, net.Vocab)
	for z := 0; z < net.Vocab; z++ {
		for k := 0; k < h; k++ {
			w[z*h+k] = net.outW[z*h+k] - net.outW[net.EOS*h+k]
		}
		b[z] = net.outB[z] - net.outB[net.EOS]
	}
	hd.margin = newDense(w, b, h, net.Vocab)
	return hd
}

// eval is the float64 forward pass: the logits of h.
func (hd *head) eval(h []float64) []float64 { return hd.logit.eval([][]float64{h}, -1) }

// marginRows returns the objective rows of the given tokens' margins over
// h (sign −1: their negation, whose upper bound is the margin's lower).
func (hd *head) marginRows(tokens []int, sign float64) (*block, []float64) {
	c := newBlock(len(tokens), hd.hidden)
	k := make([]float64, len(tokens))
	for r, z := range tokens {
		for j, w := range hd.margin.w[z*hd.hidden : (z+1)*hd.hidden] {
			c.v[r*hd.hidden+j] = sign * w
		}
		k[r] = sign * hd.margin.b[z]
	}
	return c, k
}

// intervals bounds the logits and margins over the hidden output's box.
func (hd *head) intervals(out []Interval) (logits, margin []Interval) {
	logits = hd.logit.interval([][]Interval{out}, nil)
	margin = hd.margin.interval([][]Interval{out}, nil)
	margin[hd.eos] = Interval{}
	return logits, margin
}

// allowed decides which tokens can continue a counterexample at a step:
// z ≠ eos whose margin can reach 0 and whose logit can be the largest
// non-eos one.
func (hd *head) allowed(logits, margin []Interval) (allowed []bool, any bool) {
	bestLo := math.Inf(-1)
	for z, iv := range logits {
		if z != hd.eos {
			bestLo = math.Max(bestLo, iv.Lo)
		}
	}
	allowed = make([]bool, len(logits))
	for z := range allowed {
		if z != hd.eos && margin[z].Hi >= 0 && logits[z].Hi >= bestLo {
			allowed[z] = true
			any = true
		}
	}
	return allowed, any
}

// loneToken marks, in an encoding's one-hots, the only token allowed at a
// step: a constant, not a variable.
const loneToken = -2

// encode adds step t's logits over the hidden expressions h, the argmax
// one-hot over the allowed tokens and the margin constraint
// m ≤ o_max − o_eos (paper Eq. 6).
func (hd *head) encode(e *encoding, t int, h []lin) {
	b := e.b
	allowed := b.Allowed[t]
	logit := make([]int, hd.vocab)
	for z := range logit {
		logit[z] = -1
		if !allowed[z] && z != hd.eos {
			continue
		}
		iv := b.Logits[t][z]
		name := fmt.Sprintf("o%d_%d", t, z)
		logit[z] = e.m.AddVar(name, iv.Lo, iv.Hi, mip.Continuous)
		e.rowVar(name+"_def", logit[z], 1, affineExpr(hd.logit.w[z*hd.hidden:(z+1)*hd.hidden], hd.logit.b[z], h), nil, nil, mip.EQ, 0)
	}
	e.logit = append(e.logit, logit)
	var toks []int
	for z, ok := range allowed {
		if ok {
			toks = append(toks, z)
		}
	}
	delta := make([]int, hd.vocab)
	for z := range delta {
		delta[z] = -1
	}
	eos := logit[hd.eos]
	if len(toks) == 1 {
		z := toks[0]
		delta[z] = loneToken
		e.omax = append(e.omax, -1)
		// m ≤ o_z − o_eos
		e.m.AddRow(fmt.Sprintf("m_%d", t), []int{e.mvar, logit[z], eos}, []float64{1, -1, 1}, mip.LE, 0)
	} else {
		U, lo := math.Inf(-1), math.Inf(1)
		for _, z := range toks {
			U = math.Max(U, b.Logits[t][z].Hi)
			lo = math.Min(lo, b.Logits[t][z].Lo)
		}
		om := e.m.AddVar(fmt.Sprintf("omax%d", t), lo, U, mip.Continuous)
		e.omax = append(e.omax, om)
		var sumIdx []int
		var sumCoef []float64
		for _, z := range toks {
			d := e.m.AddVar(fmt.Sprintf("y%d_%d", t, z), 0, 1, mip.Binary)
			delta[z] = d
			e.Binaries++
			sumIdx, sumCoef = append(sumIdx, d), append(sumCoef, 1)
			M := U - b.Logits[t][z].Lo
			// omax ≥ o_z;  omax ≤ o_z + M·(1 − δ_z)
			e.m.AddRow(fmt.Sprintf("omax%d_ge_%d", t, z), []int{om, logit[z]}, []float64{1, -1}, mip.GE, 0)
			e.m.AddRow(fmt.Sprintf("omax%d_le_%d", t, z), []int{om, logit[z], d}, []float64{1, -1, M}, mip.LE, M)
		}
		e.m.AddRow(fmt.Sprintf("onehot%d", t), sumIdx, sumCoef, mip.EQ, 1)
		e.m.AddRow(fmt.Sprintf("m_%d", t), []int{e.mvar, om, eos}, []float64{1, -1, 1}, mip.LE, 0)
	}
	e.delta = append(e.delta, delta)
}
