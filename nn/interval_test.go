package nn

import (
	"math"
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
			func(c, r *ad.Node[float64]) (*ad.Node[float64], *ad.Node[float64]) {
				iv := NewInterval(tp, 1)
				out, _ := conv.Describe(iv, "c", iv.Input(c, r), [3]int{2, 5, 6})
				return iv.Box(out)
			}},
		{"linear", []int{1, 5}, func(x *ad.Node[float64]) *ad.Node[float64] { return lin.Forward(tp, x) },
			func(c, r *ad.Node[float64]) (*ad.Node[float64], *ad.Node[float64]) {
				iv := NewInterval(tp, 1)
				return iv.Box(lin.Describe(iv, "l", iv.Input(c, r)))
			}},
		{"relu", []int{1, 7}, func(x *ad.Node[float64]) *ad.Node[float64] { return tp.ReLU(x) },
			func(c, r *ad.Node[float64]) (*ad.Node[float64], *ad.Node[float64]) {
				iv := NewInterval(tp, 1)
				return iv.Box(iv.Act("r", ReLU, iv.Input(c, r)))
			}},
		// The cell's input (3) and state (4) side by side in one box.
		{"rnn cell", []int{1, 7}, func(x *ad.Node[float64]) *ad.Node[float64] {
			p := tp.Split(x, 1, 3, 4)
			return cell.Forward(tp, p[0], p[1])
		}, func(c, r *ad.Node[float64]) (*ad.Node[float64], *ad.Node[float64]) {
			pc, pr := tp.Split(c, 1, 3, 4), tp.Split(r, 1, 3, 4)
			iv := NewInterval(tp, 1)
			return iv.Box(cell.Describe(iv, iv.Input(pc[0], pr[0]), iv.Input(pc[1], pr[1])))
		}},
		// An exact input: a box around the state only.
		{"rnn cell, exact input", []int{1, 4}, func(x *ad.Node[float64]) *ad.Node[float64] {
			return cell.Forward(tp, tp.Const(ad.Full[float64](0.7, 1, 3)), x)
		}, func(c, r *ad.Node[float64]) (*ad.Node[float64], *ad.Node[float64]) {
			iv := NewInterval(tp, 1)
			return iv.Box(cell.Describe(iv, iv.Input(tp.Const(ad.Full[float64](0.7, 1, 3)), nil), iv.Input(c, r)))
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

// TestGatedIntervals: the product's box contains the product of every
// corner and of random points of its factors' boxes (centres of either
// sign, and 0), and an increasing function's box contains its values; the
// LSTM and GRU steps' boxes contain the step of random points of their
// input and state boxes.
func TestGatedIntervals(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	tp := ad.NewTape[float64](false)
	vec := func(n int, scale float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = scale * rng.NormFloat64()
		}
		return v
	}
	const n = 400
	cx, cy, rx, ry := vec(n, 1), vec(n, 1), vec(n, 1), vec(n, 1)
	for i := range rx {
		rx[i], ry[i] = math.Abs(rx[i]), math.Abs(ry[i])
		if i%4 == 0 {
			cx[i], cy[i] = 0, 0
		}
	}
	node := func(v []float64) *ad.Node[float64] { return tp.Const(ad.FromSlice(v, 1, len(v))) }
	iv := NewInterval(tp, 1)
	x, y := iv.Input(node(cx), node(rx)), iv.Input(node(cy), node(ry))
	mc, mr := iv.Box(iv.Mul("m", x, y))
	sc, sr := iv.Box(iv.Act("s", Sigmoid, x))
	for i := range cx {
		for k := 0; k < 12; k++ {
			u, v := 2*rng.Float64()-1, 2*rng.Float64()-1
			if k < 4 {
				u, v = float64(2*(k&1)-1), float64(2*(k>>1)-1)
			}
			x, y := cx[i]+u*rx[i], cy[i]+v*ry[i]
			if p := x * y; math.Abs(p-mc.Value.Data[i]) > mr.Value.Data[i]+1e-12 {
				t.Fatalf("%v·%v = %v outside %v ± %v", x, y, p, mc.Value.Data[i], mr.Value.Data[i])
			}
			if s := 1 / (1 + math.Exp(-x)); math.Abs(s-sc.Value.Data[i]) > sr.Value.Data[i]+1e-12 {
				t.Fatalf("σ(%v) = %v outside %v ± %v", x, s, sc.Value.Data[i], sr.Value.Data[i])
			}
		}
	}
	// Whole steps.
	const in, h = 3, 4
	lstm := NewLSTMCell[float64]("l", in, h, rng)
	gru := NewGRUCell[float64]("g", in, h, rng)
	xc, xr, hc, hr, c0, r0 := vec(in, 1), vec(in, 0.3), vec(h, 0.5), vec(h, 0.2), vec(h, 1), vec(h, 0.3)
	for _, v := range [][]float64{xr, hr, r0} {
		for i := range v {
			v[i] = math.Abs(v[i])
		}
	}
	lhv, lcv := lstm.Describe(iv, iv.Input(node(xc), node(xr)), iv.Input(node(hc), node(hr)), iv.Input(node(c0), node(r0)))
	lh, lhr := iv.Box(lhv)
	lc, lcr := iv.Box(lcv)
	gh, ghr := iv.Box(gru.Describe(iv, iv.Input(node(xc), node(xr)), iv.Input(node(hc), node(hr))))
	point := func(c, r []float64) []float64 {
		p := make([]float64, len(c))
		for i := range p {
			p[i] = c[i] + r[i]*(2*rng.Float64()-1)
			if rng.IntN(3) == 0 {
				p[i] = c[i] + r[i]*float64(2*rng.IntN(2)-1)
			}
		}
		return p
	}
	for k := 0; k < 2000; k++ {
		x, hh, cc := point(xc, xr), point(hc, hr), point(c0, r0)
		h1, c1 := lstm.Forward(tp, node(x), node(hh), node(cc))
		g1 := gru.Forward(tp, node(x), node(hh))
		for j := 0; j < h; j++ {
			for _, ck := range []struct {
				name    string
				v, c, r float64
			}{{"lstm h", h1.Value.Data[j], lh.Value.Data[j], lhr.Value.Data[j]}, {"lstm c", c1.Value.Data[j], lc.Value.Data[j], lcr.Value.Data[j]}, {"gru h", g1.Value.Data[j], gh.Value.Data[j], ghr.Value.Data[j]}} {
				if math.Abs(ck.v-ck.c) > ck.r+1e-12 {
					t.Fatalf("%s[%d] = %v outside %v ± %v", ck.name, j, ck.v, ck.c, ck.r)
				}
			}
		}
	}
}
