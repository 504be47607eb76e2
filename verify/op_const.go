package verify

import "math"

// constant is a fixed vector: a cell's bias where its recurrent term
// reads a zero state. It has no input; every rule is exact.
type constant struct{ v []float64 }

func (c constant) eval(_ [][]float64, _ int) []float64 { return append([]float64(nil), c.v...) }

func (c constant) interval(_ [][]Interval, _ []bool) []Interval {
	out := make([]Interval, len(c.v))
	for i, v := range c.v {
		out[i] = Interval{v, v}
	}
	return out
}

// back moves the rows' coefficients times the vector into their
// constants.
func (c constant) back(s *backState, n *node) {
	co := s.coef[n.id]
	for r := 0; r < co.rows; r++ {
		s.k[r] += dot(co.row(r), c.v)
		if s.padded {
			var abs float64
			for i, a := range s.abs[n.id].row(r) {
				abs += a * math.Abs(c.v[i])
			}
			s.kabs[r] += abs
		}
	}
}

// forward gives every row of the batch (one point without a
// back-substitution) the vector.
func (c constant) forward(s *backState, _ *node, _ []*block) *block {
	rows := 1
	if s != nil {
		rows = len(s.dom)
	}
	out := newBlock(rows, len(c.v))
	for r := 0; r < rows; r++ {
		copy(out.row(r), c.v)
	}
	return out
}

func (c constant) encode(_ *encoding, _ *node, _ [][]lin) []lin {
	out := make([]lin, len(c.v))
	for i, v := range c.v {
		out[i] = lin{c: v}
	}
	return out
}
