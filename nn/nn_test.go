package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

func TestLayersMatchLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tp := ad.NewTape[float64](false)

	lin := NewLinear[float64]("fc", 3, 2, rng)
	for i := range lin.B.W.Data {
		lin.B.W.Data[i] = rng.NormFloat64()
	}
	x := []float64{0.5, -1, 2}
	got := lin.Forward(tp, tp.Const(ad.FromSlice(x, 1, 3))).Value.Data
	for o := 0; o < 2; o++ {
		want := lin.B.W.Data[o]
		for i := 0; i < 3; i++ {
			want += lin.W.W.Data[o*3+i] * x[i]
		}
		if math.Abs(got[o]-want) > 1e-12 {
			t.Fatalf("Linear out[%d] = %v, want %v", o, got[o], want)
		}
	}

	cell := NewRNNCell[float64]("cell", 3, 2, rng)
	h := []float64{1, -0.5}
	gotH := cell.Forward(tp, tp.Const(ad.FromSlice(x, 1, 3)), tp.Const(ad.FromSlice(h, 1, 2))).Value.Data
	for o := 0; o < 2; o++ {
		s := cell.Bih.W.Data[o] + cell.Bhh.W.Data[o]
		for i := 0; i < 3; i++ {
			s += cell.Wih.W.Data[o*3+i] * x[i]
		}
		for i := 0; i < 2; i++ {
			s += cell.Whh.W.Data[o*2+i] * h[i]
		}
		if want := math.Max(0, s); math.Abs(gotH[o]-want) > 1e-12 {
			t.Fatalf("RNNCell h[%d] = %v, want %v", o, gotH[o], want)
		}
	}

	emb := NewEmbedding[float64]("emb", 4, 3, rng)
	rows := emb.Forward(tp, []int{3, 0}).Value.Data
	for j := 0; j < 3; j++ {
		if rows[j] != emb.W.W.Data[9+j] || rows[3+j] != emb.W.W.Data[j] {
			t.Fatalf("Embedding rows %v do not match the table", rows)
		}
	}
}

func TestParamNamesAndShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	conv := NewConv2D[float32]("enc.conv1", 1, 8, ad.ConvGeom{Kernel: 3, Stride: 2, Pad: 1}, rng)
	cell := NewRNNCell[float32]("dec.cell", 32, 16, rng)
	want := map[string][]int{
		"enc.conv1.weight": {8, 1, 3, 3}, "enc.conv1.bias": {8},
		"dec.cell.weight_ih": {16, 32}, "dec.cell.weight_hh": {16, 16},
		"dec.cell.bias_ih": {16}, "dec.cell.bias_hh": {16},
	}
	for _, p := range append(conv.Params(), cell.Params()...) {
		s, ok := want[p.Name]
		if !ok {
			t.Fatalf("unexpected parameter %q", p.Name)
		}
		if len(s) != len(p.W.Shape) {
			t.Fatalf("%s shape %v, want %v", p.Name, p.W.Shape, s)
		}
		for i := range s {
			if s[i] != p.W.Shape[i] {
				t.Fatalf("%s shape %v, want %v", p.Name, p.W.Shape, s)
			}
		}
	}
}

func TestHeInit(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	l := NewLinear[float64]("fc", 400, 300, rng)
	bound := math.Sqrt(6.0 / 400)
	var sum, sq float64
	for _, v := range l.W.W.Data {
		if math.Abs(v) > bound {
			t.Fatalf("weight %v outside ±%v", v, bound)
		}
		sum += v
		sq += v * v
	}
	n := float64(l.W.W.Len())
	if v := sq/n - (sum/n)*(sum/n); math.Abs(v-2.0/400)/(2.0/400) > 0.05 {
		t.Fatalf("weight variance %v, want 2/fanIn = %v", v, 2.0/400)
	}
	for _, b := range l.B.W.Data {
		if b != 0 {
			t.Fatal("bias not zero-initialised")
		}
	}
	// A nil source leaves weights zero for loading.
	z := NewLinear[float32]("fc", 3, 2, nil)
	for _, v := range z.W.W.Data {
		if v != 0 {
			t.Fatal("nil rng initialised weights")
		}
	}
}
