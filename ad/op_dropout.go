package ad

import "math/rand/v2"

// Dropout zeroes each element with probability p and scales the survivors
// by 1/(1−p) (inverted dropout), drawing the mask from rng. Only training
// uses it; inference simply does not call it.
func (tp *Tape[T]) Dropout(x *Node[T], p float64, rng *rand.Rand) *Node[T] {
	if p <= 0 {
		return x
	}
	scale := T(1 / (1 - p))
	mask := tp.alloc(true, x.Value.Len()).Data
	out := tp.alloc(true, x.Value.Shape...)
	for i, v := range x.Value.Data {
		if rng.Float64() >= p {
			mask[i] = scale
			out.Data[i] = v * scale
		}
	}
	return tp.op(out, func(o *Node[T]) {
		if !x.needsGrad {
			return
		}
		gx := x.grad().Data
		for i, g := range o.Grad.Data {
			gx[i] += g * mask[i]
		}
	}, x)
}
