package verify

import "math"

// Row is one neuron of an affine map: Σ W[k]·in[Idx[k]] + B. Rows are
// sparse so that convolutions and dense layers share one operator.
type Row struct {
	Idx []int32
	W   []float64
	B   float64
}

// dense returns the row's weights as a vector of n coefficients.
func (r Row) dense(n int) []float64 {
	c := make([]float64, n)
	for k, idx := range r.Idx {
		c[idx] = r.W[k]
	}
	return c
}

// neg is −r.
func (r Row) neg() Row {
	n := Row{Idx: r.Idx, W: make([]float64, len(r.W)), B: -r.B}
	for k, w := range r.W {
		n.W[k] = -w
	}
	return n
}

// affine is the operator in = A·prev + b: a convolution or a dense layer.
type affine struct {
	in   int // width of the previous node's output
	rows []Row
}

// eval is the float64 forward pass.
func (a *affine) eval(in []float64) []float64 { return a.evalRows(in, nil) }

// evalRows is eval leaving at 0 the rows skip reports (nil: none).
func (a *affine) evalRows(in []float64, skip func(j int) bool) []float64 {
	z := make([]float64, len(a.rows))
	for j, r := range a.rows {
		if skip != nil && skip(j) {
			continue
		}
		s := r.B
		for k, idx := range r.Idx {
			s += r.W[k] * in[idx]
		}
		z[j] = s
	}
	return z
}

// interval is the interval rule: row j's range over box bounds of the input.
func (a *affine) interval(in []Interval, j int) Interval { return affineIBP(a.rows[j], in) }

// affineIBP returns interval bounds of Σ w·x + b over box bounds of x,
// padded for rounding.
func affineIBP(r Row, in []Interval) Interval {
	lo, hi := r.B, r.B
	abs := math.Abs(r.B)
	for k, idx := range r.Idx {
		w, b := r.W[k], in[idx]
		if w >= 0 {
			lo += w * b.Lo
			hi += w * b.Hi
		} else {
			lo += w * b.Hi
			hi += w * b.Lo
		}
		abs += math.Abs(w) * math.Max(math.Abs(b.Lo), math.Abs(b.Hi))
	}
	return pad(lo, hi, abs)
}

// back is the CROWN backward rule, exact for an affine map: c·(A·in + b)
// + k = (Aᵀc)·in + (c·b + k). absc and abs carry the absolute values of
// the terms, from which the rounding allowance is computed (absc nil: none,
// for an optimiser's unpadded iterates).
// The new vectors come from bufs (nil: allocated).
func (a *affine) back(c, absc []float64, k, abs float64, bufs *buffers) (next, nextAbs []float64, k2, abs2 float64) {
	next = bufs.get(a.in)
	if absc == nil { // unpadded: no rounding allowance to carry
		for i, ci := range c {
			if ci == 0 {
				continue
			}
			r := a.rows[i]
			k += ci * r.B
			for q, idx := range r.Idx {
				next[idx] += ci * r.W[q]
			}
		}
		return next, nil, k, abs
	}
	nextAbs = bufs.get(a.in)
	for i, ci := range c {
		if ci == 0 {
			continue
		}
		r := a.rows[i]
		k += ci * r.B
		abs += absc[i] * math.Abs(r.B)
		for q, idx := range r.Idx {
			next[idx] += ci * r.W[q]
			nextAbs[idx] += absc[i] * math.Abs(r.W[q])
		}
	}
	return next, nextAbs, k, abs
}

// expr is the MIP encoding: row j as a linear expression over the
// variables of the previous node's output (−1: a constant 0).
func (a *affine) expr(j int, in []int) lin {
	r := a.rows[j]
	ex := lin{c: r.B}
	for k, idx := range r.Idx {
		ex.add(in[idx], r.W[k])
	}
	return ex
}

// denseRow is a row over all inputs, zeros left out.
func denseRow(w []float64, b float64) Row {
	r := Row{B: b}
	for i, v := range w {
		if v != 0 {
			r.Idx = append(r.Idx, int32(i))
			r.W = append(r.W, v)
		}
	}
	return r
}

// buffers recycles the zeroed vectors of back-substitutions: a bounded
// domain runs thousands of them through the convolutions' wide layers, and
// allocating each one left the garbage collector a third of the time. Not
// safe for concurrent use (a graph bounds one sample at a time).
type buffers struct{ free map[int][][]float64 }

// get returns a zeroed vector of n values.
func (p *buffers) get(n int) []float64 {
	if p == nil {
		return make([]float64, n)
	}
	if l := p.free[n]; len(l) > 0 {
		v := l[len(l)-1]
		p.free[n] = l[:len(l)-1]
		clear(v)
		return v
	}
	return make([]float64, n)
}

// put returns v to the pool: nothing may use it afterwards.
func (p *buffers) put(v []float64) {
	if p == nil || v == nil {
		return
	}
	if p.free == nil {
		p.free = map[int][][]float64{}
	}
	p.free[len(v)] = append(p.free[len(v)], v)
}
