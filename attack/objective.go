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
	return objectiveRows(tp, d, in, maxSteps, loss, eps, nil)
}

// objectiveRows is ObjectiveRows along forced continuations: while row r
// is fed prefix[r] (model.GreedyOptions.Prefix), its terms instead push
// the forced token above every other, clamp(max_{z≠f} o[z] − o[f], −ε), so
// that the decoder comes to take that path by itself; after the prefix
// the usual terms push eos down. A row whose forced tokens were not all
// its argmax gets an empty, stopped result: it is not yet a decoding.
func objectiveRows[T ad.Float](tp *ad.Tape[T], d model.Decoder[T], in model.Input[T], maxSteps int, loss Loss, eps float64, prefix [][]int) (*ad.Node[T], []float64, []model.Result, error) {
	eos, v := d.EOS(), d.Vocab()
	perRow := make([]float64, in.Rows())
	exclude := make([]bool, v)
	exclude[eos] = true
	var total *ad.Node[T]
	res, err := model.Greedy(tp, d, in, model.GreedyOptions[T]{
		MaxSteps: maxSteps,
		Prefix:   prefix,
		OnStep: func(t int, o *ad.Node[T], rows []int, live []bool) {
			n := len(rows)
			w := make([]T, n)
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
				d := tp.Sub(tp.Reshape(tp.Slice(o, 1, eos, eos+1), n), tp.MaxLast(o, exclude))
				term = tp.ClampMin(d, T(-eps))
			}
			if forced := forcedAt(prefix, t, rows); forced != nil {
				term = tp.Reshape(tp.Where(forced.take, tp.Reshape(forcedTerm(tp, o, forced.tok, v, eps), n, 1), tp.Reshape(term, n, 1)), n)
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
	for r := range res {
		if res[r].Diverged {
			res[r] = model.Result{Stopped: true, Diverged: true}
		}
	}
	return total, perRow, res, nil
}

// forced is which batch rows are forced at a step, and to what.
type forced struct {
	take []bool
	tok  []int
}

func forcedAt(prefix [][]int, t int, rows []int) *forced {
	if prefix == nil {
		return nil
	}
	var f *forced
	for k, r := range rows {
		if t < len(prefix[r]) {
			if f == nil {
				f = &forced{take: make([]bool, len(rows)), tok: make([]int, len(rows))}
			}
			f.take[k], f.tok[k] = true, prefix[r][t]
		}
	}
	return f
}

// forcedTerm is clamp(max_{z≠f} o[z] − o[f], −ε) per row, f = tok[row].
func forcedTerm[T ad.Float](tp *ad.Tape[T], o *ad.Node[T], tok []int, v int, eps float64) *ad.Node[T] {
	n := len(tok)
	mask := ad.New[T](n, v)
	ids := make([]int, n)
	for k, f := range tok {
		mask.Data[k*v+f] = T(-1e30)
		ids[k] = k*v + f
	}
	other := tp.MaxLast(tp.Add(o, tp.Const(mask)), nil)
	target := tp.Reshape(tp.Gather(tp.Reshape(o, n*v, 1), ids), n)
	return tp.ClampMin(tp.Sub(other, target), T(-eps))
}
