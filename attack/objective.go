package attack

import (
	"fmt"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
)

// Loss selects the differentiable proxy PGD minimises.
type Loss string

const (
	// LossMargin is the paper's J̃(x) = Σ_{t≤k} max{o_t[eos] − max_{z≠eos} o_t[z], −ε}
	// over the steps of the current greedy output, eos step included.
	LossMargin Loss = "margin"
	// LossEOSLogProb is Σ_{t≤k} log softmax(o_t)[eos] (the NICGSlowDown loss).
	LossEOSLogProb Loss = "eos-logprob"
)

// ParseLoss validates a loss name.
func ParseLoss(s string) (Loss, error) {
	switch Loss(s) {
	case LossMargin, LossEOSLogProb:
		return Loss(s), nil
	}
	return "", fmt.Errorf("unknown loss %q (want %q or %q)", s, LossMargin, LossEOSLogProb)
}

// Objective unrolls greedy decoding of the rows of x [R, InputSize] for at
// most maxSteps steps and returns the proxy loss summed over rows, and each
// row's greedy result on the way.
//
// Row r contributes at steps t = 0 … ℓ_r, where ℓ_r is its current output
// length (t = ℓ_r is the step that emitted eos); an output still running at
// the cap contributes at every step. Minimising the loss pushes eos below
// the best other token at each of those steps, so once the eos step flips,
// the output grows and the window k = ℓ+1 grows with it (the paper's greedy
// scheme). The argmax feedback is piecewise constant: gradients flow through
// the logits and the hidden states of the path actually decoded.
func Objective[T ad.Float](tp *ad.Tape[T], m Model[T], x *ad.Node[T], maxSteps int, loss Loss, eps float64) (*ad.Node[T], []model.Result) {
	rows := x.Value.Rows()
	eos, v := m.EOS(), m.Vocab()
	exclude := make([]bool, v)
	exclude[eos] = true
	res := make([]model.Result, rows)
	ids := make([]int, rows)
	w := make([]T, rows)
	in := m.Encode(tp, x)
	var h, total *ad.Node[T]
	active := rows
	for t := 0; t < maxSteps && active > 0; t++ {
		var o *ad.Node[T]
		o, h = m.Step(tp, in, h)
		for r := range res {
			w[r] = 0
			if res[r].Stopped {
				continue
			}
			w[r] = 1
			y, _, rel := model.Argmax(o.Value.Data[r*v : (r+1)*v])
			if t == 0 || rel < res[r].MinRelMargin {
				res[r].MinRelMargin = rel
			}
			ids[r] = y
			if y == eos {
				res[r].Stopped = true
				active--
			} else {
				res[r].Tokens = append(res[r].Tokens, y)
			}
		}
		var term *ad.Node[T]
		switch loss {
		case LossEOSLogProb:
			term = tp.Slice(tp.LogSoftmax(o), 1, eos, eos+1)
		default:
			d := tp.Sub(tp.Reshape(tp.Slice(o, 1, eos, eos+1), rows), tp.MaxLast(o, exclude))
			term = tp.ClampMin(d, T(-eps))
		}
		s := tp.WeightedSum(term, w)
		if total == nil {
			total = s
		} else {
			total = tp.Add(total, s)
		}
		in = m.Embed(tp, ids)
	}
	return total, res
}
