package ad

import (
	"fmt"
	"math"
)

// LSTMCell is the pointwise part of an LSTM step, fused: from the gate
// pre-activations gates [B, 4H] (PyTorch's order i, f, g, o: the sum of
// the input and hidden GEMMs) and the cell c [B, H] it returns
//
//	c' = σ(f)⊙c + σ(i)⊙tanh(g),  h' = σ(o)⊙tanh(c').
//
// One pass forward and one backward replace the nine elementwise ops the
// formula takes one at a time, and the activations are kept for the
// backward pass instead of recomputed.
func (tp *Tape[T]) LSTMCell(gates, c *Node[T]) (h, cNext *Node[T]) {
	b, h4 := gates.Value.Rows(), gates.Value.Cols()
	hd := h4 / 4
	if h4%4 != 0 || c.Value.Rows() != b || c.Value.Cols() != hd || len(gates.Value.Shape) != 2 {
		panic(fmt.Sprintf("ad.LSTMCell: gates %v, cell %v", gates.Value.Shape, c.Value.Shape))
	}
	hOut, cOut := tp.alloc(false, b, hd), tp.alloc(false, b, hd)
	// act holds σ(i), σ(f), tanh(g), σ(o), tanh(c') per row, for backward.
	act := tp.alloc(false, b, 5*hd)
	lstmForward(b, hd, gates.Value.Data, c.Value.Data, hOut.Data, cOut.Data, act.Data)
	// cNext carries the whole backward pass; h's only makes sure cNext's
	// runs (it runs after h's, and only for a node with a gradient).
	cNext = tp.op(cOut, func(o *Node[T]) {
		var dh []T
		if h.Grad != nil {
			dh = h.Grad.Data
		}
		var dg, dc []T
		if gates.needsGrad {
			dg = gates.grad().Data
		}
		if c.needsGrad {
			dc = c.grad().Data
		}
		lstmBackward(b, hd, act.Data, c.Value.Data, dh, o.Grad.Data, dg, dc)
	}, gates, c)
	h = tp.op(hOut, func(*Node[T]) { cNext.grad() }, cNext)
	return h, cNext
}

// lstmForwardGo is the Go loop of LSTMCell's forward pass (float64, the
// pure-Go build, and the reference the C kernel is tested against).
func lstmForwardGo[T Float](b, hd int, gates, c, h, cNext, act []T) {
	for r := 0; r < b; r++ {
		g := gates[r*4*hd : (r+1)*4*hd]
		a := act[r*5*hd : (r+1)*5*hd]
		for j := 0; j < hd; j++ {
			i, f := sigmoid(float64(g[j])), sigmoid(float64(g[hd+j]))
			gg, o := math.Tanh(float64(g[2*hd+j])), sigmoid(float64(g[3*hd+j]))
			cn := T(f*float64(c[r*hd+j]) + i*gg)
			tc := math.Tanh(float64(cn))
			cNext[r*hd+j], h[r*hd+j] = cn, T(o*tc)
			a[j], a[hd+j], a[2*hd+j], a[3*hd+j], a[4*hd+j] = T(i), T(f), T(gg), T(o), T(tc)
		}
	}
}

// lstmBackwardGo adds LSTMCell's gradients: dg (gates) and dc (old cell)
// when set, from dh (nil: zero) and dcNext.
func lstmBackwardGo[T Float](b, hd int, act, c, dh, dcNext, dg, dc []T) {
	for r := 0; r < b; r++ {
		a := act[r*5*hd : (r+1)*5*hd]
		for j := 0; j < hd; j++ {
			i, f, gg, o, tc := a[j], a[hd+j], a[2*hd+j], a[3*hd+j], a[4*hd+j]
			k := r*hd + j
			d := dcNext[k]
			var dhk T
			if dh != nil {
				dhk = dh[k]
				d += dhk * o * (1 - tc*tc)
			}
			if dg != nil {
				row := dg[r*4*hd : (r+1)*4*hd]
				row[j] += d * gg * i * (1 - i)
				row[hd+j] += d * c[k] * f * (1 - f)
				row[2*hd+j] += d * i * (1 - gg*gg)
				row[3*hd+j] += dhk * tc * o * (1 - o)
			}
			if dc != nil {
				dc[k] += d * f
			}
		}
	}
}

// sigmoid is 1/(1+e^−x) without overflow.
func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}
