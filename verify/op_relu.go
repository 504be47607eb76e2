package verify

import (
	"math"

	"github.com/lenspec/lenspec/mip"
)

// relu is max(z, 0), element-wise. Everything the verifier knows about
// it is here: its interval, its linear relaxation with one free parameter
// (the lower slope α ∈ [0, 1]) and the gradient in it, a row loop of the
// same rule, its split point (0) and branching score, and its MIP
// encoding.
type relu struct{}

func (relu) apply(z float64) float64 { return max(z, 0) }

func (r relu) eval(ins [][]float64, _ int) []float64 {
	out := make([]float64, len(ins[0]))
	for i, z := range ins[0] {
		out[i] = r.apply(z)
	}
	return out
}

func (r relu) interval(ins [][]Interval, _ []bool) []Interval {
	out := make([]Interval, len(ins[0]))
	for i, iv := range ins[0] {
		out[i] = r.outInterval(iv)
	}
	return out
}

func (relu) outInterval(iv Interval) Interval {
	return Interval{math.Max(iv.Lo, 0), math.Max(iv.Hi, 0)}
}

func (relu) unstable(iv Interval) bool { return iv.Lo < 0 && iv.Hi > 0 }

// params: the lower slope α.
func (relu) params() int { return 1 }

// initParams is CROWN's adaptive choice: 1 when u ≥ −l, else 0 (the
// tighter of the two lines in area).
func (relu) initParams(iv Interval, p []float64) {
	p[0] = 0
	if iv.Hi >= -iv.Lo {
		p[0] = 1
	}
}

// project keeps α in [0, 1], where a ≥ α·z holds.
func (relu) project(_ Interval, p []float64) { p[0] = min(max(p[0], 0), 1) }

// relax: stably off → 0; stably on → z; otherwise the chord
// a ≤ u/(u−l)·(z − l) for an upper bound (c > 0), and for a lower bound
// (c < 0) a ≥ α·z, sound for every α in [0, 1].
func (relu) relax(c float64, iv Interval, p []float64) (s, d float64) {
	switch {
	case iv.Hi <= 0:
		return 0, 0
	case iv.Lo >= 0:
		return 1, 0
	case c > 0:
		sl := iv.Hi / (iv.Hi - iv.Lo)
		return sl, -c * sl * iv.Lo
	default:
		return min(max(p[0], 0), 1), 0
	}
}

// gradParams: α is the lower line's slope, used for c < 0 on an unstable
// neuron, where c·α·z changes by c·z.
func (r relu) gradParams(c float64, iv Interval, _ []float64, z float64, g []float64) {
	g[0] = 0
	if c < 0 && r.unstable(iv) {
		g[0] = c * z
	}
}

func (relu) splitAt(Interval) float64 { return 0 }

// score is BaBSR's intercept score: |c| times the height of the triangle
// relaxation, −l·u/(u−l), the most a split can remove from the bound.
func (r relu) score(c float64, iv Interval) float64 {
	if !r.unstable(iv) {
		return 0
	}
	return math.Abs(c) * (-iv.Lo * iv.Hi / (iv.Hi - iv.Lo))
}

// relaxRow is relax over a row, written out with no call per neuron
// (branch and bound spends a fifth of its time here); TestReLURowMatchesRule
// holds it to relax.
func (relu) relaxRow(cr, ir []float64, pre []Interval, alr, ar, air, sr, dr []float64, fresh bool) (k, kabs float64) {
	if fresh {
		clearZeros(cr, ir, air)
	}
	for i, ci := range cr {
		if ci == 0 {
			continue
		}
		iv := pre[i]
		var sl, d float64
		switch {
		case iv.Hi <= 0:
		case iv.Lo >= 0:
			sl = 1
		case ci > 0:
			sl = iv.Hi / (iv.Hi - iv.Lo)
			d = -ci * sl * iv.Lo
		case alr != nil:
			sl = min(max(alr[i], 0), 1)
		case iv.Hi >= -iv.Lo:
			sl = 1
		}
		if fresh {
			ir[i] = ci * sl
		} else {
			ir[i] += ci * sl
		}
		k += d
		if ar != nil {
			if fresh {
				air[i] = ar[i] * sl // sl ≥ 0
			} else {
				air[i] += ar[i] * sl
			}
			kabs += math.Abs(d)
		}
		if sr != nil {
			sr[i], dr[i] = sl, d/ci
		}
	}
	return k, kabs
}

// clearZeros sets ir (and air) to 0 where cr is 0: the values a fresh
// block's loop skips.
func clearZeros(cr, ir, air []float64) {
	for i, c := range cr {
		if c == 0 {
			ir[i] = 0
			if air != nil {
				air[i] = 0
			}
		}
	}
}

// encode: a = ReLU(ẑ) with bounds [l, u] is nothing (u ≤ 0), ẑ (l ≥ 0),
// the triangle a ≥ ẑ, a ≤ u/(u−l)·(ẑ − l) when relaxed, or the paper's
// big-M with one binary d: a ≥ ẑ, a ≤ ẑ − l·(1 − d), a ≤ u·d (Eq. 5),
// whose value at a point is whether ẑ > 0.
func (relu) encode(e *encoding, n *node, ins [][]lin) []lin {
	pre := e.b.Val[n.in[0]]
	out := make([]lin, len(ins[0]))
	for j, ex := range ins[0] {
		iv := pre[j]
		name := e.name(n, j)
		switch {
		case iv.Hi <= 0:
			out[j] = lin{}
		case iv.Lo >= 0:
			out[j] = e.materialise(name, ex, iv)
		case -iv.Lo*iv.Hi/(iv.Hi-iv.Lo) < e.relaxGap:
			a := e.m.AddVar(name, 0, iv.Hi, mip.Continuous)
			e.Relaxed++
			sl := iv.Hi / (iv.Hi - iv.Lo)
			e.rowVar(name+"_ge", a, 1, ex, nil, nil, mip.GE, 0)
			e.rowVar(name+"_chord", a, 1, ex.scaled(sl), nil, nil, mip.LE, -sl*iv.Lo)
			out[j] = varExpr(a)
		default:
			a := e.m.AddVar(name, 0, iv.Hi, mip.Continuous)
			d := e.m.AddVar(name+"_on", 0, 1, mip.Binary)
			e.Binaries++
			e.ActBinaries++
			e.rowVar(name+"_ge", a, 1, ex, nil, nil, mip.GE, 0)
			e.rowVar(name+"_le", a, 1, ex, []int{d}, []float64{-iv.Lo}, mip.LE, -iv.Lo)
			e.m.AddRow(name+"_off", []int{a, d}, []float64{1, -iv.Hi}, mip.LE, 0)
			e.indicator(d, neuron{n.id, j}, 0)
			out[j] = varExpr(a)
		}
	}
	return out
}
