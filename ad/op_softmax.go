package ad

import (
	"fmt"
	"math"
)

// LogSoftmax returns log(softmax(x)) over the last axis, computed stably.
func (tp *Tape[T]) LogSoftmax(x *Node[T]) *Node[T] {
	cols, rows := x.Value.Cols(), x.Value.Rows()
	out := tp.alloc(false, x.Value.Shape...)
	for r := 0; r < rows; r++ {
		row := x.Value.Data[r*cols : (r+1)*cols]
		lse := logSumExp(row)
		for j, v := range row {
			out.Data[r*cols+j] = T(float64(v) - lse)
		}
	}
	return tp.op(out, func(o *Node[T]) {
		if !x.needsGrad {
			return
		}
		gx := x.grad().Data
		for r := 0; r < rows; r++ {
			g := o.Grad.Data[r*cols : (r+1)*cols]
			var s float64
			for _, v := range g {
				s += float64(v)
			}
			for j, v := range g {
				p := math.Exp(float64(out.Data[r*cols+j]))
				gx[r*cols+j] += v - T(p*s)
			}
		}
	}, x)
}

// CrossEntropy returns Σ_r weights[r]·(−log softmax(logits[r])[targets[r]])
// as a scalar. Rows with a negative target (padding) contribute nothing;
// weights may be nil for all ones. Fusing log-softmax with the loss keeps the
// gradient softmax − onehot exact.
func (tp *Tape[T]) CrossEntropy(logits *Node[T], targets []int, weights []T) *Node[T] {
	return tp.SmoothedCrossEntropy(logits, targets, weights, 0)
}

// SmoothedCrossEntropy is CrossEntropy against the label-smoothed target
// (1−eps)·onehot(t) + eps/V (Szegedy et al. 2016): per row
// lse − (1−eps)·x_t − eps·mean(x), gradient softmax − (1−eps)·onehot − eps/V.
// Small translators trained on little data are overconfident; smoothing is
// the standard remedy. eps must lie in [0, 1).
func (tp *Tape[T]) SmoothedCrossEntropy(logits *Node[T], targets []int, weights []T, eps float64) *Node[T] {
	cols, rows := logits.Value.Cols(), logits.Value.Rows()
	if len(targets) != rows || (weights != nil && len(weights) != rows) {
		panic(fmt.Sprintf("ad.CrossEntropy: %d targets, %d weights for %d rows", len(targets), len(weights), rows))
	}
	if !(eps >= 0 && eps < 1) {
		panic(fmt.Sprintf("ad.SmoothedCrossEntropy: smoothing %v outside [0, 1)", eps))
	}
	w := func(r int) float64 {
		if weights == nil {
			return 1
		}
		return float64(weights[r])
	}
	for _, t := range targets {
		if t >= cols {
			panic(fmt.Sprintf("ad.CrossEntropy: target %d for %d classes", t, cols))
		}
	}
	lses := make([]float64, rows)
	logSumExpRows(rows, cols, logits.Value.Data, targets, lses)
	var loss float64
	for r, t := range targets {
		if t < 0 {
			continue
		}
		var mean float64 // only the smoothed loss needs it
		if eps > 0 {
			for _, v := range logits.Value.Data[r*cols : (r+1)*cols] {
				mean += float64(v)
			}
			mean /= float64(cols)
		}
		loss += w(r) * (lses[r] - (1-eps)*float64(logits.Value.Data[r*cols+t]) - eps*mean)
	}
	out := tp.alloc(false)
	out.Data[0] = T(loss)
	targets = append([]int(nil), targets...)
	return tp.op(out, func(o *Node[T]) {
		if !logits.needsGrad {
			return
		}
		g := float64(o.Grad.Data[0])
		scale := make([]float64, rows)
		for r := range scale {
			scale[r] = g * w(r)
		}
		gx := logits.grad().Data
		crossEntropyBackward(rows, cols, logits.Value.Data, targets, lses, scale, gx)
		if eps == 0 {
			return
		}
		// softmax − (1−eps)·onehot − eps/V = (softmax − onehot) + eps·(onehot − 1/V).
		for r, t := range targets {
			if t < 0 {
				continue
			}
			u := T(scale[r] * eps / float64(cols))
			row := gx[r*cols : (r+1)*cols]
			for j := range row {
				row[j] -= u
			}
			row[t] += T(scale[r] * eps)
		}
	}, logits)
}

// logSumExpRowsGo sets lse[r] to log Σ_j e^{x[r][j]} for the rows whose
// target is not negative.
func logSumExpRowsGo[T Float](rows, cols int, x []T, targets []int, lse []float64) {
	for r, t := range targets {
		if t >= 0 {
			lse[r] = logSumExp(x[r*cols : (r+1)*cols])
		}
	}
}

// crossEntropyBackwardGo adds scale[r]·(softmax(x[r]) − onehot(t_r)) to
// gx's rows with a target.
func crossEntropyBackwardGo[T Float](rows, cols int, x []T, targets []int, lse, scale []float64, gx []T) {
	for r, t := range targets {
		if t < 0 {
			continue
		}
		for j := 0; j < cols; j++ {
			p := math.Exp(float64(x[r*cols+j]) - lse[r])
			if j == t {
				p--
			}
			gx[r*cols+j] += T(scale[r] * p)
		}
	}
}

// MaskedSoftmax returns softmax over the last axis restricted to the entries
// whose keep flag is set (keep has one flag per element); the others are 0.
// A row with nothing kept is all zeros. Attention over padded sequences
// needs exactly this.
func (tp *Tape[T]) MaskedSoftmax(x *Node[T], keep []bool) *Node[T] {
	cols, rows := x.Value.Cols(), x.Value.Rows()
	if len(keep) != x.Value.Len() {
		panic(fmt.Sprintf("ad.MaskedSoftmax: %d flags for %v", len(keep), x.Value.Shape))
	}
	out := tp.alloc(true, x.Value.Shape...)
	for r := 0; r < rows; r++ {
		m := math.Inf(-1)
		for j := r * cols; j < (r+1)*cols; j++ {
			if keep[j] {
				m = math.Max(m, float64(x.Value.Data[j]))
			}
		}
		if math.IsInf(m, -1) {
			continue
		}
		var s float64
		for j := r * cols; j < (r+1)*cols; j++ {
			if keep[j] {
				s += math.Exp(float64(x.Value.Data[j]) - m)
			}
		}
		for j := r * cols; j < (r+1)*cols; j++ {
			if keep[j] {
				out.Data[j] = T(math.Exp(float64(x.Value.Data[j])-m) / s)
			}
		}
	}
	return tp.op(out, func(o *Node[T]) {
		if !x.needsGrad {
			return
		}
		gx := x.grad().Data
		for r := 0; r < rows; r++ {
			var dot T
			for j := r * cols; j < (r+1)*cols; j++ {
				dot += out.Data[j] * o.Grad.Data[j]
			}
			for j := r * cols; j < (r+1)*cols; j++ {
				gx[j] += out.Data[j] * (o.Grad.Data[j] - dot)
			}
		}
	}, x)
}

func logSumExp[T Float](row []T) float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, float64(v))
	}
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s)
}
