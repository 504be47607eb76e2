package verify

import "math"

// add is the weighted element-wise sum of its inputs, Σ w_k·x_k (w nil:
// every weight 1): the recurrent term and the token feedback of a decoder
// step, a cell's new state, and with weights 1, −1 a difference (a GRU's
// h − n).
type add struct{ w []float64 }

// weight is input k's weight.
func (a add) weight(k int) float64 {
	if a.w == nil {
		return 1
	}
	return a.w[k]
}

func (a add) eval(ins [][]float64, _ int) []float64 {
	out := make([]float64, len(ins[0]))
	for k, x := range ins {
		w := a.weight(k)
		for i, v := range x {
			if k == 0 && w == 1 {
				out[i] = v
			} else {
				out[i] += w * v
			}
		}
	}
	return out
}

// interval adds the weighted bounds, padded for rounding.
func (a add) interval(ins [][]Interval, _ []bool) []Interval {
	out := make([]Interval, len(ins[0]))
	for i := range out {
		var lo, hi, abs float64
		for k, x := range ins {
			w := a.weight(k)
			if w >= 0 {
				lo += w * x[i].Lo
				hi += w * x[i].Hi
			} else {
				lo += w * x[i].Hi
				hi += w * x[i].Lo
			}
			abs += math.Abs(w) * math.Max(math.Abs(x[i].Lo), math.Abs(x[i].Hi))
		}
		out[i] = pad(lo, hi, abs)
	}
	return out
}

// back gives every input the sum's coefficients times its weight.
func (a add) back(s *backState, n *node) {
	c := s.coef[n.id]
	for k, p := range n.in {
		w := a.weight(k)
		addInto(s.into(p), c, w)
		if s.padded {
			addInto(s.absInto(p), s.abs[n.id], math.Abs(w))
		}
	}
}

// addInto adds w·src to dst.
func addInto(dst, src *block, w float64) {
	if w == 1 {
		for i, v := range src.v {
			dst.v[i] += v
		}
		return
	}
	for i, v := range src.v {
		dst.v[i] += w * v
	}
}

func (a add) forward(_ *backState, _ *node, ins []*block) *block {
	out := newBlock(ins[0].rows, ins[0].cols)
	for k, x := range ins {
		addInto(out, x, a.weight(k))
	}
	return out
}

func (a add) encode(_ *encoding, _ *node, ins [][]lin) []lin {
	out := make([]lin, len(ins[0]))
	for j := range out {
		for k, x := range ins {
			out[j].addExpr(x[j], a.weight(k))
		}
	}
	return out
}
