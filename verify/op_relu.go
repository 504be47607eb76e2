package verify

import (
	"math"

	"github.com/lenspec/lenspec/mip"
)

// activation is the element-wise function after a node's affine map. Each
// implementation keeps its forward pass, interval rule, CROWN relaxation
// and MIP encoding together; ReLU and the identity are the two today
// (sigmoid and tanh would be a third and fourth, with their own
// relaxations and piecewise-linear encodings).
type activation interface {
	eval(z float64) float64
	interval(iv Interval) Interval
	// unstable reports whether the MIP needs a binary for this neuron
	// under pre-activation bounds iv.
	unstable(iv Interval) bool
	// relax is the CROWN backward rule: for a coefficient c on the output
	// a, slope s and constant d with c·a ≤ c·s·z + d for every z in iv.
	// alpha is the slope of the lower relaxation where the function has a
	// free one (an unstable ReLU: any α in [0, 1] bounds it from below);
	// α-CROWN optimises it, CROWN takes slope(iv).
	relax(c float64, iv Interval, alpha float64) (s, d float64)
	// slope is CROWN's choice of the lower relaxation's slope on iv.
	slope(iv Interval) float64
	// encode adds the neuron's output variable for pre-activation ex with
	// bounds iv: its kind, output variable (−1: constant 0) and binary
	// (−1: none). Unstable neurons whose triangle relaxation is within
	// relaxGap of the function everywhere get the relaxation instead.
	encode(e *encoding, name string, ex lin, iv Interval, relaxGap float64) (kind, out, bin int)
}

// relu is max(z, 0).
type relu struct{}

func (relu) eval(z float64) float64        { return max(z, 0) }
func (relu) interval(iv Interval) Interval { return Interval{math.Max(iv.Lo, 0), math.Max(iv.Hi, 0)} }
func (relu) unstable(iv Interval) bool     { return iv.Lo < 0 && iv.Hi > 0 }

// relax: stably off → 0; stably on → z; otherwise the chord
// a ≤ u/(u−l)·(z − l) for an upper bound (c > 0), and for a lower bound
// (c < 0) a ≥ α·z, sound for every α in [0, 1].
func (relu) relax(c float64, iv Interval, alpha float64) (s, d float64) {
	switch {
	case iv.Hi <= 0:
		return 0, 0
	case iv.Lo >= 0:
		return 1, 0
	case c > 0:
		sl := iv.Hi / (iv.Hi - iv.Lo)
		return sl, -c * sl * iv.Lo
	default:
		return min(max(alpha, 0), 1), 0
	}
}

// slope is CROWN's adaptive choice: 1 when u ≥ −l, else 0 (the tighter of
// the two lines in area).
func (relu) slope(iv Interval) float64 {
	if iv.Hi < -iv.Lo {
		return 0
	}
	return 1
}

// encode: a = ReLU(ẑ) with bounds [l, u] is nothing (u ≤ 0), ẑ (l ≥ 0),
// the triangle a ≥ ẑ, a ≤ u/(u−l)·(ẑ − l) when relaxed, or the paper's
// big-M with one binary d: a ≥ ẑ, a ≤ ẑ − l·(1 − d), a ≤ u·d (Eq. 5).
func (relu) encode(e *encoding, name string, ex lin, iv Interval, relaxGap float64) (kind, out, bin int) {
	switch {
	case iv.Hi <= 0:
		return inactive, -1, -1
	case iv.Lo >= 0:
		out = e.m.AddVar(name, iv.Lo, iv.Hi, mip.Continuous)
		e.rowVar(name+"_def", out, 1, ex, nil, nil, mip.EQ, 0)
		return active, out, -1
	case -iv.Lo*iv.Hi/(iv.Hi-iv.Lo) < relaxGap:
		a := e.m.AddVar(name, 0, iv.Hi, mip.Continuous)
		e.Relaxed++
		sl := iv.Hi / (iv.Hi - iv.Lo)
		e.rowVar(name+"_ge", a, 1, ex, nil, nil, mip.GE, 0)
		scaled := lin{idx: ex.idx, c: sl * ex.c}
		for _, c := range ex.coef {
			scaled.coef = append(scaled.coef, sl*c)
		}
		e.rowVar(name+"_chord", a, 1, scaled, nil, nil, mip.LE, -sl*iv.Lo)
		return relaxed, a, -1
	default:
		a := e.m.AddVar(name, 0, iv.Hi, mip.Continuous)
		d := e.m.AddVar(name+"_on", 0, 1, mip.Binary)
		e.Binaries++
		e.ReLUBinaries++
		e.rowVar(name+"_ge", a, 1, ex, nil, nil, mip.GE, 0)
		e.rowVar(name+"_le", a, 1, ex, []int{d}, []float64{-iv.Lo}, mip.LE, -iv.Lo)
		e.m.AddRow(name+"_off", []int{a, d}, []float64{1, -iv.Hi}, mip.LE, 0)
		return unstable, a, d
	}
}
