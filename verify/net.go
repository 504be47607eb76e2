package verify

import (
	"fmt"

	"github.com/lenspec/lenspec/model"
)

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

// Lower converts d into a Net. Only decoders made of affine maps and
// ReLUs around a ReLU RNN (model.ReLUDecoder) can be encoded exactly;
// others are refused with the reason.
func Lower(d model.Decoder[float64]) (*Net, error) {
	rd, ok := d.(model.ReLUDecoder)
	if !ok {
		return nil, fmt.Errorf("verify: architecture %s is not made of affine maps and ReLUs: the verifier has no bound rules for it yet", d.Config().Architecture)
	}
	emb, cell, out, err := rd.ReLURNN()
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	in := d.Input()
	if in.Kind != model.Continuous {
		return nil, fmt.Errorf("verify: %s reads %v inputs; only continuous inputs are verified", d.Config().Architecture, in.Kind)
	}
	n := &Net{InputSize: in.Size(), EOS: d.EOS(), Hidden: cell.Hidden, Vocab: d.Vocab(), InMin: in.Min, InMax: in.Max}
	for _, el := range rd.EncoderLayers() {
		switch {
		case el.Conv != nil:
			n.Encoder = append(n.Encoder, convLayer(el))
		case el.Linear != nil:
			n.Encoder = append(n.Encoder, dense(el.Name, el.Linear.W.W.Data, el.Linear.B.W.Data, el.Linear.In, el.ReLU))
		default:
			return nil, fmt.Errorf("verify: encoder layer %q has no weights", el.Name)
		}
	}
	n.Wih = matrix(cell.Wih.W.Data, cell.Hidden)
	n.Whh = matrix(cell.Whh.W.Data, cell.Hidden)
	n.Bih = append([]float64(nil), cell.Bih.W.Data...)
	n.Bhh = append([]float64(nil), cell.Bhh.W.Data...)
	n.Wout = matrix(out.W.W.Data, d.Vocab())
	n.Bout = append([]float64(nil), out.B.W.Data...)
	n.Emb = matrix(emb.W.W.Data, d.Vocab())
	return n, nil
}

// convLayer lowers a convolution over an input of shape el.InShape to
// sparse rows, one per output pixel and channel.
func convLayer(el model.EncoderLayer) Layer {
	conv := el.Conv
	c, h, w := el.InShape[0], el.InShape[1], el.InShape[2]
	g := conv.Geom
	oh, ow := g.Out(h), g.Out(w)
	l := Layer{Name: el.Name, In: c * h * w, ReLU: el.ReLU}
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
	return l
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
