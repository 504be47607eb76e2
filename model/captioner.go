package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/nn"
)

// Captioner is the paper's CNN-RNN image captioner (§4, §5.1):
//
//	i₀ = FC₂(ReLU(FC₁(ReLU(Conv₂(ReLU(Conv₁(x))))))),  h₀ = 0
//	h_{t+1} = ReLU(W_ih·i_t + b_ih + W_hh·h_t + b_hh)
//	o_t = W_out·h_{t+1} + b_out,  y_t = argmax o_t,  i_{t+1} = emb[y_t]
//
// Only affine maps and ReLU appear, so the verifier can encode it exactly.
// T is float32 for speed or float64 for exact replay; both run this code.
type Captioner[T ad.Float] struct {
	Cfg  Config
	Conv []*nn.Conv2D[T]
	FC1  *nn.Linear[T]
	FC2  *nn.Linear[T]
	Emb  *nn.Embedding[T]
	Cell *nn.RNNCell[T]
	Out  *nn.Linear[T]
}

// NewCaptioner builds a captioner for cfg with weights drawn from rng.
func NewCaptioner[T ad.Float](cfg Config, rng *rand.Rand) (*Captioner[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Captioner[T]{Cfg: cfg}
	in := cfg.Input.Channels
	for i, cv := range cfg.Conv {
		g := ad.ConvGeom{Kernel: cv.Kernel, Stride: cv.Stride, Pad: cv.Padding}
		m.Conv = append(m.Conv, nn.NewConv2D[T](fmt.Sprintf("encoder.conv%d", i+1), in, cv.OutChannels, g, rng))
		in = cv.OutChannels
	}
	c, h, w := cfg.FeatureShape()
	m.FC1 = nn.NewLinear[T]("encoder.fc1", c*h*w, cfg.FCHidden, rng)
	m.FC2 = nn.NewLinear[T]("encoder.fc2", cfg.FCHidden, cfg.Embedding, rng)
	m.Emb = nn.NewEmbedding[T]("decoder.embedding", len(cfg.Vocab), cfg.Embedding, rng)
	m.Cell = nn.NewRNNCell[T]("decoder.cell", cfg.Embedding, cfg.Hidden, rng)
	m.Out = nn.NewLinear[T]("decoder.out", cfg.Hidden, len(cfg.Vocab), rng)
	return m, nil
}

// Params lists every parameter in file order.
func (m *Captioner[T]) Params() []*ad.Param[T] {
	var ps []*ad.Param[T]
	for _, c := range m.Conv {
		ps = append(ps, c.Params()...)
	}
	ps = append(ps, m.FC1.Params()...)
	ps = append(ps, m.FC2.Params()...)
	ps = append(ps, m.Emb.Params()...)
	ps = append(ps, m.Cell.Params()...)
	ps = append(ps, m.Out.Params()...)
	return ps
}

// EOS is the end-of-sequence token id.
func (m *Captioner[T]) EOS() int { return m.Cfg.EOS }

// InputSize is the number of input values per image.
func (m *Captioner[T]) InputSize() int { return m.Cfg.InputSize() }

// MaxSteps is the default decoding step cap.
func (m *Captioner[T]) MaxSteps() int { return m.Cfg.MaxSteps }

// Vocab is the number of output tokens.
func (m *Captioner[T]) Vocab() int { return len(m.Cfg.Vocab) }

// Encode maps images x [B, C, H, W] (or [B, C·H·W]) to i₀ [B, Embedding].
func (m *Captioner[T]) Encode(tp *ad.Tape[T], x *ad.Node[T]) *ad.Node[T] {
	return m.encode(tp, x, 0, nil)
}

// encode is Encode with dropout (probability drop, masks from rng) on the
// fully connected layers' inputs, for training only.
func (m *Captioner[T]) encode(tp *ad.Tape[T], x *ad.Node[T], drop float64, rng *rand.Rand) *ad.Node[T] {
	in := m.Cfg.Input
	b := x.Value.Len() / m.Cfg.InputSize()
	a := tp.Reshape(x, b, in.Channels, in.Height, in.Width)
	for _, c := range m.Conv {
		a = tp.ReLU(c.Forward(tp, a))
	}
	a = tp.Reshape(a, b, a.Value.Len()/b)
	a = tp.ReLU(m.FC1.Forward(tp, tp.Dropout(a, drop, rng)))
	return m.FC2.Forward(tp, tp.Dropout(a, drop, rng))
}

// Step runs one decoder step from input i [B, Embedding] and state h
// [B, Hidden] (nil for h₀ = 0), returning logits o [B, Vocab] and the new
// state.
func (m *Captioner[T]) Step(tp *ad.Tape[T], i, h *ad.Node[T]) (logits, next *ad.Node[T]) {
	if h == nil {
		h = tp.Const(ad.New[T](i.Value.Rows(), m.Cfg.Hidden))
	}
	next = m.Cell.Forward(tp, i, h)
	return m.Out.Forward(tp, next), next
}

// Embed returns the token embeddings of ids, the next step's input.
func (m *Captioner[T]) Embed(tp *ad.Tape[T], ids []int) *ad.Node[T] {
	return m.Emb.Forward(tp, ids)
}

// Loss is the teacher-forced cross-entropy of the batch x against labels
// (token ids without eos; eos is appended here), summed over steps and
// averaged over the batch.
func (m *Captioner[T]) Loss(tp *ad.Tape[T], x *ad.Node[T], labels [][]int) *ad.Node[T] {
	return m.TrainLoss(tp, x, labels, 0, nil)
}

// TrainLoss is Loss with dropout of probability drop in the encoder's fully
// connected layers, masks drawn from rng (nil when drop is 0).
func (m *Captioner[T]) TrainLoss(tp *ad.Tape[T], x *ad.Node[T], labels [][]int, drop float64, rng *rand.Rand) *ad.Node[T] {
	b := len(labels)
	steps := 0
	for _, l := range labels {
		steps = max(steps, len(l)+1)
	}
	in := m.encode(tp, x, drop, rng)
	var h *ad.Node[T]
	var total *ad.Node[T]
	targets := make([]int, b)
	prev := make([]int, b)
	weights := make([]T, b)
	for i := range weights {
		weights[i] = T(1) / T(b)
	}
	for t := 0; t < steps; t++ {
		if t > 0 {
			in = m.Embed(tp, prev)
		}
		var logits *ad.Node[T]
		logits, h = m.Step(tp, in, h)
		for r, l := range labels {
			switch {
			case t < len(l):
				targets[r] = l[t]
			case t == len(l):
				targets[r] = m.Cfg.EOS
			default:
				targets[r] = -1 // finished: no loss
			}
			prev[r] = max(targets[r], 0)
		}
		ce := tp.CrossEntropy(logits, targets, weights)
		if total == nil {
			total = ce
		} else {
			total = tp.Add(total, ce)
		}
	}
	return total
}
