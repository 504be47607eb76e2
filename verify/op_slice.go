package verify

// slice is x[from:to]: one of an LSTM's or GRU's gates out of the vector
// of all of them. It is exact in every rule.
type slice struct{ from, to int }

func (s slice) eval(ins [][]float64, _ int) []float64 {
	return append([]float64(nil), ins[0][s.from:s.to]...)
}

func (s slice) interval(ins [][]Interval, _ []bool) []Interval {
	return append([]Interval(nil), ins[0][s.from:s.to]...)
}

// back adds the rows' coefficients into the slice's columns of the input.
func (sl slice) back(s *backState, n *node) {
	c := s.coef[n.id]
	in := s.into(n.in[0])
	for r := 0; r < c.rows; r++ {
		dst := in.row(r)[sl.from:sl.to]
		for i, v := range c.row(r) {
			dst[i] += v
		}
	}
	if s.padded {
		a, ain := s.abs[n.id], s.absInto(n.in[0])
		for r := 0; r < a.rows; r++ {
			dst := ain.row(r)[sl.from:sl.to]
			for i, v := range a.row(r) {
				dst[i] += v
			}
		}
	}
}

func (sl slice) forward(_ *backState, _ *node, ins []*block) *block {
	x := ins[0]
	out := newBlock(x.rows, sl.to-sl.from)
	for r := 0; r < x.rows; r++ {
		copy(out.row(r), x.row(r)[sl.from:sl.to])
	}
	return out
}

func (sl slice) encode(_ *encoding, _ *node, ins [][]lin) []lin {
	return append([]lin(nil), ins[0][sl.from:sl.to]...)
}
