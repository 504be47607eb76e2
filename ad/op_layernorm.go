package ad

import (
	"fmt"
	"math"
)

// LayerNorm normalises each row of x over its last axis and applies the
// affine map, as PyTorch's nn.LayerNorm over the last dimension:
//
//	y = (x − mean) / √(var + eps) ⊙ weight + bias,
//
// with the biased variance. weight and bias have the last axis's length;
// either may be nil (no scale, no shift). Means and variances are summed
// in float64. The normalised rows and their 1/√(var + eps) are kept for
// the backward pass.
func (tp *Tape[T]) LayerNorm(x, weight, bias *Node[T], eps float64) *Node[T] {
	rows, cols := x.Value.Rows(), x.Value.Cols()
	if (weight != nil && weight.Value.Len() != cols) || (bias != nil && bias.Value.Len() != cols) || !(eps > 0) {
		panic(fmt.Sprintf("ad.LayerNorm: input %v, weight %v, bias %v, eps %v", x.Value.Shape, nodeShape(weight), nodeShape(bias), eps))
	}
	var w, b []T
	inputs := []*Node[T]{x}
	if weight != nil {
		w = weight.Value.Data
		inputs = append(inputs, weight)
	}
	if bias != nil {
		b = bias.Value.Data
		inputs = append(inputs, bias)
	}
	out := tp.alloc(false, x.Value.Shape...)
	xhat := tp.alloc(false, rows, cols).Data
	rstd := make([]float64, rows)
	for r := 0; r < rows; r++ {
		row := x.Value.Data[r*cols : (r+1)*cols]
		var mean float64
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(cols)
		var vr float64
		for _, v := range row {
			d := float64(v) - mean
			vr += d * d
		}
		rstd[r] = 1 / math.Sqrt(vr/float64(cols)+eps)
		xh, y := xhat[r*cols:(r+1)*cols], out.Data[r*cols:(r+1)*cols]
		for j, v := range row {
			xh[j] = T((float64(v) - mean) * rstd[r])
			y[j] = xh[j]
			if w != nil {
				y[j] *= w[j]
			}
			if b != nil {
				y[j] += b[j]
			}
		}
	}
	return tp.op(out, func(o *Node[T]) {
		var dx, dw, db []T
		if x.needsGrad {
			dx = x.grad().Data
		}
		if weight != nil && weight.needsGrad {
			dw = weight.grad().Data
		}
		if bias != nil && bias.needsGrad {
			db = bias.grad().Data
		}
		for r := 0; r < rows; r++ {
			g, xh := o.Grad.Data[r*cols:(r+1)*cols], xhat[r*cols:(r+1)*cols]
			for j, v := range g {
				if dw != nil {
					dw[j] += v * xh[j]
				}
				if db != nil {
					db[j] += v
				}
			}
			if dx == nil {
				continue
			}
			// dx = rstd·(ĝ − mean(ĝ) − x̂·mean(ĝ⊙x̂)) with ĝ = g⊙weight.
			var m1, m2 float64
			for j, v := range g {
				gh := float64(v)
				if w != nil {
					gh *= float64(w[j])
				}
				m1 += gh
				m2 += gh * float64(xh[j])
			}
			m1 /= float64(cols)
			m2 /= float64(cols)
			d := dx[r*cols : (r+1)*cols]
			for j, v := range g {
				gh := float64(v)
				if w != nil {
					gh *= float64(w[j])
				}
				d[j] += T(rstd[r] * (gh - m1 - float64(xh[j])*m2))
			}
		}
	}, inputs...)
}

// nodeShape is n's shape for messages, nil for a nil node.
func nodeShape[T Float](n *Node[T]) []int {
	if n == nil {
		return nil
	}
	return n.Value.Shape
}
