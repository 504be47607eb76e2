package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

// TestIntervalContainsForward: every point of a box maps inside the
// interval rule's image box, and the corners that maximise/minimise each
// output reach its ends (interval bounds are exact for one affine layer).
func TestIntervalContainsForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tp := ad.NewTape[float64](false)
	conv := NewConv2D[float64]("c", 2, 3, ad.ConvGeom{Kernel: 3, Stride: 2, Pad: 1}, rng)
	lin := NewLinear[float64]("l", 5, 4, rng)
	cell := NewRNNCell[float64]("r", 3, 4, rng)
	for _, p := range []*ad.Param[float64]{conv.B, lin.B, cell.Bih, cell.Bhh} {
		for i := range p.W.Data {
			p.W.Data[i] = rng.NormFloat64()
		}
	}
	layers := []struct {
		name  string
		shape []int
		fwd   func(x *ad.Node[float64]) *ad.Node[float64]
		ival  func(c, r *ad.Node[float64]) (*ad.Node[float64], *ad.Node[float64])
	}{
		{"conv", []int{1, 2, 5, 6}, func(x *ad.Node[float64]) *ad.Node[float64] { return conv.Forward(tp, x) },
			func(c, r *ad.Node[float64]) (*ad.Node[float64], *ad.Node[float64]) { return conv.Interval(tp, c, r) }},
		{"linear", []int{1, 5}, func(x *ad.Node[float64]) *ad.Node[float64] { return lin.Forward(tp, x) },
			func(c, r *ad.Node[float64]) (*ad.Node[float64], *ad.Node[float64]) { return lin.Interval(tp, c, r) }},
		{"relu", []int{1, 7}, func(x *ad.Node[float64]) *ad.Node[float64] { return tp.ReLU(x) },
			func(c, r *ad.Node[float64]) (*ad.Node[float64], *ad.Node[float64]) { return ReLUInterval(tp, c, r) }},
		// The cell's input (3) and state (4) side by side in one box.
		{"rnn cell", []int{1, 7}, func(x *ad.Node[float64]) *ad.Node[float64] {
			p := tp.Split(x, 1, 3, 4)
			return cell.Forward(tp, p[0], p[1])
		}, func(c, r *ad.Node[float64]) (*ad.Node[float64], *ad.Node[float64]) {
			pc, pr := tp.Split(c, 1, 3, 4), tp.Split(r, 1, 3, 4)
			return cell.Interval(tp, pc[0], pr[0], pc[1], pr[1])
		}},
		// An exact input: a box around the state only.
		{"rnn cell, exact input", []int{1, 4}, func(x *ad.Node[float64]) *ad.Node[float64] {
			return cell.Forward(tp, tp.Const(ad.Full[float64](0.7, 1, 3)), x)
		}, func(c, r *ad.Node[float64]) (*ad.Node[float64], *ad.Node[float64]) {
			return cell.Interval(tp, tp.Const(ad.Full[float64](0.7, 1, 3)), nil, c, r)
		}},
	}
	for _, l := range layers {
		c, r := ad.New[float64](l.shape...), ad.New[float64](l.shape...)
		for i := range c.Data {
			c.Data[i], r.Data[i] = rng.NormFloat64(), rng.Float64()
		}
		oc, or := l.ival(tp.Const(c), tp.Const(r))
		n := oc.Value.Len()
		reachedLo, reachedHi := make([]bool, n), make([]bool, n)
		for trial := 0; trial < 4000; trial++ {
			x := ad.New[float64](l.shape...)
			for i := range x.Data {
				switch u := rng.Float64(); {
				case trial%2 == 0 && u < 0.5:
					x.Data[i] = c.Data[i] - r.Data[i]
				case trial%2 == 0:
					x.Data[i] = c.Data[i] + r.Data[i]
				default:
					x.Data[i] = c.Data[i] + (2*u-1)*r.Data[i]
				}
			}
			y := l.fwd(tp.Const(x)).Value.Data
			for j, v := range y {
				lo, hi := oc.Value.Data[j]-or.Value.Data[j], oc.Value.Data[j]+or.Value.Data[j]
				if v < lo-1e-12 || v > hi+1e-12 {
					t.Fatalf("%s: output %d = %v outside [%v, %v]", l.name, j, v, lo, hi)
				}
				reachedLo[j] = reachedLo[j] || v < lo+1e-9
				reachedHi[j] = reachedHi[j] || v > hi-1e-9
			}
		}
		if l.name == "relu" || l.name == "linear" { // few enough inputs for corners to be hit
			for j := range reachedLo {
				if !reachedLo[j] || !reachedHi[j] {
					t.Errorf("%s: output %d's bounds were not reached by any corner: not tight", l.name, j)
				}
			}
		}
	}
}
