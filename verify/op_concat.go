package verify

import "slices"

// concat lays its inputs end to end: a state that grows by one vector per
// step (a cache of the tokens emitted so far). Like slice it moves values
// and is exact in every rule.
type concat struct{ widths []int }

func (c concat) eval(ins [][]float64, _ int) []float64 { return slices.Concat(ins...) }

func (c concat) interval(ins [][]Interval, _ []bool) []Interval { return slices.Concat(ins...) }

// back hands each input the coefficients of its columns.
func (c concat) back(s *backState, n *node) {
	c.split(s.coef[n.id], func(k int) *block { return s.into(n.in[k]) })
	if s.padded {
		c.split(s.abs[n.id], func(k int) *block { return s.absInto(n.in[k]) })
	}
}

// split adds src's columns of input k into into(k).
func (c concat) split(src *block, into func(k int) *block) {
	from := 0
	for k, w := range c.widths {
		dst := into(k)
		for r := 0; r < src.rows; r++ {
			d := dst.row(r)
			for i, v := range src.row(r)[from : from+w] {
				d[i] += v
			}
		}
		from += w
	}
}

func (c concat) forward(_ *backState, _ *node, ins []*block) *block {
	width := 0
	for _, w := range c.widths {
		width += w
	}
	out := newBlock(ins[0].rows, width)
	for r := 0; r < out.rows; r++ {
		row := out.row(r)[:0]
		for _, x := range ins {
			row = append(row, x.row(r)...)
		}
	}
	return out
}

func (c concat) encode(_ *encoding, _ *node, ins [][]lin) []lin { return slices.Concat(ins...) }
