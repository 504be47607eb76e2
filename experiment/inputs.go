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
	var names []string
	var xs [][]float64
	for _, p := range paths {
		x, err := readInput(d.Input(), p)
		if err != nil {
			return Data{}, err
		}
		xs, names = append(xs, x), append(names, filepath.Base(p))
	}
	src, err := newInputSource(ctx, d, xs, maxSteps)
	if err != nil {
		return Data{}, err
	}
	return Data{Ref: DataRef{Name: "inputs", Split: strings.Join(names, ","), SHA256: valuesSHA256(xs...)}, Source: src}, nil
}

// readInput reads one input file (PNG or safetensors) and checks it
// against the model's input: its size and range.
func readInput(in model.InputSpec, p string) ([]float64, error) {
	var x []float64
	var err error
	if strings.EqualFold(filepath.Ext(p), ".png") {
		if in.Kind != model.Continuous || len(in.Shape) != 3 || in.Shape[0] != 1 {
			return nil, fmt.Errorf("%s: the model reads %v %v inputs; PNG inputs need one-channel images", p, in.Kind, in.Shape)
		}
		x, err = multimnist.ReadPNG(p, in.Shape[1], in.Shape[2], in.Min, in.Max)
	} else {
		x, err = ReadWitness(p, in)
	}
	if err != nil {
		return nil, err
	}
	if err := checkInput(in, x); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return x, nil
}

// checkInput checks an input's size and values against the model's.
func checkInput(in model.InputSpec, x []float64) error {
	if len(x) != in.Size() {
		return fmt.Errorf("%d values, the model reads %d", len(x), in.Size())
	}
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < in.Min || v > in.Max {
			return fmt.Errorf("value %v outside the model's input range [%g, %g]", v, in.Min, in.Max)
		}
	}
	return nil
}

// valuesSHA256 is the hex sha256 of the values, in order, as
// little-endian float64 bits: the identity of data given by value.
func valuesSHA256(vs ...[]float64) string {
	h := sha256.New()
	var b [8]byte
	for _, v := range vs {
		for _, f := range v {
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(f))
			h.Write(b[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// inputSource serves inputs given by value, each labelled with the
// model's own greedy output for it.
type inputSource struct {
	dim    int
	xs     []float64
	labels [][]int
}

func newInputSource(ctx context.Context, d model.Decoder[float64], xs [][]float64, maxSteps int) (*inputSource, error) {
	src := &inputSource{dim: d.Input().Size()}
	for _, x := range xs {
		src.xs = append(src.xs, x...)
	}
	res, err := model.Decode(ctx, d, model.Batch[float64]{X: src.xs}, maxSteps)
	if err != nil {
		return nil, err
	}
	for _, r := range res {
		src.labels = append(src.labels, r.Tokens)
	}
	return src, nil
}

func (s *inputSource) Len() int { return len(s.labels) }

func (s *inputSource) Batch(idx []int, _ *rand.Rand) (x []float64, tokens [][]int, labels [][]int) {
	for _, i := range idx {
		x = append(x, s.xs[i*s.dim:(i+1)*s.dim]...)
		labels = append(labels, s.labels[i])
	}
	return x, nil, labels
}
