package model

import (
	"fmt"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/nn"
)

// Certifier is implemented by architectures with a certified-training
// loss: a bound, over the ball of radius eps around each input, on the
// teacher-forced loss, whose minimisation makes the label's decoding
// provably robust on the ball — every step's label token (then eos)
// winning over every other token for every input of it.
type Certifier[T ad.Float] interface {
	CertifiedLoss(tp *ad.Tape[T], x *ad.Node[T], labels [][]int, eps float64) (loss *ad.Node[T], certified int, err error)
}

// CertifiedLoss is interval bound propagation (IBP; Gowal et al., "On the
// effectiveness of interval bound propagation for training verifiably
// robust models", 2018) along the label's path: the box of the ball
// S(x, eps) ∩ [min, max] goes through the encoder and the cell (ReLU RNN,
// LSTM or GRU) by the interval rule of each layer, the fed-back tokens being the label's
// (exact: an embedding row), and at each step the cross-entropy is taken
// of the worst-case logits — the output layer applied to the hidden box
// per margin (Gowal et al.'s elision of the last layer: the upper bound of
// z_j − z_y is (W_j − W_y)·c + |W_j − W_y|·r + b_j − b_y, tighter than
// the difference of the logits' intervals). The loss is the sum over
// steps of the batch means, as TeacherForcedLoss's; certified counts the
// rows whose every margin bound is negative at every step — an interval
// certificate, in the tape's precision, that the label decodes everywhere
// on the ball (a training statistic; lenspec verify is the sound check).
func (m *Captioner[T]) CertifiedLoss(tp *ad.Tape[T], x *ad.Node[T], labels [][]int, eps float64) (*ad.Node[T], int, error) {
	b := x.Value.Shape[0]
	if len(labels) != b {
		return nil, 0, fmt.Errorf("certified loss: %d inputs, %d labels", b, len(labels))
	}
	steps, err := labelSteps(labels, m.Vocab(), m.EOS())
	if err != nil {
		return nil, 0, fmt.Errorf("certified loss: %w", err)
	}
	c, r := m.inputBox(tp, x, eps)
	for _, cv := range m.Conv {
		c, r = cv.Interval(tp, c, r)
		c, r = nn.ReLUInterval(tp, c, r)
	}
	c, r = tp.Reshape(c, b, c.Value.Len()/b), tp.Reshape(r, b, r.Value.Len()/b)
	c, r = m.FC1.Interval(tp, c, r)
	c, r = nn.ReLUInterval(tp, c, r)
	c, r = m.FC2.Interval(tp, c, r)

	state := make([]box[T], m.cell.states())
	for k := range state {
		state[k] = box[T]{tp.Const(ad.New[T](b, m.Arch.Hidden)), tp.Const(ad.New[T](b, m.Arch.Hidden))}
	}
	targets, next := make([]int, b), make([]int, b)
	weights := make([]T, b)
	for i := range weights {
		weights[i] = T(1) / T(b)
	}
	certified := make([]bool, b)
	for i := range certified {
		certified[i] = true
	}
	var total *ad.Node[T]
	for t := 0; t < steps; t++ {
		if t == 0 {
			state = m.cell.interval(tp, c, r, state)
		} else {
			state = m.cell.interval(tp, m.Emb.Forward(tp, next), nil, state)
		}
		hc, hr := state[0].c, state[0].r
		stepTargets(targets, labels, t, m.EOS())
		worst := tp.Add(m.Out.Forward(tp, hc), m.marginSpread(tp, hr, targets))
		ce := tp.CrossEntropy(worst, targets, weights)
		if total == nil {
			total = ce
		} else {
			total = tp.Add(total, ce)
		}
		v := worst.Value
		w := v.Shape[1]
		for i, y := range targets {
			if y < 0 {
				continue
			}
			row := v.Data[i*w : (i+1)*w]
			for j, z := range row {
				if j != y && !(z < row[y]) {
					certified[i] = false
				}
			}
			next[i] = y
		}
	}
	n := 0
	for _, ok := range certified {
		if ok {
			n++
		}
	}
	return total, n, nil
}

// marginSpread returns, for row i and token j, Σ_h |W_j,h − W_y,h|·r_i,h
// with y = targets[i] (0 for a finished row): what the hidden box's
// radius r adds to the margin z_j − z_y over its centre's. Added to the
// centre's logits it gives logits whose differences from the target's are
// the margins' upper bounds, so their cross-entropy is IBP's worst case.
func (m *Captioner[T]) marginSpread(tp *ad.Tape[T], r *ad.Node[T], targets []int) *ad.Node[T] {
	b, h := r.Value.Shape[0], r.Value.Shape[1]
	w := tp.Param(m.Out.W)
	ys := make([]int, b)
	for i, y := range targets {
		ys[i] = max(y, 0)
	}
	wy := tp.Gather(w, ys)
	ones := tp.Const(ad.Full[T](1, 1, h))
	cols := make([]*ad.Node[T], m.Vocab())
	same := make([]int, b)
	for j := range cols {
		for i := range same {
			same[i] = j
		}
		d := tp.Abs(tp.Sub(tp.Gather(w, same), wy))
		cols[j] = tp.Linear(tp.Mul(d, r), ones, nil)
	}
	return tp.Concat(1, cols...)
}

// inputBox is the box of the ball of radius eps around each input of x
// clipped to the input range, as centre and radius of shape [B, C, H, W].
func (m *Captioner[T]) inputBox(tp *ad.Tape[T], x *ad.Node[T], eps float64) (mid, rad *ad.Node[T]) {
	in := m.Arch.Input
	b := x.Value.Shape[0]
	c, r := ad.New[T](b, in.Channels, in.Height, in.Width), ad.New[T](b, in.Channels, in.Height, in.Width)
	for i, v := range x.Value.Data {
		lo, hi := max(float64(v)-eps, in.Min), min(float64(v)+eps, in.Max)
		c.Data[i], r.Data[i] = T((lo+hi)/2), T(max(hi-lo, 0)/2)
	}
	return tp.Const(c), tp.Const(r)
}
