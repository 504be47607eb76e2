package verify

import (
	"fmt"

	"github.com/lenspec/lenspec/model"
)

// Row is one neuron of an affine layer: Σ W[k]·in[Idx[k]] + B.
type Row struct {
	Idx []int32
	W   []float64
	B   float64
}

// Layer is an affine map, optionally followed by ReLU, as sparse rows:
// convolutions and dense layers alike, so one bound rule serves both.
type Layer struct {
	Name string
	In   int
	Rows []Row
	ReLU bool
}

// Net is a captioner lowered to float64 for verification: the encoder as a
// chain of sparse affine layers ending in i₀, and the decoder's dense
// weights. Every float32 weight is exact in float64.
type Net struct {
	InputSize int
	Encoder   []Layer
	// Decoder step: h' = ReLU(Wih·i + Whh·h + Bih + Bhh), o = Wout·h' + Bout.
	Wih, Whh, Wout [][]float64
	Bih, Bhh, Bout []float64
	Emb            [][]float64 // [vocab][embedding]
	EOS            int
	Hidden, Vocab  int
	InMin, InMax   float64
}

// Lower converts m into a Net.
func Lower(m *model.Captioner[float64]) (*Net, error) {
	cfg := m.Cfg
	n := &Net{InputSize: cfg.InputSize(), EOS: cfg.EOS, Hidden: cfg.Hidden, Vocab: len(cfg.Vocab), InMin: cfg.Input.Min, InMax: cfg.Input.Max}
	c, h, w := cfg.Input.Channels, cfg.Input.Height, cfg.Input.Width
	for i, conv := range m.Conv {
		g := conv.Geom
		oh, ow := g.Out(h), g.Out(w)
		l := Layer{Name: fmt.Sprintf("conv%d", i+1), In: c * h * w, ReLU: true}
		wt, b := conv.W.W.Data, conv.B.W.Data
		for o := 0; o < conv.Out; o++ {
			for oy := 0; oy < oh; oy++ {
				for ox := 0; ox < ow; ox++ {
					r := Row{B: b[o]}
					for ci := 0; ci < c; ci++ {
						for ky := 0; ky < g.Kernel; ky++ {
							iy := oy*g.Stride - g.Pad + ky
							if iy < 0 || iy >= h {
								continue
							}
							for kx := 0; kx < g.Kernel; kx++ {
								ix := ox*g.Stride - g.Pad + kx
								if ix < 0 || ix >= w {
									continue
								}
								if v := wt[((o*c+ci)*g.Kernel+ky)*g.Kernel+kx]; v != 0 {
									r.Idx = append(r.Idx, int32((ci*h+iy)*w+ix))
									r.W = append(r.W, v)
								}
							}
						}
					}
					l.Rows = append(l.Rows, r)
				}
			}
		}
		n.Encoder = append(n.Encoder, l)
		c, h, w = conv.Out, oh, ow
	}
	n.Encoder = append(n.Encoder, dense("fc1", m.FC1.W.W.Data, m.FC1.B.W.Data, m.FC1.In, true), dense("fc2", m.FC2.W.W.Data, m.FC2.B.W.Data, m.FC2.In, false))
	n.Wih = matrix(m.Cell.Wih.W.Data, cfg.Hidden)
	n.Whh = matrix(m.Cell.Whh.W.Data, cfg.Hidden)
	n.Bih = append([]float64(nil), m.Cell.Bih.W.Data...)
	n.Bhh = append([]float64(nil), m.Cell.Bhh.W.Data...)
	n.Wout = matrix(m.Out.W.W.Data, len(cfg.Vocab))
	n.Bout = append([]float64(nil), m.Out.B.W.Data...)
	n.Emb = matrix(m.Emb.W.W.Data, len(cfg.Vocab))
	return n, nil
}

func dense(name string, w, b []float64, in int, relu bool) Layer {
	l := Layer{Name: name, In: in, ReLU: relu}
	for o := range b {
		r := Row{B: b[o]}
		for i := 0; i < in; i++ {
			if v := w[o*in+i]; v != 0 {
				r.Idx = append(r.Idx, int32(i))
				r.W = append(r.W, v)
			}
		}
		l.Rows = append(l.Rows, r)
	}
	return l
}

func matrix(data []float64, rows int) [][]float64 {
	cols := len(data) / rows
	out := make([][]float64, rows)
	for i := range out {
		out[i] = append([]float64(nil), data[i*cols:(i+1)*cols]...)
	}
	return out
}

// Forward evaluates the encoder on x, returning every layer's
// pre-activations (index 0: the first layer) and i₀. It is the plain
// float64 reference the bounds must contain.
func (n *Net) Forward(x []float64) (pre [][]float64, i0 []float64) {
	in := x
	for _, l := range n.Encoder {
		z := make([]float64, len(l.Rows))
		for j, r := range l.Rows {
			s := r.B
			for k, idx := range r.Idx {
				s += r.W[k] * in[idx]
			}
			z[j] = s
		}
		pre = append(pre, z)
		if l.ReLU {
			a := make([]float64, len(z))
			for j, v := range z {
				a[j] = max(v, 0)
			}
			in = a
		} else {
			in = z
		}
	}
	return pre, in
}

// Step runs one decoder step in float64.
func (n *Net) Step(i, h []float64) (hNext, logits []float64) {
	_, hNext, logits = n.StepPre(i, h)
	return hNext, logits
}

// StepPre is Step that also returns the hidden layer's pre-activations.
func (n *Net) StepPre(i, h []float64) (pre, hNext, logits []float64) {
	pre = make([]float64, n.Hidden)
	hNext = make([]float64, n.Hidden)
	for j := range hNext {
		s := n.Bih[j] + n.Bhh[j]
		for k, v := range n.Wih[j] {
			s += v * i[k]
		}
		for k, v := range n.Whh[j] {
			s += v * h[k]
		}
		pre[j] = s
		hNext[j] = max(s, 0)
	}
	logits = make([]float64, n.Vocab)
	for z := range logits {
		s := n.Bout[z]
		for k, v := range n.Wout[z] {
			s += v * hNext[k]
		}
		logits[z] = s
	}
	return pre, hNext, logits
}
