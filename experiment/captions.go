package experiment

import (
	"fmt"

	"github.com/lenspec/lenspec/captions"
	"github.com/lenspec/lenspec/model"
)

// Captions is a split of the word-captioning data set (package captions)
// as an experiment's data: canvases mapped to the model's input range,
// labelled with their captions' tokens. lengths names the caption-length
// distribution it was drawn from ("skewed", the default, or "flat"), which
// records keep apart.
func Captions(ds *captions.Dataset, split, lengths string, seed uint64, in model.InputSpec) (Data, error) {
	if err := CheckCaptions(in); err != nil {
		return Data{}, err
	}
	src, err := captions.NewSource[float64](ds, in.Min, in.Max)
	if err != nil {
		return Data{}, err
	}
	name := "captions"
	if lengths != "" && lengths != "skewed" {
		name += "-" + lengths
	}
	return Data{Ref: DataRef{Name: name, Split: split, Seed: seed}, Source: src}, nil
}

// CheckCaptions reports whether a model reading in can run on the
// captions data set's canvases.
func CheckCaptions(in model.InputSpec) error {
	if in.Kind != model.Continuous || len(in.Shape) != 3 || in.Shape[0] != 1 || in.Shape[1] != captions.Height || in.Shape[2] != captions.Width {
		return fmt.Errorf("the model reads %v %v inputs; the captions data are 1x%dx%d images", in.Kind, in.Shape, captions.Height, captions.Width)
	}
	return nil
}
