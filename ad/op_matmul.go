package ad

import "fmt"

// MatMul returns a·b for a of shape [m, k] and b of shape [k, n].
func (tp *Tape[T]) MatMul(a, b *Node[T]) *Node[T] {
	if len(a.Value.Shape) != 2 || len(b.Value.Shape) != 2 || a.Value.Shape[1] != b.Value.Shape[0] {
		panic(fmt.Sprintf("ad.MatMul: shapes %v and %v", a.Value.Shape, b.Value.Shape))
	}
	m, k, n := a.Value.Shape[0], a.Value.Shape[1], b.Value.Shape[1]
	out := tp.alloc(false, m, n)
	Gemm(false, false, m, n, k, 1, a.Value.Data, b.Value.Data, 0, out.Data)
	return tp.op(out, func(o *Node[T]) {
		if a.needsGrad { // dA = dO·bᵀ
			ga, beta := gradBeta(a)
			Gemm(false, true, m, k, n, 1, o.Grad.Data, b.Value.Data, beta, ga)
		}
		if b.needsGrad { // dB = aᵀ·dO
			gb, beta := gradBeta(b)
			Gemm(true, false, k, n, m, 1, a.Value.Data, o.Grad.Data, beta, gb)
		}
	}, a, b)
}

// gradBeta is n's gradient for a GEMM to add to (beta 1), or to write
// (beta 0) when it is the first contribution (Node.gradInit).
func gradBeta[T Float](n *Node[T]) ([]T, T) {
	g, first := n.gradInit()
	if first {
		return g.Data, 0
	}
	return g.Data, 1
}

// Linear returns x·Wᵀ + bias, the fully connected layer in PyTorch's weight
// layout: x is [..., in] (all leading dimensions are flattened into rows), W
// is [out, in] and bias is [out] or nil.
func (tp *Tape[T]) Linear(x, w, bias *Node[T]) *Node[T] {
	return tp.linear(x, w, bias, false, "Linear")
}

// LinearReLU is ReLU(Linear(x, w, bias)) in one pass over the output: the
// bias goes in before the GEMM (beta = 1), the activation is applied in
// place after it, and the gradient is masked by the output's sign, so no
// pre-activation tensor is kept.
func (tp *Tape[T]) LinearReLU(x, w, bias *Node[T]) *Node[T] {
	return tp.linear(x, w, bias, true, "LinearReLU")
}

func (tp *Tape[T]) linear(x, w, bias *Node[T], relu bool, name string) *Node[T] {
	in := x.Value.Cols()
	if len(w.Value.Shape) != 2 || w.Value.Shape[1] != in {
		panic(fmt.Sprintf("ad.%s: input %v, weight %v", name, x.Value.Shape, w.Value.Shape))
	}
	rows, outDim := x.Value.Rows(), w.Value.Shape[0]
	if bias != nil && bias.Value.Len() != outDim {
		panic(fmt.Sprintf("ad.%s: bias %v for %d outputs", name, bias.Value.Shape, outDim))
	}
	shape := append(append([]int(nil), x.Value.Shape[:len(x.Value.Shape)-1]...), outDim)
	out := tp.alloc(false, shape...)
	beta := T(0) // without a bias the GEMM overwrites out
	if bias != nil {
		for r := 0; r < rows; r++ {
			copy(out.Data[r*outDim:(r+1)*outDim], bias.Value.Data)
		}
		beta = 1
	}
	Gemm(false, true, rows, outDim, in, 1, x.Value.Data, w.Value.Data, beta, out.Data)
	if relu {
		for i, v := range out.Data {
			out.Data[i] = max(v, 0)
		}
	}
	inputs := []*Node[T]{x, w}
	if bias != nil {
		inputs = append(inputs, bias)
	}
	return tp.op(out, func(o *Node[T]) {
		g := o.Grad.Data
		if relu { // the gradient passes where the output is positive
			m := tp.alloc(false, len(g)).Data
			for i, v := range out.Data {
				if v > 0 {
					m[i] = g[i]
				} else {
					m[i] = 0
				}
			}
			g = m
		}
		if x.needsGrad { // dX = dO·W
			gx, beta := gradBeta(x)
			Gemm(false, false, rows, in, outDim, 1, g, w.Value.Data, beta, gx)
		}
		if w.needsGrad { // dW = dOᵀ·X
			gw, beta := gradBeta(w)
			Gemm(true, false, outDim, in, rows, 1, g, x.Value.Data, beta, gw)
		}
		if bias != nil && bias.needsGrad {
			db := bias.grad().Data
			for r := 0; r < rows; r++ {
				for j, v := range g[r*outDim : (r+1)*outDim] {
					db[j] += v
				}
			}
		}
	}, inputs...)
}
