package ad

import "math"

// GELU returns x·Φ(x), Φ the standard normal distribution function, in its
// exact (erf) form: PyTorch's F.gelu with approximate="none", the
// activation="gelu" of its transformer layers. The gradient is
// Φ(x) + x·φ(x).
func (tp *Tape[T]) GELU(x *Node[T]) *Node[T] {
	out := tp.alloc(false, x.Value.Shape...)
	for i, v := range x.Value.Data {
		f := float64(v)
		out.Data[i] = T(f * normalCDF(f))
	}
	return tp.op(out, func(o *Node[T]) {
		if !x.needsGrad {
			return
		}
		gx := x.grad().Data
		for i, g := range o.Grad.Data {
			f := float64(x.Value.Data[i])
			gx[i] += g * T(normalCDF(f)+f*math.Exp(-f*f/2)/math.Sqrt(2*math.Pi))
		}
	}, x)
}

// normalCDF is Φ(x) = (1 + erf(x/√2))/2.
func normalCDF(x float64) float64 { return 0.5 * (1 + math.Erf(x/math.Sqrt2)) }
