package ad

import "math"

// ReLU returns max(x, 0). Its gradient at exactly 0 is 0.
func (tp *Tape[T]) ReLU(x *Node[T]) *Node[T] {
	out := tp.alloc(false, x.Value.Shape...)
	for i, v := range x.Value.Data {
		out.Data[i] = max(v, 0)
	}
	return tp.op(out, func(o *Node[T]) {
		if !x.needsGrad {
			return
		}
		gx := x.grad().Data
		for i, g := range o.Grad.Data {
			if x.Value.Data[i] > 0 {
				gx[i] += g
			}
		}
	}, x)
}

// Tanh returns tanh(x).
func (tp *Tape[T]) Tanh(x *Node[T]) *Node[T] {
	out := tp.alloc(false, x.Value.Shape...)
	for i, v := range x.Value.Data {
		out.Data[i] = T(math.Tanh(float64(v)))
	}
	return tp.op(out, func(o *Node[T]) {
		if !x.needsGrad {
			return
		}
		gx := x.grad().Data
		for i, g := range o.Grad.Data {
			y := out.Data[i]
			gx[i] += g * (1 - y*y)
		}
	}, x)
}

// Sigmoid returns 1/(1+exp(−x)), computed without overflow for large |x|.
func (tp *Tape[T]) Sigmoid(x *Node[T]) *Node[T] {
	out := tp.alloc(false, x.Value.Shape...)
	for i, v := range x.Value.Data {
		f := float64(v)
		if f >= 0 {
			out.Data[i] = T(1 / (1 + math.Exp(-f)))
		} else {
			e := math.Exp(f)
			out.Data[i] = T(e / (1 + e))
		}
	}
	return tp.op(out, func(o *Node[T]) {
		if !x.needsGrad {
			return
		}
		gx := x.grad().Data
		for i, g := range o.Grad.Data {
			y := out.Data[i]
			gx[i] += g * y * (1 - y)
		}
	}, x)
}

// Abs returns |x|. Its gradient is sign(x), 0 at exactly 0. Interval
// bound propagation needs it: a layer's radius is |W|·r.
func (tp *Tape[T]) Abs(x *Node[T]) *Node[T] {
	out := tp.alloc(false, x.Value.Shape...)
	for i, v := range x.Value.Data {
		if v < 0 {
			v = -v
		}
		out.Data[i] = v
	}
	return tp.op(out, func(o *Node[T]) {
		if !x.needsGrad {
			return
		}
		gx := x.grad().Data
		for i, g := range o.Grad.Data {
			switch v := x.Value.Data[i]; {
			case v > 0:
				gx[i] += g
			case v < 0:
				gx[i] -= g
			}
		}
	}, x)
}
