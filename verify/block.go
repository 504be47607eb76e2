package verify

import "github.com/lenspec/lenspec/ad"

// block is a dense row-major matrix: rows are the objectives a batched
// back-substitution carries (or the points a batched forward pass
// evaluates), columns a node's values. Bounding many domains and
// objectives at once turns the rules of linear operators into matrix
// products (ad.Gemm: OpenBLAS), which is where branch and bound spends its
// time.
type block struct {
	rows, cols int
	v          []float64
}

func newBlock(rows, cols int) *block {
	return &block{rows: rows, cols: cols, v: make([]float64, rows*cols)}
}

// row returns row r's values.
func (b *block) row(r int) []float64 { return b.v[r*b.cols : (r+1)*b.cols] }

// clone returns a copy of b (nil stays nil).
func (b *block) clone() *block {
	if b == nil {
		return nil
	}
	return &block{rows: b.rows, cols: b.cols, v: append([]float64(nil), b.v...)}
}

// gemm accumulates alpha·op(a)·op(b) into c (beta: what c is scaled by
// first) for row-major operands: op(a) is m×k, op(b) k×n, c m×n.
func gemm(transA, transB bool, m, n, k int, alpha float64, a, b []float64, beta float64, c []float64) {
	ad.Gemm(transA, transB, m, n, k, alpha, a, b, beta, c)
}

// absOf returns the absolute values of v: the weights the rounding
// allowance of a back-substitution is propagated through.
func absOf(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		if x < 0 {
			x = -x
		}
		out[i] = x
	}
	return out
}

// pool recycles large blocks by size. A batched back-substitution
// creates a coefficient block per node it passes and an optimiser
// iteration a record of each; fresh large allocations are zeroed page by
// page, which took branch and bound a tenth of its time. Not safe for
// concurrent use: a graph bounds one sample at a time.
type pool map[int][][]float64

// poolMin is the smallest block worth recycling; poolMax how many of one
// size are kept.
const poolMin, poolMax = 4096, 64

// get returns a zeroed block.
func (p pool) get(rows, cols int) *block {
	n := rows * cols
	if l := p[n]; len(l) > 0 {
		v := l[len(l)-1]
		p[n] = l[:len(l)-1]
		clear(v)
		return &block{rows: rows, cols: cols, v: v}
	}
	return newBlock(rows, cols)
}

// dirty returns a block whose values are whatever they were: for a
// caller that writes every value it will read.
func (p pool) dirty(rows, cols int) *block {
	n := rows * cols
	if l := p[n]; len(l) > 0 {
		v := l[len(l)-1]
		p[n] = l[:len(l)-1]
		return &block{rows: rows, cols: cols, v: v}
	}
	return newBlock(rows, cols)
}

// put recycles b's values: nothing may use b afterwards.
func (p pool) put(bs ...*block) {
	for _, b := range bs {
		if b == nil || len(b.v) < poolMin || len(p[len(b.v)]) >= poolMax {
			continue
		}
		p[len(b.v)] = append(p[len(b.v)], b.v)
	}
}
