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
// winning over every other token for every input of it. bound selects how
// the margins are bounded.
type Certifier[T ad.Float] interface {
	CertifiedLoss(tp *ad.Tape[T], x *ad.Node[T], labels [][]int, eps float64, bound Bound) (loss *ad.Node[T], certified int, err error)
	// CheckBound returns an error naming the problem if the model's
	// certified loss does not take bound, nil if it does.
	CheckBound(bound Bound) error
}

// Bound selects how a certified loss bounds the label's margins over the
// ball.
type Bound string

const (
	// BoundInterval is interval bound propagation (IBP) through every
	// layer, the output layer elided into each margin.
	BoundInterval Bound = "interval"
	// BoundCROWNIBP adds linear bound propagation (CROWN) over the head:
	// IBP through the convolutions and fc1, then every decoder
	// pre-activation and every margin bounded by back-substitution through
	// the unrolled cell, fc2 and fc1's ReLU down to fc1's interval
	// pre-activations, each intersected with its interval bound
	// (Captioner.CertifiedLoss).
	BoundCROWNIBP Bound = "crown-ibp"
)

// Bounds lists the certified losses' bounds, in the order of the flag's
// help.
func Bounds() []Bound { return []Bound{BoundInterval, BoundCROWNIBP} }

// Valid reports whether b names a bound.
func (b Bound) Valid() bool { return b == BoundInterval || b == BoundCROWNIBP }

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
//
// With BoundCROWNIBP (CROWN-IBP, Zhang et al., "Towards stable and
// efficient training of verifiably robust neural networks", 2020, applied
// to the head) the intervals still go through the convolutions and fc1;
// above fc1, where intervals lose the most (every decoder step mixes the
// whole state again), each step's pre-activation bounds and margins come
// from back-substitution (CROWN's linear relaxations of every ReLU,
// ad.Tape.RelaxReLU) through the unrolled cell, fc2 and fc1's ReLU,
// concretised over fc1's interval pre-activations, and each is intersected
// with its interval bound. Both bounds are sound, so is their minimum, and
// the loss and the count are taken on it. It costs a few back-substitution
// passes of width 2·hidden per step, small beside the encoder's intervals.
//
// CROWN's linear relaxations are ReLU's: BoundCROWNIBP needs the ReLU
// cell and refuses a model with another; the intervals go through every
// cell.
func (m *Captioner[T]) CertifiedLoss(tp *ad.Tape[T], x *ad.Node[T], labels [][]int, eps float64, bound Bound) (*ad.Node[T], int, error) {
	worst, err := m.worstLogits(tp, x, labels, eps, bound)
	if err != nil {
		return nil, 0, err
	}
	b := len(labels)
	targets := make([]int, b)
	weights := make([]T, b)
	for i := range weights {
		weights[i] = T(1) / T(b)
	}
	certified := make([]bool, b)
	for i := range certified {
		certified[i] = true
	}
	var total *ad.Node[T]
	for t, wt := range worst {
		stepTargets(targets, labels, t, m.EOS())
		total = tp.AddTo(total, tp.CrossEntropy(wt, targets, weights))
		v := wt.Value
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

// CheckBound implements Certifier: every cell takes either bound.
func (m *Captioner[T]) CheckBound(bound Bound) error {
	if !bound.Valid() {
		return fmt.Errorf("unknown bound %q (want one of %v)", bound, Bounds())
	}
	return nil
}

// worstLogits returns, for every step of the longest label, logits [B, V]
// whose differences row[j] − row[y] bound the margins z_j − z_y of the
// step's target y (the label's token, then eos; 0 for a finished row)
// from above over the ball, by the bound CertifiedLoss describes.
func (m *Captioner[T]) worstLogits(tp *ad.Tape[T], x *ad.Node[T], labels [][]int, eps float64, bound Bound) ([]*ad.Node[T], error) {
	if err := m.CheckBound(bound); err != nil {
		return nil, fmt.Errorf("certified loss: %w", err)
	}
	b := x.Value.Shape[0]
	if len(labels) != b {
		return nil, fmt.Errorf("certified loss: %d inputs, %d labels", b, len(labels))
	}
	steps, err := labelSteps(labels, m.Vocab(), m.EOS())
	if err != nil {
		return nil, fmt.Errorf("certified loss: %w", err)
	}
	c, r := m.inputBox(tp, x, eps)
	iv := nn.NewInterval(tp, b)
	zc, zr := iv.Box(m.describeFC1(iv, m.describeConvs(iv, iv.Input(c, r))))
	return m.headLogits(tp, zc, zr, labels, steps, bound), nil
}

// headLogits is worstLogits from fc1's pre-activation box (centre zc,
// radius zr; [B, FCHidden]) on: the bounds hold for every pre-activation
// of the box. The steps' boxes are the interval interpretation of
// describeStep. Under CROWN-IBP the margins are also bounded by
// back-substitution and the tighter taken: for the ReLU cell by crownHead,
// which also tightens each step's pre-activations before the ReLU; for
// any other cell by nn.CROWN, over the same description.
func (m *Captioner[T]) headLogits(tp *ad.Tape[T], zc, zr *ad.Node[T], labels [][]int, steps int, bound Bound) []*ad.Node[T] {
	b := len(labels)
	var head *crownHead[T]
	var back *nn.CROWN[T]
	iv := nn.NewInterval(tp, b)
	var bd nn.Builder = iv
	switch {
	case bound == BoundCROWNIBP && m.RNN != nil:
		head = m.newCROWNHead(tp, zc, zr)
	case bound == BoundCROWNIBP:
		back = nn.NewCROWN(tp, b)
		back.Tighten = true
		iv, bd = back.Interval, back
	}
	i0 := m.describeTail(bd, iv.Input(zc, zr))
	state := make([]nn.Value, m.cell.states())
	for k := range state {
		state[k] = iv.Input(tp.Const(ad.New[T](b, m.Arch.Hidden)), tp.Const(ad.New[T](b, m.Arch.Hidden)))
	}
	targets, next := make([]int, b), make([]int, b)
	out := make([]*ad.Node[T], steps)
	for t := range out {
		stepTargets(targets, labels, t, m.EOS())
		iv.Tokens = next
		if head != nil {
			iv.Relax = func(name string, a nn.Activation, pc, pr *ad.Node[T]) (*ad.Node[T], *ad.Node[T], bool) {
				if name != "" || a != nn.ReLU { // only the cell's own ReLU
					return nil, nil, false
				}
				lo, hi := head.step(tp, t, pc, pr, next)
				hlo, hhi := tp.ReLU(lo), tp.ReLU(hi)
				return tp.Scale(tp.Add(hlo, hhi), 0.5), tp.Scale(tp.Sub(hhi, hlo), 0.5), true
			}
		}
		var h nn.Value
		h, state = m.describeStep(bd, t == 0, i0, state)
		hc, hr := iv.Box(h)
		switch {
		case head != nil:
			// Margins rather than logits: the interval bound's, elided
			// as above, and back-substitution's, whichever is smaller.
			out[t] = nn.Minimum(tp, m.intervalMargins(tp, hc, hr, targets), head.margins(tp, t, targets))
		case back != nil:
			spec, db := m.marginSpec(tp, targets)
			crown := tp.Reshape(tp.Add(back.Upper(spec, h), db), b, m.Vocab())
			out[t] = nn.Minimum(tp, m.intervalMargins(tp, hc, hr, targets), crown)
		default:
			out[t] = tp.Add(m.Out.Forward(tp, hc), m.marginSpread(tp, hr, targets))
		}
		for i, y := range targets {
			if y >= 0 {
				next[i] = y
			}
		}
	}
	return out
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
