package model

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/nn"
)

// encoder is the image encoder both captioners share: convolutions, each
// followed by ReLU, then FC₁ with ReLU and FC₂ to the embedding width. Its
// exported fields are promoted into Captioner and ShowTell.
type encoder[T ad.Float] struct {
	Conv []*nn.Conv2D[T]
	FC1  *nn.Linear[T]
	FC2  *nn.Linear[T]
	in   InputConfig
}

func newEncoder[T ad.Float](in InputConfig, convs []ConvConfig, fcHidden, width int, rng *rand.Rand) encoder[T] {
	e := encoder[T]{in: in}
	ch := in.Channels
	for i, cv := range convs {
		e.Conv = append(e.Conv, nn.NewConv2D[T](fmt.Sprintf("encoder.conv%d", i+1), ch, cv.OutChannels, cv.geom(), rng))
		ch = cv.OutChannels
	}
	c, h, w := featureShape(in, convs)
	e.FC1 = nn.NewLinear[T]("encoder.fc1", c*h*w, fcHidden, rng)
	e.FC2 = nn.NewLinear[T]("encoder.fc2", fcHidden, width, rng)
	return e
}

// featureShape is the last convolution's output [C, H, W] for images in.
func featureShape(in InputConfig, convs []ConvConfig) (ch, h, w int) {
	ch, h, w = in.Channels, in.Height, in.Width
	for _, cv := range convs {
		h, w, ch = cv.geom().Out(h), cv.geom().Out(w), cv.OutChannels
	}
	return ch, h, w
}

// params lists the encoder's parameters in file order.
func (e *encoder[T]) params() []*ad.Param[T] {
	var ps []*ad.Param[T]
	for _, c := range e.Conv {
		ps = append(ps, c.Params()...)
	}
	ps = append(ps, e.FC1.Params()...)
	return append(ps, e.FC2.Params()...)
}

// imageBatch checks that in holds a batch of images of the encoder's size
// for the architecture arch and returns the batch size.
func (e *encoder[T]) imageBatch(arch string, in Input[T]) (int, error) {
	if in.X == nil || in.Tokens != nil || in.Soft != nil || in.Embedded != nil {
		return 0, fmt.Errorf("%s reads images (continuous inputs), not token sequences", arch)
	}
	size := e.in.Channels * e.in.Height * e.in.Width
	if len(in.X.Value.Shape) < 1 || in.X.Value.Len() != in.X.Value.Shape[0]*size {
		return 0, fmt.Errorf("%s: input of shape %v, want [B, %d]", arch, in.X.Value.Shape, size)
	}
	if in.Dropout > 0 && in.Rng == nil {
		return 0, errors.New("dropout needs a random source")
	}
	return in.X.Value.Shape[0], nil
}

// encodeBlock is how many images the convolutions of inference take at a
// time: their intermediate activations then stay in the core's cache
// (16 Multi-MNIST canvases: 400 KB after conv1) instead of streaming
// through memory, which bound them at a whole chunk of 256.
const encodeBlock = 16

// encode maps images x [B, C·H·W] to the embedding, with dropout
// (probability drop, masks from rng) on the fully connected layers'
// inputs when training.
func (e *encoder[T]) encode(tp *ad.Tape[T], x *ad.Node[T], drop float64, rng *rand.Rand) *ad.Node[T] {
	in := e.in
	b := x.Value.Shape[0]
	var a *ad.Node[T]
	if tp.Recording() || len(e.Conv) == 0 || b <= encodeBlock {
		a = tp.Reshape(x, b, in.Channels, in.Height, in.Width)
		for _, c := range e.Conv {
			a = c.ForwardReLU(tp, a)
		}
		a = tp.Reshape(a, b, a.Value.Len()/b)
	} else {
		a = tp.Const(e.features(tp, x.Value.Data, b))
	}
	a = e.FC1.ForwardReLU(tp, tp.Dropout(a, drop, rng))
	return e.FC2.Forward(tp, tp.Dropout(a, drop, rng))
}

// features runs the convolutions of inference block by block (see
// encodeBlock) into one [B, C·H·W] tensor for the fully connected layers;
// each block's last convolution writes its rows of it directly. Needs at
// least one convolution.
func (e *encoder[T]) features(tp *ad.Tape[T], x []T, b int) *ad.Tensor[T] {
	in := e.in
	size := in.Channels * in.Height * in.Width
	fsz := e.FC1.In
	feat := tp.Empty(b, fsz) // every block's rows are copied in
	for lo := 0; lo < b; lo += encodeBlock {
		hi := min(b, lo+encodeBlock)
		st := tp.Scratch()
		a := st.Const(ad.FromSlice(x[lo*size:hi*size], hi-lo, in.Channels, in.Height, in.Width))
		last := len(e.Conv) - 1
		for _, cv := range e.Conv[:last] {
			a = cv.ForwardReLU(st, a)
		}
		e.Conv[last].ForwardReLUInto(st, a, feat.Data[lo*fsz:hi*fsz]) // the block's rows, in place
	}
	return feat
}

// lower describes the convolutions, FC₁ (each with its ReLU) and FC₂ to b
// and returns FC₂'s output.
func (e *encoder[T]) lower(b nn.Builder, x nn.Value) nn.Value {
	shape := [3]int{e.in.Channels, e.in.Height, e.in.Width}
	for i, c := range e.Conv {
		name := fmt.Sprintf("conv%d", i+1)
		x = b.Act(name+".relu", nn.ReLU, c.Lower(b, name, x, shape))
		shape = [3]int{c.Out, c.Geom.Out(shape[1]), c.Geom.Out(shape[2])}
	}
	x = b.Act("fc1.relu", nn.ReLU, e.FC1.Lower(b, "fc1", x))
	return e.FC2.Lower(b, "fc2", x)
}
