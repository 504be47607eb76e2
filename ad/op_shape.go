package ad

import "fmt"

// Reshape returns x viewed with a new shape of the same size. The data is
// shared, never written.
func (tp *Tape[T]) Reshape(x *Node[T], shape ...int) *Node[T] {
	if numel(shape) != x.Value.Len() {
		panic(fmt.Sprintf("ad.Reshape: %v to %v", x.Value.Shape, shape))
	}
	out := &Tensor[T]{Shape: append([]int(nil), shape...), Data: x.Value.Data}
	return tp.op(out, func(o *Node[T]) { accumulate(x, o.Grad.Data, 1) }, x)
}

// axisSplit views shape as [outer, dim, inner] around axis.
func axisSplit(shape []int, axis int) (outer, dim, inner int) {
	return numel(shape[:axis]), shape[axis], numel(shape[axis+1:])
}

// Concat joins xs along axis; all other dimensions must agree.
func (tp *Tape[T]) Concat(axis int, xs ...*Node[T]) *Node[T] {
	first := xs[0].Value.Shape
	shape := append([]int(nil), first...)
	shape[axis] = 0
	for _, x := range xs {
		s := x.Value.Shape
		if len(s) != len(first) {
			panic(fmt.Sprintf("ad.Concat: shapes %v and %v", first, s))
		}
		for i := range s {
			if i != axis && s[i] != first[i] {
				panic(fmt.Sprintf("ad.Concat: shapes %v and %v along axis %d", first, s, axis))
			}
		}
		shape[axis] += s[axis]
	}
	out := tp.alloc(false, shape...)
	outer, total, inner := axisSplit(shape, axis)
	off := 0
	for _, x := range xs {
		_, d, _ := axisSplit(x.Value.Shape, axis)
		for o := 0; o < outer; o++ {
			copy(out.Data[(o*total+off)*inner:(o*total+off+d)*inner], x.Value.Data[o*d*inner:(o+1)*d*inner])
		}
		off += d
	}
	return tp.op(out, func(o *Node[T]) {
		off := 0
		for _, x := range xs {
			_, d, _ := axisSplit(x.Value.Shape, axis)
			if x.needsGrad {
				gx := x.grad().Data
				for r := 0; r < outer; r++ {
					src := o.Grad.Data[(r*total+off)*inner : (r*total+off+d)*inner]
					dst := gx[r*d*inner : (r+1)*d*inner]
					for i, v := range src {
						dst[i] += v
					}
				}
			}
			off += d
		}
	}, xs...)
}

// Slice returns x[..., start:end, ...] along axis.
func (tp *Tape[T]) Slice(x *Node[T], axis, start, end int) *Node[T] {
	s := x.Value.Shape
	if axis < 0 || axis >= len(s) || start < 0 || end > s[axis] || start > end {
		panic(fmt.Sprintf("ad.Slice: [%d:%d] on axis %d of %v", start, end, axis, s))
	}
	shape := append([]int(nil), s...)
	shape[axis] = end - start
	outer, dim, inner := axisSplit(s, axis)
	d := end - start
	out := tp.alloc(false, shape...)
	for o := 0; o < outer; o++ {
		copy(out.Data[o*d*inner:(o+1)*d*inner], x.Value.Data[(o*dim+start)*inner:(o*dim+end)*inner])
	}
	return tp.op(out, func(o *Node[T]) {
		if !x.needsGrad {
			return
		}
		gx := x.grad().Data
		for r := 0; r < outer; r++ {
			dst := gx[(r*dim+start)*inner : (r*dim+end)*inner]
			for i, v := range o.Grad.Data[r*d*inner : (r+1)*d*inner] {
				dst[i] += v
			}
		}
	}, x)
}

// Split cuts x along axis into pieces of the given sizes.
func (tp *Tape[T]) Split(x *Node[T], axis int, sizes ...int) []*Node[T] {
	out := make([]*Node[T], len(sizes))
	start := 0
	for i, n := range sizes {
		out[i] = tp.Slice(x, axis, start, start+n)
		start += n
	}
	return out
}
