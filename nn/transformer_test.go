package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

// randomise sets every parameter to N(0, scale²) values, so that biases,
// norms and all are exercised (and no ReLU sits at a tie).
func randomise[T ad.Float](rng *rand.Rand, scale float64, ps []*ad.Param[T]) {
	for _, p := range ps {
		for i := range p.W.Data {
			p.W.Data[i] = T(scale * rng.NormFloat64())
		}
	}
}

func TestTransformerLayerGradients(t *testing.T) {
	const S, T, B, D = 3, 4, 2, 6
	memPad := []bool{false, false, true, false, false, false} // [B, S]
	tgtPad := []bool{false, false, false, true, false, false, false, false}
	for _, nf := range []bool{false, true} {
		for _, act := range []string{"relu", "gelu"} {
			c := TransformerConfig{Dim: D, Heads: 2, FF: 5, NormFirst: nf, Activation: act}
			rng := rand.New(rand.NewPCG(7, 1))
			tag := fmt.Sprintf("norm_first=%v %s", nf, act)

			ln := NewLayerNorm[float64]("ln", D)
			randomise(rng, 1, ln.Params())
			checkLayerGrads(t, "LayerNorm", rng, ln.Params(), []*ad.Tensor[float64]{randTensor(rng, T, B, D)},
				func(tp *ad.Tape[float64], in []*ad.Node[float64]) *ad.Node[float64] { return ln.Forward(tp, in[0]) })

			mha := NewMultiheadAttention[float64]("attn", D, 3, rng)
			randomise(rng, 0.5, mha.Params())
			checkLayerGrads(t, "MultiheadAttention self "+tag, rng, mha.Params(), []*ad.Tensor[float64]{randTensor(rng, T, B, D)},
				func(tp *ad.Tape[float64], in []*ad.Node[float64]) *ad.Node[float64] {
					return mha.Forward(tp, in[0], in[0], in[0], ad.AttentionOptions{Causal: true, KeyPad: tgtPad})
				})
			checkLayerGrads(t, "MultiheadAttention cross", rng, mha.Params(), []*ad.Tensor[float64]{randTensor(rng, T, B, D), randTensor(rng, S, B, D)},
				func(tp *ad.Tape[float64], in []*ad.Node[float64]) *ad.Node[float64] {
					return mha.Forward(tp, in[0], in[1], in[1], ad.AttentionOptions{KeyPad: memPad})
				})
			checkLayerGrads(t, "MultiheadAttention three inputs", rng, mha.Params(), []*ad.Tensor[float64]{randTensor(rng, T, B, D), randTensor(rng, S, B, D), randTensor(rng, S, B, D)},
				func(tp *ad.Tape[float64], in []*ad.Node[float64]) *ad.Node[float64] {
					return mha.Forward(tp, in[0], in[1], in[2], ad.AttentionOptions{})
				})

			enc := NewTransformerEncoderLayer[float64]("enc", c, rng)
			randomise(rng, 0.5, enc.Params())
			checkLayerGrads(t, "encoder layer "+tag, rng, enc.Params(), []*ad.Tensor[float64]{randTensor(rng, S, B, D)},
				func(tp *ad.Tape[float64], in []*ad.Node[float64]) *ad.Node[float64] {
					return enc.Forward(tp, in[0], memPad, Dropout{})
				})

			dec := NewTransformerDecoderLayer[float64]("dec", c, rng)
			randomise(rng, 0.5, dec.Params())
			checkLayerGrads(t, "decoder layer "+tag, rng, dec.Params(), []*ad.Tensor[float64]{randTensor(rng, T, B, D), randTensor(rng, S, B, D)},
				func(tp *ad.Tape[float64], in []*ad.Node[float64]) *ad.Node[float64] {
					return dec.Forward(tp, in[0], in[1], tgtPad, memPad, Dropout{})
				})
			// Training: dropout on the residual branches, inside the
			// feed-forward block and on the attention weights, the same
			// masks at every evaluation.
			train := func() Dropout { return Dropout{P: 0.3, Rng: rand.New(rand.NewPCG(5, 5))} }
			checkLayerGrads(t, "decoder layer dropout "+tag, rng, dec.Params(), []*ad.Tensor[float64]{randTensor(rng, T, B, D), randTensor(rng, S, B, D)},
				func(tp *ad.Tape[float64], in []*ad.Node[float64]) *ad.Node[float64] {
					return dec.Forward(tp, in[0], in[1], tgtPad, memPad, train())
				})
			// Three cached steps (one, then two at once, then one of a
			// dropped batch row's cache), every output weighed: the
			// gradient through the cache.
			checkLayerGrads(t, "decoder layer steps "+tag, rng, dec.Params(), []*ad.Tensor[float64]{randTensor(rng, B, D), randTensor(rng, 2, B, D), randTensor(rng, 1, D), randTensor(rng, S, B, D)},
				func(tp *ad.Tape[float64], in []*ad.Node[float64]) *ad.Node[float64] {
					cache := dec.Start(tp, in[3], memPad, 2)
					y0, cache := dec.Step(tp, in[0], cache, Dropout{})
					y1, cache := dec.Step(tp, in[1], cache, Dropout{})
					y2, _ := dec.Step(tp, in[2], cache.Rows(tp, []int{1}), Dropout{})
					return tp.Concat(0, tp.Reshape(y0, B*D), tp.Reshape(y1, 2*B*D), tp.Reshape(y2, D))
				})
		}
	}
	rng := rand.New(rand.NewPCG(7, 2))
	c := TransformerConfig{Dim: D, Heads: 2, FF: 5, NormFirst: true, Activation: "gelu"}
	enc, dec := NewTransformerEncoder[float64]("encoder", c, 2, true, rng), NewTransformerDecoder[float64]("decoder", c, 2, true, rng)
	randomise(rng, 0.5, append(enc.Params(), dec.Params()...))
	checkLayerGrads(t, "encoder and decoder stacks, cached steps", rng, append(enc.Params(), dec.Params()...), []*ad.Tensor[float64]{randTensor(rng, S, B, D), randTensor(rng, 2, B, D)},
		func(tp *ad.Tape[float64], in []*ad.Node[float64]) *ad.Node[float64] {
			cache := dec.Start(tp, enc.Forward(tp, in[0], memPad, Dropout{}), memPad, 1)
			y0, cache := dec.Step(tp, tp.Slice(in[1], 0, 0, 1), cache, Dropout{})
			y1, _ := dec.Step(tp, tp.Slice(in[1], 0, 1, 2), cache.Rows(tp, []int{1, 1}), Dropout{})
			return tp.Concat(1, y0, y1)
		})
	pos := NewLearnedPositions[float64]("pos", 6, D, rng)
	checkLayerGrads(t, "learned positions", rng, pos.Params(), []*ad.Tensor[float64]{randTensor(rng, T, B, D)},
		func(tp *ad.Tape[float64], in []*ad.Node[float64]) *ad.Node[float64] { return pos.Add(tp, in[0], 2) })
	checkLayerGrads(t, "sinusoidal positions", rng, nil, []*ad.Tensor[float64]{randTensor(rng, T, B, D)},
		func(tp *ad.Tape[float64], in []*ad.Node[float64]) *ad.Node[float64] {
			return tp.Tanh(Sinusoidal[float64]{Dim: D}.Add(tp, in[0], 1))
		})
}

func TestSinusoidalPositions(t *testing.T) {
	const d = 6
	p := Sinusoidal[float64]{Dim: d}
	all := p.Table(0, 9)
	for pos := 0; pos < 9; pos++ {
		for i := 0; i < d/2; i++ {
			a := float64(pos) / math.Pow(10000, float64(2*i)/d)
			if all.Data[pos*d+2*i] != math.Sin(a) || all.Data[pos*d+2*i+1] != math.Cos(a) {
				t.Fatalf("PE[%d, %d:%d] = %v, want sin, cos of %v", pos, 2*i, 2*i+2, all.Data[pos*d+2*i:pos*d+2*i+2], a)
			}
		}
	}
	// A step's codes are the whole sequence's at its position.
	tp := ad.NewTape[float64](false)
	x := tp.Const(ad.New[float64](2, 3, d))
	got := p.Add(tp, x, 4).Value.Data
	for s := 0; s < 2; s++ {
		for b := 0; b < 3; b++ {
			for j := 0; j < d; j++ {
				if got[(s*3+b)*d+j] != all.Data[(4+s)*d+j] {
					t.Fatalf("step %d row %d: code %v, want position %d's %v", s, b, got[(s*3+b)*d:(s*3+b+1)*d], 4+s, all.Data[(4+s)*d:(4+s+1)*d])
				}
			}
		}
	}
}

// TestCachedDecodingMatchesFull decodes a two-layer decoder step by step
// through its caches, drops a batch row half way (Rows), and requires the
// outputs of the whole sequence decoded at once with the causal mask: to
// rounding, since OpenBLAS sums a one-row product in another order than a
// many-row one at these widths (measured: 7e-15 in float64, 7e-6 in
// float32); the pure-Go build's are equal exactly.
func TestCachedDecodingMatchesFull(t *testing.T) {
	t.Run("float64", func(t *testing.T) { cachedMatchesFull[float64](t, 1e-12) })
	t.Run("float32", func(t *testing.T) { cachedMatchesFull[float32](t, 2e-5) })
}

func cachedMatchesFull[T ad.Float](t *testing.T, tol float64) {
	const S, L, B, D = 5, 9, 3, 96
	rng := rand.New(rand.NewPCG(11, 3))
	memPad := []bool{false, false, false, false, false, false, false, false, true, true, false, false, false, false, true}
	for _, nf := range []bool{false, true} {
		c := TransformerConfig{Dim: D, Heads: 4, FF: 200, NormFirst: nf}
		dec := NewTransformerDecoder[T]("decoder", c, 2, true, rng)
		randomise(rng, 0.5, dec.Params())
		tp := ad.NewTape[T](false)
		mem := tp.Const(ad.Convert[T](randTensor(rng, S, B, D)))
		x := ad.Convert[T](randTensor(rng, L, B, D))
		full := dec.Forward(tp, tp.Const(x), mem, nil, memPad, Dropout{})
		cache := dec.Start(tp, mem, memPad, 4) // grows past 4 steps
		rows := []int{0, 1, 2}
		var worst float64
		for s := 0; s < L; s++ {
			if s == 5 { // row 1 finished
				rows = []int{0, 2}
				cache = cache.Rows(tp, []int{0, 2})
			}
			step := ad.New[T](len(rows), D)
			for k, b := range rows {
				copy(step.Data[k*D:(k+1)*D], x.Data[(s*B+b)*D:(s*B+b+1)*D])
			}
			var h *ad.Node[T]
			h, cache = dec.Step(tp, tp.Const(step), cache, Dropout{})
			for k, b := range rows {
				for j := 0; j < D; j++ {
					got, want := float64(h.Value.Data[k*D+j]), float64(full.Value.Data[(s*B+b)*D+j])
					worst = math.Max(worst, math.Abs(got-want))
					if math.Abs(got-want) > tol*(1+math.Abs(want)) {
						t.Fatalf("norm_first=%v step %d row %d unit %d: cached %v, full %v", nf, s, b, j, got, want)
					}
				}
			}
		}
		t.Logf("norm_first=%v: largest difference %.3g", nf, worst)
	}
}

// BenchmarkDecoderSteps decodes n steps of a two-layer decoder (width 256,
// 8 heads, batch 16, float32) through its caches and reports the time per
// step: with the cache it grows with n only through the attention's O(t).
func BenchmarkDecoderSteps(b *testing.B) {
	const S, B, D = 20, 16, 256
	defer ad.SetBLASThreads(ad.BLASThreads())
	ad.SetBLASThreads(1) // as lenspec runs its GEMMs
	rng := rand.New(rand.NewPCG(1, 1))
	c := TransformerConfig{Dim: D, Heads: 8, FF: 1024}
	dec := NewTransformerDecoder[float32]("decoder", c, 2, false, rng)
	mem := ad.Convert[float32](randTensor(rng, S, B, D))
	x := ad.Convert[float32](randTensor(rng, B, D))
	for _, n := range []int{32, 256} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			arena := ad.NewArena[float32]()
			for i := 0; i < b.N; i++ {
				arena.Reset()
				tp := ad.NewTape[float32](false).Use(arena)
				cache := dec.Start(tp, tp.Const(mem), nil, n)
				for s := 0; s < n; s++ {
					_, cache = dec.Step(tp, tp.Const(x), cache, Dropout{})
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		})
	}
}

func TestTransformerConfigValidate(t *testing.T) {
	ok := TransformerConfig{Dim: 8, Heads: 2, FF: 16}
	for _, c := range []struct {
		name string
		edit func(*TransformerConfig)
		want string // "" for valid
	}{
		{"defaults", func(*TransformerConfig) {}, ""},
		{"gelu, pre-norm, eps", func(c *TransformerConfig) { c.Activation, c.NormFirst, c.Eps = "gelu", true, 1e-6 }, ""},
		{"no width", func(c *TransformerConfig) { c.Dim = 0 }, "transformer: d_model 0 is not positive"},
		{"heads do not divide", func(c *TransformerConfig) { c.Heads = 3 }, "transformer: nhead 3 does not divide d_model 8"},
		{"no heads", func(c *TransformerConfig) { c.Heads = 0 }, "transformer: nhead 0 does not divide d_model 8"},
		{"no feed-forward", func(c *TransformerConfig) { c.FF = -1 }, "transformer: dim_feedforward -1 is not positive"},
		{"activation", func(c *TransformerConfig) { c.Activation = "tanh" }, `transformer: activation "tanh" is neither relu nor gelu`},
		{"eps", func(c *TransformerConfig) { c.Eps = math.Inf(1) }, "transformer: layer_norm_eps +Inf is not a positive number"},
	} {
		cfg := ok
		c.edit(&cfg)
		err := cfg.Validate()
		if (err == nil) != (c.want == "") || (err != nil && err.Error() != c.want) {
			t.Errorf("%s: Validate() = %v, want %q", c.name, err, c.want)
		}
	}
}
