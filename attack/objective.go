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

// Objective unrolls greedy decoding of the batch in for at most maxSteps
// steps and returns the proxy loss summed over rows, and each row's greedy
// result on the way.
//
// Row r contributes at steps t = 0 … ℓ_r, where ℓ_r is its current output
// length (t = ℓ_r is the step that emitted eos); an output still running at
// the cap contributes at every step. Minimising the loss pushes eos below
// the best other token at each of those steps, so once the eos step flips,
// the output grows and the window k = ℓ+1 grows with it (the paper's greedy
// scheme). The argmax feedback is piecewise constant: gradients flow through
// the logits and the states of the path actually decoded.
func Objective[T ad.Float](tp *ad.Tape[T], d model.Decoder[T], in model.Input[T], maxSteps int, loss Loss, eps float64) (*ad.Node[T], []model.Result, error) {
	total, _, res, err := ObjectiveRows(tp, d, in, maxSteps, loss, eps)
	return total, res, err
}

// ObjectiveRows is Objective that also returns each input row's own part
// of the loss: candidates evaluated without a gradient are ranked by it.
func ObjectiveRows[T ad.Float](tp *ad.Tape[T], d model.Decoder[T], in model.Input[T], maxSteps int, loss Loss, eps float64) (*ad.Node[T], []float64, []model.Result, error) {
	eos := d.EOS()
	perRow := make([]float64, in.Rows())
	exclude := make([]bool, d.Vocab())
	exclude[eos] = true
	var total *ad.Node[T]
	res, err := model.Greedy(tp, d, in, model.GreedyOptions[T]{
		MaxSteps: maxSteps,
		OnStep: func(_ int, o *ad.Node[T], rows []int, live []bool) {
			w := make([]T, len(rows))
			for k, l := range live {
				if l {
					w[k] = 1
				}
			}
			var term *ad.Node[T]
			switch loss {
			case LossEOSLogProb:
				term = tp.Slice(tp.LogSoftmax(o), 1, eos, eos+1)
			default:
				d := tp.Sub(tp.Reshape(tp.Slice(o, 1, eos, eos+1), len(rows)), tp.MaxLast(o, exclude))
				term = tp.ClampMin(d, T(-eps))
			}
			for k, r := range rows {
				if live[k] {
					perRow[r] += float64(term.Value.Data[k])
				}
			}
			s := tp.WeightedSum(term, w)
			if total == nil {
				total = s
			} else {
				total = tp.Add(total, s)
			}
		},
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return total, perRow, res, nil
}
