package model

import (
	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/nn"
)

// crownHead holds what back-substitution over the captioner's head needs
// during one certified loss: fc1's interval pre-activations, where every
// pass is concretised, and each decoder step's pre-activation bounds and
// constant input, as the steps are taken. Rows of a specification matrix
// are grouped by example: S consecutive rows belong to one (ad.RowDot).
type crownHead[T ad.Float] struct {
	m *Captioner[T]
	b int
	// z: fc1's pre-activation box, as bounds and as centre and radius
	// ([B, FCHidden]).
	zlo, zhi, zc, zr *ad.Node[T]
	// lo[t], hi[t] bound p_{t+1}, the pre-activation of step t's cell
	// ([B, Hidden]); in[t] is its constant part, W_ih·emb(y_{t−1}) + b_ih
	// + b_hh ([B, Hidden]; [1, Hidden] at step 0, where the input is i₀).
	lo, hi, in []*ad.Node[T]
	// eye is [I; −I] for every example ([B·2H, H]): the specifications of
	// a step's upper and (negated) lower pre-activation bounds.
	eye *ad.Node[T]
}

func (m *Captioner[T]) newCROWNHead(tp *ad.Tape[T], zc, zr *ad.Node[T]) *crownHead[T] {
	b, h := zc.Value.Shape[0], m.Arch.Hidden
	eye := nn.SignedEye[T](b, h)
	return &crownHead[T]{m: m, b: b, zlo: tp.Sub(zc, zr), zhi: tp.Add(zc, zr), zc: zc, zr: zr, eye: tp.Const(eye)}
}

// step bounds p_{t+1} from its interval box (pc, pr) and back-substitution,
// whichever is tighter per neuron, records the bounds for the later steps
// and returns them. next holds the tokens fed back into step t (t ≥ 1).
func (hd *crownHead[T]) step(tp *ad.Tape[T], t int, pc, pr *ad.Node[T], next []int) (lo, hi *ad.Node[T]) {
	cell := hd.m.RNN
	h := cell.Hidden
	var in *ad.Node[T]
	if t == 0 {
		in = tp.Add(tp.Reshape(tp.Param(cell.Bih), 1, h), tp.Reshape(tp.Param(cell.Bhh), 1, h))
	} else {
		in = tp.AddBias(tp.Linear(hd.m.Emb.Forward(tp, next), tp.Param(cell.Wih), tp.Param(cell.Bih)), tp.Param(cell.Bhh))
	}
	hd.in = append(hd.in, in)
	parts := tp.Split(tp.Reshape(hd.back(tp, hd.eye, t), hd.b, 2*h), 1, h, h)
	lo = nn.Maximum(tp, tp.Sub(pc, pr), tp.Scale(parts[1], -1))
	hi = nn.Minimum(tp, tp.Add(pc, pr), parts[0])
	hd.lo, hd.hi = append(hd.lo, lo), append(hd.hi, hi)
	return lo, hi
}

// margins returns upper bounds [B, V] of step t's margins z_j − z_y by
// back-substitution (0 at j = y); y = targets[i], 0 for a finished row.
func (hd *crownHead[T]) margins(tp *ad.Tape[T], t int, targets []int) *ad.Node[T] {
	spec, db := hd.m.marginSpec(tp, targets)
	lam, k := tp.RelaxReLU(spec, hd.lo[t], hd.hi[t])
	return tp.Reshape(tp.Add(tp.Add(hd.back(tp, lam, t), k), db), hd.b, hd.m.Vocab())
}

// marginSpec returns the margins z_j − z_y of every token j for each row's
// target y (0 for a finished row) as linear functions of the output
// layer's input: coefficients W_j − W_y ([B·V, Hidden], V rows per
// example) and constants b_j − b_y ([B·V]).
func (m *Captioner[T]) marginSpec(tp *ad.Tape[T], targets []int) (lam, db *ad.Node[T]) {
	v, b := m.Vocab(), len(targets)
	js, ys := make([]int, b*v), make([]int, b*v)
	for i, y := range targets {
		for j := range v {
			js[i*v+j], ys[i*v+j] = j, max(y, 0)
		}
	}
	w := tp.Param(m.Out.W)
	bias := tp.Reshape(tp.Param(m.Out.B), v, 1)
	return tp.Sub(tp.Gather(w, js), tp.Gather(w, ys)), tp.Reshape(tp.Sub(tp.Gather(bias, js), tp.Gather(bias, ys)), b*v)
}

// back returns, for coefficients lam [R, Hidden] on p_{t+1} (R/B rows per
// example), the upper bound [R] of lam·p_{t+1} over the ball: back through
// the steps' constants, W_hh and the earlier steps' ReLUs to i₀, through
// fc2 and fc1's ReLU, concretised over fc1's pre-activation box.
func (hd *crownHead[T]) back(tp *ad.Tape[T], lam *ad.Node[T], t int) *ad.Node[T] {
	m := hd.m
	cell := m.RNN
	var k *ad.Node[T]
	for s := t; ; s-- {
		k = tp.AddTo(k, tp.RowDot(lam, hd.in[s]))
		if s == 0 {
			break
		}
		var kk *ad.Node[T]
		lam, kk = tp.RelaxReLU(tp.MatMul(lam, tp.Param(cell.Whh)), hd.lo[s-1], hd.hi[s-1])
		k = tp.AddTo(k, kk)
	}
	lam = tp.MatMul(lam, tp.Param(cell.Wih)) // on i₀ = fc2(ReLU(z)) + b
	k = tp.AddTo(k, tp.RowDot(lam, tp.Reshape(tp.Param(m.FC2.B), 1, m.FC2.Out)))
	lam, kk := tp.RelaxReLU(tp.MatMul(lam, tp.Param(m.FC2.W)), hd.zlo, hd.zhi)
	k = tp.AddTo(k, kk)
	k = tp.AddTo(k, tp.RowDot(lam, hd.zc))
	k = tp.AddTo(k, tp.RowDot(tp.Abs(lam), hd.zr))
	return k
}

// intervalMargins returns the interval bounds [B, V] of the margins
// z_j − z_y over the hidden box (hc, hr), the output layer elided (0 at
// j = y; y = targets[i], 0 for a finished row).
func (m *Captioner[T]) intervalMargins(tp *ad.Tape[T], hc, hr *ad.Node[T], targets []int) *ad.Node[T] {
	worst := tp.Add(m.Out.Forward(tp, hc), m.marginSpread(tp, hr, targets))
	b, v := worst.Value.Shape[0], worst.Value.Shape[1]
	onehot := ad.New[T](b, v)
	for i, y := range targets {
		onehot.Data[i*v+max(y, 0)] = 1
	}
	wy := tp.Reshape(tp.RowDot(worst, tp.Const(onehot)), b, 1)
	return tp.Sub(worst, tp.Linear(wy, tp.Const(ad.Full[T](1, v, 1)), nil))
}
