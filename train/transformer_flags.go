package train

import (
	"github.com/lenspec/lenspec/model"
	"github.com/spf13/pflag"
)

// TransformerCaptionerFlags are the flags RegisterTransformerCaptionerFlags
// adds, with --arch that selects them: the architecture flags --init
// conflicts with, and those an RNN captioner's run refuses.
var TransformerCaptionerFlags = []string{"d-model", "nhead", "num-decoder-layers", "dim-feedforward", "activation", "norm-first", "memory-positions"}

// RegisterTransformerCaptionerFlags adds the transformer captioner's
// decoder sizes to fs under torch.nn.Transformer's argument names, each
// starting at arch's value (model.DefaultTransformerCaptionerConfig for
// lenspec train captioner --arch transformer's). Its convolutions are the
// CNN-RNN captioner's flags (--conv1, --conv2) and its dropout the run's
// (--dropout).
func RegisterTransformerCaptionerFlags(fs *pflag.FlagSet, arch *model.TransformerCaptionerConfig) {
	fs.IntVar(&arch.DModel, "d-model", arch.DModel, "transformer decoder width, d_model (with --arch transformer)")
	fs.IntVar(&arch.NHead, "nhead", arch.NHead, "attention heads, a divisor of --d-model (with --arch transformer)")
	fs.IntVar(&arch.NumDecoderLayers, "num-decoder-layers", arch.NumDecoderLayers, "transformer decoder layers (with --arch transformer)")
	fs.IntVar(&arch.DimFeedforward, "dim-feedforward", arch.DimFeedforward, "width of each layer's feed-forward block (with --arch transformer)")
	fs.StringVar(&arch.Activation, "activation", arch.Activation, "feed-forward activation: relu or gelu (with --arch transformer)")
	fs.BoolVar(&arch.NormFirst, "norm-first", arch.NormFirst, "layer normalisation before each sublayer (pre-norm) instead of after the residual sum (with --arch transformer)")
	fs.StringVar(&arch.MemoryPositions, "memory-positions", arch.MemoryPositions, "position code of the image features: learned or sinusoidal (with --arch transformer)")
}
