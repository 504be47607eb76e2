package ad

import (
	"fmt"
	"slices"
)

func mustSame[T Float](name string, a, b *Node[T]) {
	if !slices.Equal(a.Value.Shape, b.Value.Shape) {
		panic(fmt.Sprintf("ad.%s: shapes %v and %v differ", name, a.Value.Shape, b.Value.Shape))
	}
}

// Add returns a + b (same shapes).
func (tp *Tape[T]) Add(a, b *Node[T]) *Node[T] {
	mustSame("Add", a, b)
	out := tp.alloc(false, a.Value.Shape...)
	for i := range out.Data {
		out.Data[i] = a.Value.Data[i] + b.Value.Data[i]
	}
	return tp.op(out, func(o *Node[T]) {
		accumulate(a, o.Grad.Data, 1)
		accumulate(b, o.Grad.Data, 1)
	}, a, b)
}

// AddTo returns sum + x, or x itself when sum is nil: the running sum of
// a loop's terms (losses over steps, bound terms over layers), which
// starts at its first term rather than at a zero node of a shape the loop
// does not know in advance.
func (tp *Tape[T]) AddTo(sum, x *Node[T]) *Node[T] {
	if sum == nil {
		return x
	}
	return tp.Add(sum, x)
}

// Sub returns a − b (same shapes).
func (tp *Tape[T]) Sub(a, b *Node[T]) *Node[T] {
	mustSame("Sub", a, b)
	out := tp.alloc(false, a.Value.Shape...)
	for i := range out.Data {
		out.Data[i] = a.Value.Data[i] - b.Value.Data[i]
	}
	return tp.op(out, func(o *Node[T]) {
		accumulate(a, o.Grad.Data, 1)
		accumulate(b, o.Grad.Data, -1)
	}, a, b)
}

// Mul returns the elementwise product a ⊙ b (same shapes).
func (tp *Tape[T]) Mul(a, b *Node[T]) *Node[T] {
	mustSame("Mul", a, b)
	out := tp.alloc(false, a.Value.Shape...)
	for i := range out.Data {
		out.Data[i] = a.Value.Data[i] * b.Value.Data[i]
	}
	return tp.op(out, func(o *Node[T]) {
		if a.needsGrad {
			ga := a.grad().Data
			for i, g := range o.Grad.Data {
				ga[i] += g * b.Value.Data[i]
			}
		}
		if b.needsGrad {
			gb := b.grad().Data
			for i, g := range o.Grad.Data {
				gb[i] += g * a.Value.Data[i]
			}
		}
	}, a, b)
}

// Scale returns c·a.
func (tp *Tape[T]) Scale(a *Node[T], c T) *Node[T] {
	out := tp.alloc(false, a.Value.Shape...)
	for i, v := range a.Value.Data {
		out.Data[i] = c * v
	}
	return tp.op(out, func(o *Node[T]) { accumulate(a, o.Grad.Data, c) }, a)
}

// AddBias adds bias (length = last dimension of x) to every row of x.
func (tp *Tape[T]) AddBias(x, bias *Node[T]) *Node[T] {
	cols := x.Value.Cols()
	if bias.Value.Len() != cols {
		panic(fmt.Sprintf("ad.AddBias: bias %v for input %v", bias.Value.Shape, x.Value.Shape))
	}
	out := tp.alloc(false, x.Value.Shape...)
	for i, v := range x.Value.Data {
		out.Data[i] = v + bias.Value.Data[i%cols]
	}
	return tp.op(out, func(o *Node[T]) {
		accumulate(x, o.Grad.Data, 1)
		if bias.needsGrad {
			gb := bias.grad().Data
			for i, g := range o.Grad.Data {
				gb[i%cols] += g
			}
		}
	}, x, bias)
}

// ClampMin returns max(a, c) elementwise. At a == c the gradient passes
// through (the subgradient of the identity branch), matching ReLU's choice
// of 0 at 0 only up to a measure-zero set.
func (tp *Tape[T]) ClampMin(a *Node[T], c T) *Node[T] {
	out := tp.alloc(false, a.Value.Shape...)
	for i, v := range a.Value.Data {
		out.Data[i] = max(v, c)
	}
	return tp.op(out, func(o *Node[T]) {
		if !a.needsGrad {
			return
		}
		ga := a.grad().Data
		for i, g := range o.Grad.Data {
			if a.Value.Data[i] >= c {
				ga[i] += g
			}
		}
	}, a)
}

// accumulate adds c·g into n's gradient if n needs one.
func accumulate[T Float](n *Node[T], g []T, c T) {
	if !n.needsGrad {
		return
	}
	gt, first := n.gradInit()
	dst := gt.Data
	if first {
		if c == 1 {
			copy(dst, g)
			return
		}
		for i, v := range g {
			dst[i] = c * v
		}
		return
	}
	if c == 1 {
		for i, v := range g {
			dst[i] += v
		}
		return
	}
	for i, v := range g {
		dst[i] += c * v
	}
}
