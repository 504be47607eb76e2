package experiment

import (
	"context"
	"fmt"

	"github.com/lenspec/lenspec/captions"
	"github.com/lenspec/lenspec/mnist"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
)

// Sources says where the image data sets come from: MNIST (fetched into
// MNISTDir when missing) and Fashion-MNIST. The CLI fills it from its
// global flags; a library user fills it once and builds every split from
// it.
type Sources struct {
	// MNISTDir holds MNIST's IDX files; mnist.Fetch fills it if needed.
	MNISTDir string
	// FashionDir holds Fashion-MNIST ("": mnist.FashionDir, Debian's
	// dataset-fashion-mnist).
	FashionDir string
	// Logf, if not nil, hears about downloads.
	Logf func(format string, args ...any)
}

// mnist fetches MNIST if needed and loads its splits.
func (s Sources) mnist(ctx context.Context) (train, test *mnist.Set, err error) {
	if err := mnist.Fetch(ctx, s.MNISTDir, s.logf); err != nil {
		return nil, nil, err
	}
	return mnist.Load(s.MNISTDir)
}

func (s Sources) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

// MultiMNIST builds the Multi-MNIST splits (the standard sizes) drawn with
// seed.
func (s Sources) MultiMNIST(ctx context.Context, seed uint64) (train, test *multimnist.Dataset, err error) {
	mtr, mte, err := s.mnist(ctx)
	if err != nil {
		return nil, nil, err
	}
	return multimnist.Build(mtr, mte, multimnist.DefaultTrain, multimnist.DefaultTest, seed)
}

// CaptionerTraining are the sources the Multi-MNIST captioner reading in
// trains and is evaluated on (train.Captioner): the training split, with
// its canvases shifted horizontally when shift is set (digits stay
// inside, labels unchanged), the same split unshifted, and the test split,
// generated with seed.
func (s Sources) CaptionerTraining(ctx context.Context, seed uint64, shift bool, in model.InputSpec) (src, trainEval, test *multimnist.Source[float32], err error) {
	tr, te, err := s.MultiMNIST(ctx, seed)
	if err != nil {
		return nil, nil, nil, err
	}
	return CaptionerSources(tr, te, shift, in)
}

// CaptionerSources are CaptionerTraining's sources on splits already built
// (tr, te), for a caller that reads the test split in float64 too (the
// certify probe) and builds the splits once.
func CaptionerSources(tr, te *multimnist.Dataset, shift bool, in model.InputSpec) (src, trainEval, test *multimnist.Source[float32], err error) {
	if src, err = multimnist.NewSource[float32](tr, in.Min, in.Max, shift); err != nil {
		return nil, nil, nil, err
	}
	if trainEval, err = multimnist.NewSource[float32](tr, in.Min, in.Max, false); err != nil {
		return nil, nil, nil, err
	}
	test, err = multimnist.NewSource[float32](te, in.Min, in.Max, false)
	return src, trainEval, test, err
}

// Captions builds the captions data set's splits (the standard sizes)
// from MNIST and Fashion-MNIST, drawn with seed and caption lengths opt.
func (s Sources) Captions(ctx context.Context, seed uint64, opt captions.Options) (train, test *captions.Dataset, err error) {
	dtr, dte, err := s.mnist(ctx)
	if err != nil {
		return nil, nil, err
	}
	fdir := s.FashionDir
	if fdir == "" {
		fdir = mnist.FashionDir
	}
	ftr, fte, err := mnist.LoadFashion(fdir)
	if err != nil {
		return nil, nil, err
	}
	return captions.Build(dtr, dte, ftr, fte, captions.DefaultTrain, captions.DefaultTest, seed, opt)
}

// ImageData is the split ("train" or "test") of the data set a model
// reading in runs on, as an experiment's data: the captions data set
// (skewed lengths) for a model reading its canvases, Multi-MNIST
// otherwise.
func (s Sources) ImageData(ctx context.Context, in model.InputSpec, seed uint64, split string) (Data, error) {
	if split != "train" && split != "test" {
		return Data{}, fmt.Errorf("split %q: want train or test", split)
	}
	if CheckCaptions(in) == nil {
		tr, te, err := s.Captions(ctx, seed, captions.Skewed())
		if err != nil {
			return Data{}, err
		}
		if split == "train" {
			te = tr
		}
		return Captions(te, split, "skewed", seed, in)
	}
	if err := CheckMultiMNIST(in); err != nil {
		return Data{}, err
	}
	tr, te, err := s.MultiMNIST(ctx, seed)
	if err != nil {
		return Data{}, err
	}
	if split == "train" {
		te = tr
	}
	return MultiMNIST(te, split, seed, in)
}

// CaptionLengths is the captions data set's caption-length distribution
// named name: "skewed" (short captions most, as COCO) or "flat".
func CaptionLengths(name string) (captions.Options, error) {
	switch name {
	case "skewed":
		return captions.Skewed(), nil
	case "flat":
		return captions.Flat(), nil
	}
	return captions.Options{}, fmt.Errorf("lengths %q: want skewed or flat", name)
}

// CaptionSplit is the split ("train" or "test") of the captions data set
// drawn with seed and the caption lengths named (CaptionLengths).
func (s Sources) CaptionSplit(ctx context.Context, seed uint64, lengths, split string) (*captions.Dataset, error) {
	opt, err := CaptionLengths(lengths)
	if err != nil {
		return nil, err
	}
	if split != "train" && split != "test" {
		return nil, fmt.Errorf("split %q: want train or test", split)
	}
	tr, te, err := s.Captions(ctx, seed, opt)
	if split == "train" {
		return tr, err
	}
	return te, err
}

// CaptionTraining are the sources a captioner reading in trains and is
// evaluated on: the captions data set's training split with the caption
// lengths named (CaptionLengths), and the test split every model is
// evaluated on (skewed), both generated with seed.
func (s Sources) CaptionTraining(ctx context.Context, seed uint64, lengths string, in model.InputSpec) (tr, te *captions.Source[float32], err error) {
	opt, err := CaptionLengths(lengths)
	if err != nil {
		return nil, nil, err
	}
	trd, _, err := s.Captions(ctx, seed, opt)
	if err != nil {
		return nil, nil, err
	}
	_, ted, err := s.Captions(ctx, seed, captions.Skewed())
	if err != nil {
		return nil, nil, err
	}
	if tr, err = captions.NewSource[float32](trd, in.Min, in.Max); err != nil {
		return nil, nil, err
	}
	te, err = captions.NewSource[float32](ted, in.Min, in.Max)
	return tr, te, err
}
