package verify

import (
	"fmt"
	"math"

	"github.com/lenspec/lenspec/mip"
)

// head is the greedy-step operator on a decoder node's output h: logits
// o = W_out·h + b_out, the margins o[z] − o[eos] the property is about,
// and the argmax that picks the token fed back.
type head struct {
	eos int
	// logit is o = W_out·h + b_out; margin[z] is o[z] − o[eos] as a row
	// over h (margin[eos] is unused).
	logit  *affine
	margin []Row
}

func newHead(net *Net) *head {
	h := &head{eos: net.EOS, logit: &affine{in: net.Hidden}}
	for z := 0; z < net.Vocab; z++ {
		h.logit.rows = append(h.logit.rows, denseRow(net.Wout[z], net.Bout[z]))
		w := make([]float64, net.Hidden)
		for k := range w {
			w[k] = net.Wout[z][k] - net.Wout[net.EOS][k]
		}
		h.margin = append(h.margin, denseRow(w, net.Bout[z]-net.Bout[net.EOS]))
	}
	return h
}

// eval is the float64 forward pass: the logits of h.
func (hd *head) eval(h []float64) []float64 { return hd.logit.eval(h) }

// bound bounds the logits and margins of the step whose hidden output is
// node L's (out: its interval bounds), margins by CROWN too when asked
// (and by α-CROWN where CROWN leaves one that might still be negative
// open), and decides which tokens can continue a counterexample: z ≠ eos
// whose margin can reach 0 and whose logit can be the largest non-eos one.
// within, if set, are the step's bounds over a domain containing this one
// (a branch-and-bound parent's): they are intersected in, and CROWN then
// bounds only the margins' upper ends, the only ones a domain's allowed
// tokens and branching read. empty reports a bound crossing its other end:
// a domain with no input.
func (hd *head) bound(g *graph, b *Bounds, L int, out []Interval, crown, alpha bool, within *stepBounds) (logits, margin []Interval, allowed []bool, any, empty bool) {
	logits = make([]Interval, len(hd.margin))
	for z := range logits {
		logits[z] = hd.logit.interval(out, z)
		if within != nil {
			logits[z] = intersect(logits[z], within.logits[z])
			empty = empty || logits[z].Lo > logits[z].Hi
		}
	}
	margin = make([]Interval, len(hd.margin))
	for z := range margin {
		if z == hd.eos {
			continue
		}
		margin[z] = affineIBP(hd.margin[z], out)
		switch {
		case within != nil:
			margin[z] = intersect(margin[z], within.margin[z])
			if crown {
				margin[z].Hi = math.Min(margin[z].Hi, g.crownUpper(b, L, hd.margin[z]))
			}
			empty = empty || margin[z].Lo > margin[z].Hi
		case crown:
			margin[z] = intersect(margin[z], g.crownLinear(b, L, hd.margin[z]))
		}
		if alpha && margin[z].Hi >= 0 && margin[z].Lo < 0 {
			margin[z].Hi = math.Min(margin[z].Hi, g.alphaUpper(b, L, hd.margin[z], defaultAlpha))
		}
	}
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
	return logits, margin, allowed, any, empty
}

// stepBounds are one decoder step's logit and margin bounds.
type stepBounds struct{ logits, margin []Interval }

// encode adds step t's logits over the hidden variables h, the argmax
// one-hot over the allowed tokens and the margin constraint
// m ≤ o_max − o_eos (paper Eq. 6).
func (hd *head) encode(e *encoding, t int, h []int) {
	b := e.b
	allowed := b.Allowed[t]
	logit := make([]int, len(hd.margin))
	for z := range logit {
		logit[z] = -1
		if !allowed[z] && z != hd.eos {
			continue
		}
		iv := b.Logits[t][z]
		name := fmt.Sprintf("o%d_%d", t, z)
		logit[z] = e.m.AddVar(name, iv.Lo, iv.Hi, mip.Continuous)
		e.rowVar(name+"_def", logit[z], 1, hd.logit.expr(z, h), nil, nil, mip.EQ, 0)
	}
	e.logit = append(e.logit, logit)
	var toks []int
	for z, ok := range allowed {
		if ok {
			toks = append(toks, z)
		}
	}
	delta := make([]int, len(hd.margin))
	for z := range delta {
		delta[z] = -1
	}
	eos := logit[hd.eos]
	if len(toks) == 1 {
		z := toks[0]
		delta[z] = -2
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
