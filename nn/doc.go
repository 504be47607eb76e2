// Package nn holds lenspec's layers. A layer owns its parameters (as
// ad.Params with PyTorch-style names and layouts, so safetensors files map
// one to one onto PyTorch state dicts) and composes ad operations in its
// forward pass; the gradient comes from the ops. The verifier's bound rules
// for a layer live beside its forward pass.
package nn

import (
	"math"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
)

// initUniform fills p with U(−1/√fanIn, 1/√fanIn), PyTorch's default for
// Linear, Conv2d and RNNCell, so a model trained here starts where a
// PyTorch user would expect.
// A nil rng leaves p zero, for models whose weights are loaded next.
func initUniform[T ad.Float](p *ad.Param[T], fanIn int, rng *rand.Rand) {
	if rng == nil {
		return
	}
	b := 1 / math.Sqrt(float64(fanIn))
	for i := range p.W.Data {
		p.W.Data[i] = T((2*rng.Float64() - 1) * b)
	}
}
