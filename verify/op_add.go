package verify

import "math"

// add is the element-wise sum of its inputs (a node with several inputs:
// the recurrent term and the token feedback of a decoder step).
type add struct{}

func (add) eval(ins [][]float64, _ int) []float64 {
	out := append([]float64(nil), ins[0]...)
	for _, x := range ins[1:] {
		for i, v := range x {
			out[i] += v
		}
	}
	return out
}

// interval adds the bounds, padded for rounding.
func (add) interval(ins [][]Interval, _ []bool) []Interval {
	out := make([]Interval, len(ins[0]))
	for i := range out {
		var lo, hi, abs float64
		for _, x := range ins {
			lo += x[i].Lo
			hi += x[i].Hi
			abs += math.Max(math.Abs(x[i].Lo), math.Abs(x[i].Hi))
		}
		out[i] = pad(lo, hi, abs)
	}
	return out
}

// back gives every input the sum's coefficients.
func (add) back(s *backState, n *node) {
	c := s.coef[n.id]
	for _, p := range n.in {
		addInto(s.into(p), c)
		if s.padded {
			addInto(s.absInto(p), s.abs[n.id])
		}
	}
}

func addInto(dst, src *block) {
	for i, v := range src.v {
		dst.v[i] += v
	}
}

func (add) forward(_ *backState, _ *node, ins []*block) *block {
	out := ins[0].clone()
	for _, x := range ins[1:] {
		addInto(out, x)
	}
	return out
}

func (add) encode(_ *encoding, _ *node, ins [][]lin) []lin {
	out := make([]lin, len(ins[0]))
	for j := range out {
		for _, x := range ins {
			out[j].addExpr(x[j], 1)
		}
	}
	return out
}
