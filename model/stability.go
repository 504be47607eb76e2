package model

import (
	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/nn"
)

// Stabilizer is implemented by architectures with a ReLU-stability
// regulariser (verification-friendly training): the loss over the ball of
// radius eps around each input of x, and the batch's unstable ReLU count.
type Stabilizer[T ad.Float] interface {
	StabilityLoss(tp *ad.Tape[T], x *ad.Node[T], eps float64) (loss *ad.Node[T], unstable int)
}

// StabilityLoss is the ReLU-stability regulariser of Xiao et al. (ICLR
// 2019), "Training for faster adversarial robustness verification via
// inducing ReLU stability", applied to the encoder: for every ReLU of the
// convolutions and FC₁ with interval bounds [l, u] over the ball
// S(x, eps) ∩ [min, max], the term −tanh(1 + l·u) is lowest when l and u
// share a sign. Unstable ReLUs (l < 0 < u) become binaries of the MIP and
// loose triangles in linear bounds; conv1 alone had over a thousand of
// them at δ = 0.02 in a normally trained model. The result is the mean
// over each layer's neurons, summed over the layers; unstable counts the
// batch's unstable ReLUs.
func (m *Captioner[T]) StabilityLoss(tp *ad.Tape[T], x *ad.Node[T], eps float64) (loss *ad.Node[T], unstable int) {
	b := x.Value.Shape[0]
	c, r := m.inputBox(tp, x, eps)
	term := func(c, r *ad.Node[T]) {
		l, u := tp.Sub(c, r), tp.Add(c, r)
		for i, lv := range l.Value.Data {
			if lv < 0 && u.Value.Data[i] > 0 {
				unstable++
			}
		}
		n := l.Value.Len()
		t := tp.Scale(tp.Sum(tp.Tanh(tp.Add(tp.Mul(l, u), tp.Const(ad.Full[T](1, l.Value.Shape...))))), T(-1)/T(n))
		loss = tp.AddTo(loss, t)
	}
	iv := nn.NewInterval(tp, b)
	iv.Relax = func(_ string, _ nn.Activation, c, r *ad.Node[T]) (*ad.Node[T], *ad.Node[T], bool) {
		term(c, r)
		return nil, nil, false
	}
	c, r = iv.Box(m.describeFC1(iv, m.describeConvs(iv, iv.Input(c, r))))
	term(c, r)
	return loss, unstable
}
