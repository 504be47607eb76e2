package ad

import (
	"math"
	"math/rand/v2"
	"testing"
)

// attentionLoop is Attention's naive reference: every head, query and key
// one scalar at a time, in float64; with dropout, one draw for every
// weight, batch row by batch row, head by head, query by query.
func attentionLoop(q, k, v []float64, tq, tk, b, d, heads int, mask AttentionOptions) []float64 {
	dh := d / heads
	out := make([]float64, tq*b*d)
	for bi := 0; bi < b; bi++ {
		for h := 0; h < heads; h++ {
			for i := 0; i < tq; i++ {
				scores := make([]float64, tk)
				seen := make([]bool, tk)
				m := math.Inf(-1)
				for j := 0; j < tk; j++ {
					if (mask.Causal && j > i+tk-tq) || (mask.KeyPad != nil && mask.KeyPad[bi*tk+j]) {
						continue
					}
					for c := 0; c < dh; c++ {
						scores[j] += q[(i*b+bi)*d+h*dh+c] * k[(j*b+bi)*d+h*dh+c]
					}
					scores[j] /= math.Sqrt(float64(dh))
					seen[j] = true
					m = math.Max(m, scores[j])
				}
				var sum float64
				for j := range scores {
					if seen[j] {
						scores[j] = math.Exp(scores[j] - m)
						sum += scores[j]
					}
				}
				for j := range scores {
					w := scores[j] / sum
					if mask.Dropout > 0 {
						if mask.Rng.Float64() < mask.Dropout {
							w = 0
						}
						w /= 1 - mask.Dropout
					}
					if !seen[j] {
						continue
					}
					for c := 0; c < dh; c++ {
						out[(i*b+bi)*d+h*dh+c] += w * v[(j*b+bi)*d+h*dh+c]
					}
				}
			}
		}
	}
	return out
}

// padFlags sets the last n[bi] keys of each batch row bi as padding.
func padFlags(tk int, n ...int) []bool {
	pad := make([]bool, len(n)*tk)
	for bi, p := range n {
		for j := tk - p; j < tk; j++ {
			pad[bi*tk+j] = true
		}
	}
	return pad
}

func TestAttentionMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, c := range []struct {
		name                string
		tq, tk, b, d, heads int
		causal              bool
		pad                 []int
		dropout             float64
	}{
		{"one head", 4, 4, 1, 3, 1, false, nil, 0},
		{"heads", 5, 7, 3, 12, 4, false, nil, 0},
		{"causal", 6, 6, 2, 8, 2, true, nil, 0},
		{"causal cache step", 1, 9, 3, 8, 2, true, nil, 0},
		{"causal newest steps", 3, 9, 2, 6, 3, true, nil, 0},
		{"padding", 4, 6, 3, 8, 2, false, []int{0, 2, 5}, 0},
		{"causal padding, a row padded out", 5, 5, 2, 4, 2, true, []int{5, 1}, 0},
		{"wide", 9, 33, 2, 64, 8, true, []int{0, 7}, 0},
		{"dropout", 5, 6, 2, 8, 2, true, []int{1, 0}, 0.3},
	} {
		t.Run(c.name, func(t *testing.T) {
			mask := AttentionOptions{Causal: c.causal}
			if c.pad != nil {
				mask.KeyPad = padFlags(c.tk, c.pad...)
			}
			q := randTensor(rng, []int{c.tq, c.b, c.d})
			k := randTensor(rng, []int{c.tk, c.b, c.d})
			v := randTensor(rng, []int{c.tk, c.b, c.d})
			draws := func() AttentionOptions {
				if c.dropout > 0 {
					mask.Dropout, mask.Rng = c.dropout, rand.New(rand.NewPCG(1, 1))
				}
				return mask
			}
			want := attentionLoop(q.Data, k.Data, v.Data, c.tq, c.tk, c.b, c.d, c.heads, draws())
			tp := NewTape[float64](false).Use(dirtyArena[float64](1 << 16))
			got := tp.Attention(tp.Const(q), tp.Const(k), tp.Const(v), c.heads, draws()).Value
			mask = draws()
			tp32 := NewTape[float32](false).Use(dirtyArena[float32](1 << 16))
			got32 := tp32.Attention(tp32.Const(Convert[float32](q)), tp32.Const(Convert[float32](k)), tp32.Const(Convert[float32](v)), c.heads, mask).Value
			for i, w := range want {
				if math.Abs(got.Data[i]-w) > 1e-12 {
					t.Fatalf("float64 out[%d] = %v, loop %v", i, got.Data[i], w)
				}
				if math.Abs(float64(got32.Data[i])-w) > 1e-5*(1+math.Abs(w)) {
					t.Fatalf("float32 out[%d] = %v, loop %v", i, got32.Data[i], w)
				}
			}
		})
	}
}

func TestLayerNormMatchesFormula(t *testing.T) {
	x := []float64{1, 2, 4, -3, 0.5, 0.5}
	w, b := []float64{2, -1, 0.5}, []float64{0.1, 0.2, 0.3}
	tp := NewTape[float64](false)
	got := tp.LayerNorm(tp.Const(FromSlice(x, 2, 3)), tp.Const(FromSlice(w, 3)), tp.Const(FromSlice(b, 3)), 1e-5).Value.Data
	for r := 0; r < 2; r++ {
		row := x[r*3 : (r+1)*3]
		mean := (row[0] + row[1] + row[2]) / 3
		vr := ((row[0]-mean)*(row[0]-mean) + (row[1]-mean)*(row[1]-mean) + (row[2]-mean)*(row[2]-mean)) / 3
		for j := range row {
			want := (row[j]-mean)/math.Sqrt(vr+1e-5)*w[j] + b[j]
			if math.Abs(got[r*3+j]-want) > 1e-12 {
				t.Fatalf("row %d col %d: %v, formula %v", r, j, got[r*3+j], want)
			}
		}
	}
}

func TestGELUValues(t *testing.T) {
	// PyTorch's F.gelu(torch.tensor([-2., -0.5, 0., 1., 3.], dtype=torch.float64)).
	x := []float64{-2, -0.5, 0, 1, 3}
	want := []float64{-0.04550026389635842, -0.15426876936299344, 0, 0.841344746068543, 2.99595030590511}
	tp := NewTape[float64](false)
	got := tp.GELU(tp.Const(FromSlice(x, 5))).Value.Data
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Fatalf("GELU(%v) = %v, PyTorch %v", x[i], got[i], want[i])
		}
	}
}

func TestTransformerGradients(t *testing.T) {
	attn := func(heads int, mask AttentionOptions) func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
		return func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.Attention(in[0], in[1], in[2], heads, mask)
		}
	}
	cases := []gradCase{
		{name: "LayerNorm", shapes: [][]int{{2, 3, 5}, {5}, {5}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.LayerNorm(in[0], in[1], in[2], 1e-5)
		}},
		{name: "LayerNormNoAffine", shapes: [][]int{{4, 3}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.LayerNorm(in[0], nil, nil, 1e-3)
		}},
		{name: "LayerNormTwice", shapes: [][]int{{3, 4}, {4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.LayerNorm(tp.Add(in[0], tp.LayerNorm(in[0], in[1], nil, 1e-5)), nil, in[1], 1e-5)
		}},
		{name: "GELU", shapes: [][]int{{3, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.GELU(in[0]) }},
		{name: "Attention", shapes: [][]int{{3, 2, 4}, {5, 2, 4}, {5, 2, 4}}, f: attn(2, AttentionOptions{})},
		{name: "AttentionCausal", shapes: [][]int{{4, 2, 6}, {4, 2, 6}, {4, 2, 6}}, f: attn(3, AttentionOptions{Causal: true})},
		{name: "AttentionCausalStep", shapes: [][]int{{2, 2, 4}, {5, 2, 4}, {5, 2, 4}}, f: attn(2, AttentionOptions{Causal: true})},
		{name: "AttentionPadded", shapes: [][]int{{3, 3, 4}, {4, 3, 4}, {4, 3, 4}}, f: attn(1, AttentionOptions{KeyPad: padFlags(4, 1, 0, 4)})},
		{name: "AttentionCausalPadded", shapes: [][]int{{4, 2, 4}, {4, 2, 4}, {4, 2, 4}}, f: attn(2, AttentionOptions{Causal: true, KeyPad: padFlags(4, 2, 0)})},
		{name: "AttentionDropout", shapes: [][]int{{4, 2, 4}, {5, 2, 4}, {5, 2, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			// The same masks at every evaluation: a source seeded alike.
			opt := AttentionOptions{Causal: true, KeyPad: padFlags(5, 1, 0), Dropout: 0.4, Rng: rand.New(rand.NewPCG(2, 9))}
			return tp.Attention(in[0], in[1], in[2], 2, opt)
		}},
		{name: "AttentionOneTensor", shapes: [][]int{{4, 2, 6}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.Attention(in[0], in[0], in[0], 2, AttentionOptions{Causal: true})
		}},
		{name: "AttentionSharedKeyValue", shapes: [][]int{{2, 2, 4}, {3, 2, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.Attention(tp.Tanh(in[0]), in[1], in[1], 2, AttentionOptions{})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 3; seed++ {
				checkGrad(t, c, seed)
			}
		})
	}
}

// appendChain appends in[1] (one step, [B, D]), in[2] ([1, B, D]) and in[4]
// ([2, B, D], past the first buffer's room) to in[0] ([2, B, D]), and in[3]
// to the second sequence again (a fork), returning every sequence.
func appendChain(tp *Tape[float64], in []*Node[float64]) []*Steps[float64] {
	s1 := tp.AppendSteps(nil, in[0], 1)
	s2 := tp.AppendSteps(s1, in[1], 1)
	s3 := tp.AppendSteps(s2, in[2], 1)
	fork := tp.AppendSteps(s2, in[3], 1)
	s4 := tp.AppendSteps(s3, in[4], 1)
	return []*Steps[float64]{s1, s2, s3, fork, s4}
}

var appendShapes = [][]int{{2, 2, 3}, {2, 3}, {1, 2, 3}, {2, 3}, {2, 2, 3}}

func TestAppendStepsValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	tp := NewTape[float64](false).Use(dirtyArena[float64](1 << 12))
	var in []*Node[float64]
	for _, s := range appendShapes {
		in = append(in, tp.Const(randTensor(rng, s)))
	}
	seqs := appendChain(tp, in)
	want := [][]int{{0}, {0, 1}, {0, 1, 2}, {0, 1, 3}, {0, 1, 2, 4}}
	for i, s := range seqs {
		var data []float64
		for _, k := range want[i] {
			data = append(data, in[k].Value.Data...)
		}
		if s.Len()*6 != len(data) || s.Node.Value.Shape[1] != 2 || s.Node.Value.Shape[2] != 3 {
			t.Fatalf("sequence %d: shape %v, want %d steps of [2, 3]", i, s.Node.Value.Shape, len(data)/6)
		}
		for j, v := range data {
			if s.Node.Value.Data[j] != v {
				t.Fatalf("sequence %d value %d = %v, want %v (overwritten by a later append?)", i, j, s.Node.Value.Data[j], v)
			}
		}
	}
	if seqs[1].buf != seqs[2].buf || seqs[3].buf == seqs[1].buf || seqs[4].buf == seqs[2].buf {
		t.Fatal("appends in place, forks and growth did not share and copy buffers as expected")
	}
}

func TestAppendStepsGradients(t *testing.T) {
	c := gradCase{name: "AppendSteps", shapes: appendShapes, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
		var parts []*Node[float64]
		for _, s := range appendChain(tp, in) {
			parts = append(parts, tp.Reshape(tp.Tanh(s.Node), s.Node.Value.Len()))
		}
		return tp.Concat(0, parts...)
	}}
	for seed := uint64(1); seed <= 3; seed++ {
		checkGrad(t, c, seed)
	}
}
