package ad

import (
	"fmt"
	"math"
)

// The attention ops read an encoder's memory time-major: row t·B + b of a
// [S·B, D] tensor is position t of sequence b, as a recurrent encoder
// produces it step by step.

// AdditiveScores returns Bahdanau's alignment scores
//
//	e[b, t] = v · tanh(keys[t·B + b] + q[b])
//
// as [B, S], for keys [S·B, A] (the memory's projection, computed once per
// sequence), the query q [B, A] (the decoder state's projection) and v
// [1, A] or [A]. The tanh values are kept for the backward pass.
func (tp *Tape[T]) AdditiveScores(keys, q, v *Node[T]) *Node[T] {
	b, a := q.Value.Rows(), q.Value.Cols()
	if b == 0 || keys.Value.Cols() != a || keys.Value.Rows()%b != 0 || v.Value.Len() != a {
		panic(fmt.Sprintf("ad.AdditiveScores: keys %v, query %v, v %v", keys.Value.Shape, q.Value.Shape, v.Value.Shape))
	}
	s := keys.Value.Rows() / b
	out := tp.alloc(false, b, s)
	th := tp.alloc(false, s*b, a)
	scoresForward(s, b, a, keys.Value.Data, q.Value.Data, v.Value.Data, out.Data, th.Data)
	return tp.op(out, func(o *Node[T]) {
		var dk, dq, dv []T
		if keys.needsGrad {
			dk = keys.grad().Data
		}
		if q.needsGrad {
			dq = q.grad().Data
		}
		if v.needsGrad {
			dv = v.grad().Data
		}
		scoresBackward(s, b, a, th.Data, v.Value.Data, o.Grad.Data, dk, dq, dv)
	}, keys, q, v)
}

func scoresForwardGo[T Float](s, b, a int, keys, q, v, out, th []T) {
	for t := 0; t < s; t++ {
		for r := 0; r < b; r++ {
			k, qr, tr := keys[(t*b+r)*a:(t*b+r+1)*a], q[r*a:(r+1)*a], th[(t*b+r)*a:(t*b+r+1)*a]
			var sum T
			for j := range k {
				y := T(math.Tanh(float64(k[j] + qr[j])))
				tr[j] = y
				sum += v[j] * y
			}
			out[r*s+t] = sum
		}
	}
}

func scoresBackwardGo[T Float](s, b, a int, th, v, g, dk, dq, dv []T) {
	for t := 0; t < s; t++ {
		for r := 0; r < b; r++ {
			gs := g[r*s+t]
			if gs == 0 {
				continue // masked positions: nothing flows
			}
			tr := th[(t*b+r)*a : (t*b+r+1)*a]
			for j, y := range tr {
				d := gs * v[j] * (1 - y*y)
				if dk != nil {
					dk[(t*b+r)*a+j] += d
				}
				if dq != nil {
					dq[r*a+j] += d
				}
				if dv != nil {
					dv[j] += gs * y
				}
			}
		}
	}
}

// Attend returns the context vectors c[b] = Σ_t w[b, t]·mem[t·B + b] as
// [B, D], for weights w [B, S] (attention probabilities) and the memory
// mem [S·B, D].
func (tp *Tape[T]) Attend(w, mem *Node[T]) *Node[T] {
	b, s := w.Value.Rows(), w.Value.Cols()
	d := mem.Value.Cols()
	if mem.Value.Rows() != s*b || len(w.Value.Shape) != 2 {
		panic(fmt.Sprintf("ad.Attend: weights %v, memory %v", w.Value.Shape, mem.Value.Shape))
	}
	out := tp.alloc(true, b, d)
	attendForward(s, b, d, w.Value.Data, mem.Value.Data, out.Data)
	return tp.op(out, func(o *Node[T]) {
		var dw, dm []T
		if w.needsGrad {
			dw = w.grad().Data
		}
		if mem.needsGrad {
			dm = mem.grad().Data
		}
		attendBackward(s, b, d, w.Value.Data, mem.Value.Data, o.Grad.Data, dw, dm)
	}, w, mem)
}

func attendForwardGo[T Float](s, b, d int, w, mem, out []T) {
	for t := 0; t < s; t++ {
		for r := 0; r < b; r++ {
			wt := w[r*s+t]
			if wt == 0 {
				continue
			}
			m, o := mem[(t*b+r)*d:(t*b+r+1)*d], out[r*d:(r+1)*d]
			for j, x := range m {
				o[j] += wt * x
			}
		}
	}
}

func attendBackwardGo[T Float](s, b, d int, w, mem, g, dw, dm []T) {
	for t := 0; t < s; t++ {
		for r := 0; r < b; r++ {
			m, gr := mem[(t*b+r)*d:(t*b+r+1)*d], g[r*d:(r+1)*d]
			if dw != nil {
				var dot T
				for j, x := range m {
					dot += x * gr[j]
				}
				dw[r*s+t] += dot
			}
			if dm != nil {
				wt := w[r*s+t]
				dr := dm[(t*b+r)*d : (t*b+r+1)*d]
				for j, x := range gr {
					dr[j] += wt * x
				}
			}
		}
	}
}

// Where returns, row by row, a's row where take[r] is set and b's
// otherwise: a recurrent encoder keeps the state of a finished (padded)
// sequence this way. Gradients go to the row that was taken.
func (tp *Tape[T]) Where(take []bool, a, b *Node[T]) *Node[T] {
	rows, cols := a.Value.Rows(), a.Value.Cols()
	if b.Value.Rows() != rows || b.Value.Cols() != cols || len(take) != rows {
		panic(fmt.Sprintf("ad.Where: %d flags, %v and %v", len(take), a.Value.Shape, b.Value.Shape))
	}
	out := tp.alloc(false, a.Value.Shape...)
	for r, t := range take {
		src := b.Value.Data
		if t {
			src = a.Value.Data
		}
		copy(out.Data[r*cols:(r+1)*cols], src[r*cols:(r+1)*cols])
	}
	take = append([]bool(nil), take...)
	return tp.op(out, func(o *Node[T]) {
		for r, t := range take {
			dst := b
			if t {
				dst = a
			}
			if !dst.needsGrad {
				continue
			}
			g := dst.grad().Data[r*cols : (r+1)*cols]
			for j, x := range o.Grad.Data[r*cols : (r+1)*cols] {
				g[j] += x
			}
		}
	}, a, b)
}
