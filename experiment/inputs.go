package experiment

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
)

// Inputs is data given as files rather than a dataset: the user's own
// inputs to attack, verify or bound. Each file is a PNG image (one
// channel, the model's size) or a safetensors tensor of the model's input
// shape. With no label to go by, a sample's label is the model's own
// greedy output for it, so K̂ defaults to the input's own output length.
// The data's identity in the records' keys is the files' names and the
// sha256 of their values.
func Inputs(ctx context.Context, d model.Decoder[float64], paths []string, maxSteps int) (Data, error) {
	if len(paths) == 0 {
		return Data{}, errors.New("no input files")
	}
	in := d.Input()
	src := &inputSource{dim: in.Size()}
	h := sha256.New()
	var names []string
	for _, p := range paths {
		var x []float64
		var err error
		if strings.EqualFold(filepath.Ext(p), ".png") {
			if in.Kind != model.Continuous || len(in.Shape) != 3 || in.Shape[0] != 1 {
				return Data{}, fmt.Errorf("%s: the model reads %v %v inputs; PNG inputs need one-channel images", p, in.Kind, in.Shape)
			}
			x, err = multimnist.ReadPNG(p, in.Shape[1], in.Shape[2], in.Min, in.Max)
		} else {
			x, err = ReadWitness(p, in)
		}
		if err != nil {
			return Data{}, err
		}
		if len(x) != src.dim {
			return Data{}, fmt.Errorf("%s: %d values, the model reads %d", p, len(x), src.dim)
		}
		for _, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < in.Min || v > in.Max {
				return Data{}, fmt.Errorf("%s: value %v outside the model's input range [%g, %g]", p, v, in.Min, in.Max)
			}
			binary.Write(h, binary.LittleEndian, v)
		}
		src.xs = append(src.xs, x...)
		names = append(names, filepath.Base(p))
	}
	res, err := model.Decode(ctx, d, model.Batch[float64]{X: src.xs}, maxSteps)
	if err != nil {
		return Data{}, err
	}
	for _, r := range res {
		src.labels = append(src.labels, r.Tokens)
	}
	ref := DataRef{Name: "inputs", Split: strings.Join(names, ","), SHA256: hex.EncodeToString(h.Sum(nil))}
	return Data{Ref: ref, Source: src}, nil
}

// inputSource serves the inputs of Inputs.
type inputSource struct {
	dim    int
	xs     []float64
	labels [][]int
}

func (s *inputSource) Len() int { return len(s.labels) }

func (s *inputSource) Batch(idx []int, _ *rand.Rand) (x []float64, tokens [][]int, labels [][]int) {
	for _, i := range idx {
		x = append(x, s.xs[i*s.dim:(i+1)*s.dim]...)
		labels = append(labels, s.labels[i])
	}
	return x, nil, labels
}
