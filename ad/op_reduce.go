package ad

import "fmt"

// Sum returns the sum of all elements as a scalar.
func (tp *Tape[T]) Sum(x *Node[T]) *Node[T] {
	var s T
	for _, v := range x.Value.Data {
		s += v
	}
	out := tp.alloc(false)
	out.Data[0] = s
	return tp.op(out, func(o *Node[T]) {
		if !x.needsGrad {
			return
		}
		g := o.Grad.Data[0]
		gx := x.grad().Data
		for i := range gx {
			gx[i] += g
		}
	}, x)
}

// WeightedSum returns Σ w[i]·x[i] as a scalar; w is a constant (a mask, say).
func (tp *Tape[T]) WeightedSum(x *Node[T], w []T) *Node[T] {
	if len(w) != x.Value.Len() {
		panic(fmt.Sprintf("ad.WeightedSum: %d weights for %v", len(w), x.Value.Shape))
	}
	var s T
	for i, v := range x.Value.Data {
		s += w[i] * v
	}
	out := tp.alloc(false)
	out.Data[0] = s
	w = append([]T(nil), w...)
	return tp.op(out, func(o *Node[T]) {
		if !x.needsGrad {
			return
		}
		g := o.Grad.Data[0]
		gx := x.grad().Data
		for i := range gx {
			gx[i] += g * w[i]
		}
	}, x)
}

// MaxLast returns the maximum over the last axis of x, skipping columns whose
// exclude flag is set (exclude may be nil). The gradient goes to the arg max;
// ties go to the lowest index, the same rule as greedy decoding.
func (tp *Tape[T]) MaxLast(x *Node[T], exclude []bool) *Node[T] {
	cols, rows := x.Value.Cols(), x.Value.Rows()
	if exclude != nil && len(exclude) != cols {
		panic(fmt.Sprintf("ad.MaxLast: %d exclude flags for %d columns", len(exclude), cols))
	}
	arg := make([]int, rows)
	out := tp.alloc(false, x.Value.Shape[:len(x.Value.Shape)-1]...)
	for r := 0; r < rows; r++ {
		row := x.Value.Data[r*cols : (r+1)*cols]
		best := -1
		for j, v := range row {
			if exclude != nil && exclude[j] {
				continue
			}
			if best < 0 || v > row[best] {
				best = j
			}
		}
		if best < 0 {
			panic("ad.MaxLast: every column excluded")
		}
		arg[r] = best
		out.Data[r] = row[best]
	}
	return tp.op(out, func(o *Node[T]) {
		if !x.needsGrad {
			return
		}
		gx := x.grad().Data
		for r, j := range arg {
			gx[r*cols+j] += o.Grad.Data[r]
		}
	}, x)
}
