package verify

import "math"

// dense is the affine operator z = W·a + b with W row-major [out × in]: a
// fully connected layer, a recurrent matrix, the logits.
type dense struct {
	in, out int
	w, b    []float64
	absW    []float64 // |W|, for rounding allowances
	absB    []float64
}

func newDense(w, b []float64, in, out int) *dense {
	d := &dense{in: in, out: out, w: append([]float64(nil), w...), b: append([]float64(nil), b...)}
	if d.b == nil {
		d.b = make([]float64, out)
	}
	d.absW, d.absB = absOf(d.w), absOf(d.b)
	return d
}

func (d *dense) eval(ins [][]float64, _ int) []float64 {
	x := ins[0]
	z := make([]float64, d.out)
	for j := range z {
		s := d.b[j]
		for i, w := range d.w[j*d.in : (j+1)*d.in] {
			s += w * x[i]
		}
		z[j] = s
	}
	return z
}

// interval is interval arithmetic, padded for rounding.
func (d *dense) interval(ins [][]Interval, _ []bool) []Interval {
	x := ins[0]
	out := make([]Interval, d.out)
	for j := range out {
		lo, hi, abs := d.b[j], d.b[j], math.Abs(d.b[j])
		for i, w := range d.w[j*d.in : (j+1)*d.in] {
			if w == 0 {
				continue
			}
			if w > 0 {
				lo += w * x[i].Lo
				hi += w * x[i].Hi
			} else {
				lo += w * x[i].Hi
				hi += w * x[i].Lo
			}
			abs += math.Abs(w) * math.Max(math.Abs(x[i].Lo), math.Abs(x[i].Hi))
		}
		out[j] = pad(lo, hi, abs)
	}
	return out
}

// back is exact: c·(W·a + b) = (c·W)·a + c·b, as one matrix product for
// all rows.
func (d *dense) back(s *backState, n *node) {
	c := s.coef[n.id]
	beta := 1.0
	var in *block
	if s.fresh(n.in[0]) { // overwritten: β = 0
		in, beta = s.intoDirty(n.in[0]), 0
	} else {
		in = s.into(n.in[0])
	}
	gemm(false, false, c.rows, d.in, d.out, 1, c.v, d.w, beta, in.v)
	for r := 0; r < c.rows; r++ {
		s.k[r] += dot(c.row(r), d.b)
	}
	if s.padded {
		a := s.abs[n.id]
		var ain *block
		if beta == 0 {
			ain = s.absIntoDirty(n.in[0])
		} else {
			ain = s.absInto(n.in[0])
		}
		gemm(false, false, a.rows, d.in, d.out, 1, a.v, d.absW, beta, ain.v)
		for r := 0; r < a.rows; r++ {
			s.kabs[r] += dot(a.row(r), d.absB)
		}
	}
}

// forward is Z = X·Wᵀ + b for a batch of points.
func (d *dense) forward(_ *backState, _ *node, ins []*block) *block {
	x := ins[0]
	z := newBlock(x.rows, d.out)
	for r := 0; r < x.rows; r++ {
		copy(z.row(r), d.b)
	}
	gemm(false, true, x.rows, d.out, d.in, 1, x.v, d.w, 1, z.v)
	return z
}

// encode: each output is Σ W·in + b over the input's expressions.
func (d *dense) encode(_ *encoding, _ *node, ins [][]lin) []lin {
	out := make([]lin, d.out)
	for j := range out {
		out[j] = affineExpr(d.w[j*d.in:(j+1)*d.in], d.b[j], ins[0])
	}
	return out
}

func dot(a, b []float64) float64 {
	var s float64
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

func (*dense) readsWide() {}
