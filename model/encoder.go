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
	e := newConvEncoder[T](in, convs, rng)
	c, h, w := featureShape(in, convs)
	e.FC1 = nn.NewLinear[T]("encoder.fc1", c*h*w, fcHidden, rng)
	e.FC2 = nn.NewLinear[T]("encoder.fc2", fcHidden, width, rng)
	return e
}

// newConvEncoder is the encoder's convolutions alone (FC₁ and FC₂ nil),
// for decoders that read the feature map itself.
func newConvEncoder[T ad.Float](in InputConfig, convs []ConvConfig, rng *rand.Rand) encoder[T] {
	e := encoder[T]{in: in}
	ch := in.Channels
	for i, cv := range convs {
		e.Conv = append(e.Conv, nn.NewConv2D[T](fmt.Sprintf("encoder.conv%d", i+1), ch, cv.OutChannels, cv.geom(), rng))
		ch = cv.OutChannels
	}
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
	ps := append(e.convParams(), e.FC1.Params()...)
	return append(ps, e.FC2.Params()...)
}

// convParams lists the convolutions' parameters in file order.
func (e *encoder[T]) convParams() []*ad.Param[T] {
	var ps []*ad.Param[T]
	for _, c := range e.Conv {
		ps = append(ps, c.Params()...)
	}
	return ps
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

// encodeBlock is how many images encode runs through the convolutions at
// a time when it does not record: a block's feature maps stay in cache.
const encodeBlock = 16

// encode runs the encoder on images x [B, C·H·W] (describe on the tape),
// with dropout drop after the convolutions and after FC₁ while training.
// Without a tape to record, a large batch goes through the convolutions a
// block at a time, each on a scratch tape.
func (e *encoder[T]) encode(tp *ad.Tape[T], x *ad.Node[T], drop float64, rng *rand.Rand) *ad.Node[T] {
	b := x.Value.Shape[0]
	ev := nn.NewEval(tp, b)
	ev.Drop, ev.Rng = drop, rng
	if tp.Recording() || len(e.Conv) == 0 || b <= encodeBlock {
		return ev.Node(e.describe(ev, ev.Input(x)))
	}
	return ev.Node(e.describeHead(ev, ev.Input(tp.Const(e.features(tp, x.Value.Data, b)))))
}

// features runs the convolutions on x, encodeBlock images at a time.
func (e *encoder[T]) features(tp *ad.Tape[T], x []T, b int) *ad.Tensor[T] {
	in := e.in
	size := in.Channels * in.Height * in.Width
	fsz := e.FC1.In
	feat := tp.Empty(b, fsz) // every block's rows are copied in
	for lo := 0; lo < b; lo += encodeBlock {
		hi := min(b, lo+encodeBlock)
		st := tp.Scratch()
		ev := nn.NewEval(st, hi-lo)
		out := ev.Node(e.describeConvs(ev, ev.Input(st.Const(ad.FromSlice(x[lo*size:hi*size], hi-lo, size)))))
		copy(feat.Data[lo*fsz:hi*fsz], out.Value.Data)
	}
	return feat
}

// describe is the encoder: the convolutions, FC₁ (each with its ReLU) and
// FC₂, from the image x to the vector the decoder reads first.
func (e *encoder[T]) describe(b nn.Builder, x nn.Value) nn.Value {
	return e.describeHead(b, e.describeConvs(b, x))
}

// describeConvs is the convolutions, each with its ReLU.
func (e *encoder[T]) describeConvs(b nn.Builder, x nn.Value) nn.Value {
	shape := [3]int{e.in.Channels, e.in.Height, e.in.Width}
	for i, c := range e.Conv {
		name := fmt.Sprintf("conv%d", i+1)
		x, shape = c.Describe(b, name, x, shape)
		x = b.Act(name+".relu", nn.ReLU, x)
	}
	return x
}

// describeHead is FC₁ with its ReLU and FC₂ on the features, with dropout
// before each.
func (e *encoder[T]) describeHead(b nn.Builder, x nn.Value) nn.Value {
	return e.describeTail(b, e.describeFC1(b, x))
}

// describeFC1 is FC₁'s pre-activation, from the features after dropout.
func (e *encoder[T]) describeFC1(b nn.Builder, x nn.Value) nn.Value {
	return e.FC1.Describe(b, "fc1", b.Dropout("drop1", x))
}

// describeTail is the encoder from FC₁'s pre-activation z: its ReLU, and
// FC₂ after dropout.
func (e *encoder[T]) describeTail(b nn.Builder, z nn.Value) nn.Value {
	return e.FC2.Describe(b, "fc2", b.Dropout("drop2", b.Act("fc1.relu", nn.ReLU, z)))
}
