package ad

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// gradCase builds a non-scalar output from its inputs; the check reduces it
// with fixed random weights so every output element's gradient is exercised.
type gradCase struct {
	name   string
	shapes [][]int
	f      func(tp *Tape[float64], in []*Node[float64]) *Node[float64]
	// avoid keeps inputs away from kinks (ReLU at 0, max ties) where finite
	// differences are meaningless.
	avoid func(x []float64) bool
}

func randTensor(rng *rand.Rand, shape []int) *Tensor[float64] {
	t := New[float64](shape...)
	for i := range t.Data {
		t.Data[i] = rng.NormFloat64()
	}
	return t
}

func evalCase(c gradCase, vals []*Tensor[float64], w []float64, record bool) (float64, []*Node[float64]) {
	// Memory that held other values, as a reused arena's does: every op
	// must write what it does not add to (a first gradient included).
	tp := NewTape[float64](record).Use(dirtyArena[float64](1 << 16))
	in := make([]*Node[float64], len(vals))
	for i, v := range vals {
		in[i] = tp.Var(v)
	}
	out := c.f(tp, in)
	if w == nil {
		return out.Value.Data[0], in
	}
	loss := tp.WeightedSum(out, w)
	if record {
		if err := tp.Backward(loss); err != nil {
			panic(err)
		}
	}
	return loss.Value.Data[0], in
}

func checkGrad(t *testing.T, c gradCase, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	vals := make([]*Tensor[float64], len(c.shapes))
	for i, s := range c.shapes {
		vals[i] = randTensor(rng, s)
	}
	if c.avoid != nil {
		for _, v := range vals {
			for c.avoid(v.Data) {
				for i := range v.Data {
					v.Data[i] = rng.NormFloat64()
				}
			}
		}
	}
	// Output size from a dry run.
	tp := NewTape[float64](false)
	var dry []*Node[float64]
	for _, v := range vals {
		dry = append(dry, tp.Const(v))
	}
	n := c.f(tp, dry).Value.Len()
	w := make([]float64, n)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	_, in := evalCase(c, vals, w, true)
	const h = 1e-6
	for k, v := range vals {
		for i := range v.Data {
			orig := v.Data[i]
			v.Data[i] = orig + h
			fp, _ := evalCase(c, vals, w, false)
			v.Data[i] = orig - h
			fm, _ := evalCase(c, vals, w, false)
			v.Data[i] = orig
			num := (fp - fm) / (2 * h)
			var got float64
			if in[k].Grad != nil {
				got = in[k].Grad.Data[i]
			}
			if math.Abs(got-num) > 1e-6*math.Max(1, math.Abs(num)) {
				t.Fatalf("%s: input %d element %d: analytic %.9g, finite difference %.9g", c.name, k, i, got, num)
			}
		}
	}
}

// nearKink reports values within 1e-3 of zero (ReLU's kink).
func nearKink(x []float64) bool {
	for _, v := range x {
		if math.Abs(v) < 1e-3 {
			return true
		}
	}
	return false
}

func TestGradients(t *testing.T) {
	cases := []gradCase{
		{name: "MatMul", shapes: [][]int{{3, 4}, {4, 5}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.MatMul(in[0], in[1]) }},
		{name: "Linear", shapes: [][]int{{2, 3, 4}, {5, 4}, {5}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.Linear(in[0], in[1], in[2])
		}},
		{name: "LinearNoBias", shapes: [][]int{{3, 4}, {2, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.Linear(in[0], in[1], nil)
		}},
		{name: "AddBias", shapes: [][]int{{3, 4}, {4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.AddBias(in[0], in[1]) }},
		{name: "Add", shapes: [][]int{{3, 4}, {3, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.Add(in[0], in[1]) }},
		{name: "AddTo", shapes: [][]int{{3, 4}, {3, 4}, {3, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			var sum *Node[float64]
			for _, x := range in {
				sum = tp.AddTo(sum, x)
			}
			return sum
		}},
		{name: "Sub", shapes: [][]int{{3, 4}, {3, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.Sub(in[0], in[1]) }},
		{name: "Mul", shapes: [][]int{{3, 4}, {3, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.Mul(in[0], in[1]) }},
		{name: "MulSelf", shapes: [][]int{{3, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.Mul(in[0], in[0]) }},
		{name: "Scale", shapes: [][]int{{3, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.Scale(in[0], -2.5) }},
		{name: "ClampMin", shapes: [][]int{{3, 4}}, avoid: func(x []float64) bool {
			for _, v := range x {
				if math.Abs(v-0.3) < 1e-3 {
					return true
				}
			}
			return false
		}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.ClampMin(in[0], 0.3) }},
		{name: "ReLU", shapes: [][]int{{3, 4}}, avoid: nearKink, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.ReLU(in[0]) }},
		{name: "Abs", shapes: [][]int{{3, 4}}, avoid: nearKink, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.Abs(in[0]) }},
		{name: "Tanh", shapes: [][]int{{3, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.Tanh(in[0]) }},
		{name: "Sigmoid", shapes: [][]int{{3, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.Sigmoid(in[0]) }},
		{name: "Reshape", shapes: [][]int{{3, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.Reshape(in[0], 2, 6)
		}},
		{name: "Concat1", shapes: [][]int{{2, 3, 2}, {2, 1, 2}, {2, 4, 2}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.Concat(1, in...)
		}},
		{name: "Concat0", shapes: [][]int{{2, 3}, {1, 3}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.Concat(0, in...)
		}},
		{name: "Slice", shapes: [][]int{{2, 5, 3}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.Slice(in[0], 1, 1, 4)
		}},
		{name: "SplitRejoin", shapes: [][]int{{3, 5}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			p := tp.Split(in[0], 1, 2, 3)
			return tp.Concat(1, tp.Tanh(p[1]), p[0])
		}},
		{name: "Gather", shapes: [][]int{{4, 3}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.Gather(in[0], []int{2, 0, 2, 3})
		}},
		{name: "Conv2D", shapes: [][]int{{2, 2, 5, 6}, {3, 2, 3, 3}, {3}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.Conv2D(in[0], in[1], in[2], ConvGeom{Kernel: 3, Stride: 2, Pad: 1})
		}},
		{name: "Conv2DNoPad", shapes: [][]int{{1, 1, 4, 4}, {2, 1, 2, 2}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.Conv2D(in[0], in[1], nil, ConvGeom{Kernel: 2, Stride: 1, Pad: 0})
		}},
		{name: "LogSoftmax", shapes: [][]int{{3, 5}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.LogSoftmax(in[0]) }},
		{name: "CrossEntropy", shapes: [][]int{{4, 5}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.CrossEntropy(in[0], []int{1, -1, 4, 0}, []float64{0.5, 1, 2, 1})
		}},
		{name: "SmoothedCrossEntropy", shapes: [][]int{{4, 5}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.SmoothedCrossEntropy(in[0], []int{1, -1, 4, 0}, []float64{0.5, 1, 2, 1}, 0.1)
		}},
		{name: "MaskedSoftmax", shapes: [][]int{{3, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			keep := []bool{true, false, true, true, false, false, false, false, true, true, true, true}
			return tp.MaskedSoftmax(in[0], keep)
		}},
		{name: "MaxLast", shapes: [][]int{{4, 5}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.MaxLast(in[0], []bool{false, false, true, false, false})
		}},
		{name: "Sum", shapes: [][]int{{3, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] { return tp.Sum(in[0]) }},
		{name: "LSTMCellH", shapes: [][]int{{3, 20}, {3, 5}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			h, _ := tp.LSTMCell(in[0], in[1])
			return h
		}},
		{name: "LSTMCellC", shapes: [][]int{{3, 20}, {3, 5}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			_, c := tp.LSTMCell(in[0], in[1])
			return c
		}},
		{name: "LSTMTwoSteps", shapes: [][]int{{2, 12}, {2, 12}, {2, 3}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			h, c := tp.LSTMCell(in[0], in[2])
			h2, c2 := tp.LSTMCell(tp.Add(in[1], tp.Concat(1, h, h, c, h)), c)
			return tp.Concat(1, h2, c2, h)
		}},
		{name: "AdditiveScores", shapes: [][]int{{4 * 3, 5}, {3, 5}, {1, 5}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.AdditiveScores(in[0], in[1], in[2])
		}},
		{name: "AttentionStep", shapes: [][]int{{4 * 2, 3}, {2, 3}, {3}, {4 * 2, 6}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			keep := []bool{true, true, true, false, true, true, false, false}
			w := tp.MaskedSoftmax(tp.AdditiveScores(in[0], in[1], in[2]), keep)
			return tp.Attend(w, in[3])
		}},
		{name: "Attend", shapes: [][]int{{2, 3}, {3 * 2, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.Attend(in[0], in[1])
		}},
		{name: "RowDot", shapes: [][]int{{6, 4}, {2, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.RowDot(in[0], in[1])
		}},
		{name: "RowDotShared", shapes: [][]int{{5, 3}, {1, 3}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.RowDot(tp.Tanh(in[0]), in[1])
		}},
		// Bounds lo = in[1], hi = lo + in[2]² + 0.1; both outputs weighed.
		{name: "RelaxReLU", shapes: [][]int{{6, 5}, {2, 5}, {2, 5}}, avoid: nearKink, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			hi := tp.Add(tp.Add(in[1], tp.Mul(in[2], in[2])), tp.Const(Full[float64](0.1, 2, 5)))
			c, k := tp.RelaxReLU(in[0], in[1], hi)
			return tp.Concat(1, c, tp.Reshape(k, 6, 1))
		}},
		{name: "RelaxReLUOffsetOnly", shapes: [][]int{{4, 3}, {4, 3}, {4, 3}}, avoid: nearKink, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			hi := tp.Add(tp.Add(in[1], tp.Mul(in[2], in[2])), tp.Const(Full[float64](0.1, 4, 3)))
			_, k := tp.RelaxReLU(in[0], in[1], hi)
			return k
		}},
		{name: "RelaxSigmoid", shapes: [][]int{{6, 5}, {2, 5}, {2, 5}}, avoid: nearKink, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			hi := tp.Add(tp.Add(in[1], tp.Mul(in[2], in[2])), tp.Const(Full[float64](0.1, 2, 5)))
			c, k := tp.RelaxSShape(SigmoidShape, in[0], tp.Scale(in[1], 2), tp.Scale(hi, 2))
			return tp.Concat(1, c, tp.Reshape(k, 6, 1))
		}},
		{name: "RelaxTanh", shapes: [][]int{{6, 5}, {2, 5}, {2, 5}}, avoid: nearKink, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			hi := tp.Add(tp.Add(in[1], tp.Mul(in[2], in[2])), tp.Const(Full[float64](0.1, 2, 5)))
			c, k := tp.RelaxSShape(TanhShape, in[0], in[1], hi)
			return tp.Concat(1, c, tp.Reshape(k, 6, 1))
		}},
		{name: "Where", shapes: [][]int{{3, 4}, {3, 4}}, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			return tp.Where([]bool{true, false, true}, in[0], tp.Tanh(in[1]))
		}},
		{name: "RNNStep", shapes: [][]int{{2, 3}, {2, 4}, {4, 3}, {4, 4}, {4}}, avoid: nearKink, f: func(tp *Tape[float64], in []*Node[float64]) *Node[float64] {
			h := tp.ReLU(tp.Add(tp.Linear(in[0], in[2], in[4]), tp.Linear(in[1], in[3], nil)))
			return tp.ReLU(tp.Add(tp.Linear(in[0], in[2], in[4]), tp.Linear(h, in[3], nil)))
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

func TestParamGradientAccumulates(t *testing.T) {
	p := NewParam[float64]("w", 2, 2)
	copy(p.W.Data, []float64{1, 2, 3, 4})
	for step := 1; step <= 2; step++ {
		tp := NewTrainingTape[float64]()
		x := tp.Const(FromSlice([]float64{1, 1}, 1, 2))
		// The same parameter used twice on one tape must give one summed gradient.
		y := tp.Add(tp.Linear(x, tp.Param(p), nil), tp.Linear(x, tp.Param(p), nil))
		if err := tp.Backward(tp.Sum(y)); err != nil {
			t.Fatal(err)
		}
		for i, g := range p.G.Data {
			if want := 2 * float64(step); g != want {
				t.Fatalf("step %d: grad[%d] = %v, want %v", step, i, g, want)
			}
		}
	}
	p.ZeroGrad()
	if p.G.Data[0] != 0 {
		t.Fatal("ZeroGrad left a gradient")
	}
}

func TestBackwardErrors(t *testing.T) {
	tp := NewTape[float64](false)
	if err := tp.Backward(tp.Const(New[float64]())); err == nil {
		t.Error("Backward on a non-recording tape succeeded")
	}
	tp = NewTape[float64](true)
	if err := tp.Backward(tp.Var(New[float64](2))); err == nil {
		t.Error("Backward on a non-scalar succeeded")
	}
	if err := tp.Backward(tp.Const(New[float64]())); err == nil {
		t.Error("Backward on a constant succeeded")
	}
	// Attack mode: parameters are constants, only the input gets a gradient.
	p := NewParam[float64]("w", 1, 1)
	p.W.Data[0] = 3
	x := tp.Var(FromSlice([]float64{2}, 1, 1))
	if err := tp.Backward(tp.Sum(tp.Linear(x, tp.Param(p), nil))); err != nil {
		t.Fatal(err)
	}
	if x.Grad.Data[0] != 3 || p.G.Data[0] != 0 {
		t.Fatalf("input grad %v, param grad %v; want 3 and 0", x.Grad.Data[0], p.G.Data[0])
	}
}

func TestMaxLastTieLowestIndex(t *testing.T) {
	tp := NewTape[float64](true)
	x := tp.Var(FromSlice([]float64{1, 5, 5, 2}, 1, 4))
	m := tp.MaxLast(x, nil)
	if err := tp.Backward(tp.Sum(m)); err != nil {
		t.Fatal(err)
	}
	if want := []float64{0, 1, 0, 0}; !slices.Equal(x.Grad.Data, want) {
		t.Fatalf("gradient %v, want %v (tie to lowest index)", x.Grad.Data, want)
	}
}

func TestAdamMinimisesQuadratic(t *testing.T) {
	p := NewParam[float32]("x", 3)
	copy(p.W.Data, []float32{3, -2, 1})
	opt := NewAdam([]*Param[float32]{p}, 0.05)
	for i := 0; i < 500; i++ {
		p.ZeroGrad()
		tp := NewTrainingTape[float32]()
		x := tp.Param(p)
		if err := tp.Backward(tp.Sum(tp.Mul(x, x))); err != nil {
			t.Fatal(err)
		}
		opt.Step()
	}
	for i, v := range p.W.Data {
		if math.Abs(float64(v)) > 1e-2 {
			t.Fatalf("x[%d] = %v after 500 steps, want ~0", i, v)
		}
	}
}

// TestAdamStepWhere: a parameter left out keeps its value and moments, and
// the kept one moves exactly as under a plain Adam on its own.
func TestAdamStepWhere(t *testing.T) {
	a, b, ref := NewParam[float64]("a", 2), NewParam[float64]("b", 2), NewParam[float64]("ref", 2)
	opt := NewAdam([]*Param[float64]{a, b}, 0.1)
	alone := NewAdam([]*Param[float64]{ref}, 0.1)
	for step := 0; step < 5; step++ {
		for _, p := range []*Param[float64]{a, b, ref} {
			p.G.Data[0], p.G.Data[1] = 1+float64(step), -2
		}
		opt.StepWhere(func(i int) bool { return i == 0 })
		alone.Step()
	}
	if b.W.Data[0] != 0 || b.W.Data[1] != 0 {
		t.Fatalf("frozen parameter moved to %v", b.W.Data)
	}
	if _, m, v := opt.State(); m[1][0] != 0 || v[1][0] != 0 {
		t.Fatalf("frozen parameter's moments changed: %v %v", m[1], v[1])
	}
	for i := range a.W.Data {
		if a.W.Data[i] != ref.W.Data[i] {
			t.Fatalf("kept parameter %v, alone %v", a.W.Data, ref.W.Data)
		}
	}
}

// TestDropout: survivors are scaled by 1/(1−p), the others zeroed, about a
// fraction p dropped, the gradient flows through the same mask, and p = 0
// is the identity.
func TestDropout(t *testing.T) {
	const n, p = 20000, 0.25
	rng := rand.New(rand.NewPCG(1, 1))
	tp := NewTape[float64](true)
	x := tp.Var(Full[float64](2, n))
	y := tp.Dropout(x, p, rng)
	w := make([]float64, n)
	for i := range w {
		w[i] = float64(i%7) - 3
	}
	if err := tp.Backward(tp.WeightedSum(y, w)); err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for i, v := range y.Value.Data {
		switch {
		case v == 0:
			dropped++
			if x.Grad.Data[i] != 0 {
				t.Fatalf("dropped element %d has gradient %v", i, x.Grad.Data[i])
			}
		case math.Abs(v-2/(1-p)) > 1e-12:
			t.Fatalf("survivor %d = %v, want %v", i, v, 2/(1-p))
		case math.Abs(x.Grad.Data[i]-w[i]/(1-p)) > 1e-12:
			t.Fatalf("survivor %d: gradient %v, want %v", i, x.Grad.Data[i], w[i]/(1-p))
		}
	}
	if f := float64(dropped) / n; math.Abs(f-p) > 0.02 {
		t.Fatalf("dropped %.3f of the elements, want about %v", f, p)
	}
	if tp.Dropout(x, 0, nil) != x {
		t.Fatal("dropout 0 is not the identity")
	}
}

// TestAdamKernelMatchesLoop: the float32 update (the C kernel in the cgo
// build) agrees with the float64 Go loop on the same numbers, with and
// without weight decay, parameters and moments alike.
func TestAdamKernelMatchesLoop(t *testing.T) {
	defer setKernels("")
	for _, variant := range []string{"v4", "v3", "base"} {
		setKernels(variant)
		adamMatchesLoop(t)
	}
}

func adamMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	const n = 1003 // not a whole number of vectors
	w32, g32 := make([]float32, n), make([]float32, n)
	w64, g64 := make([]float64, n), make([]float64, n)
	for i := range w32 {
		w32[i], g32[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		w64[i], g64[i] = float64(w32[i]), float64(g32[i])
	}
	m32, v32, m64, v64 := make([]float32, n), make([]float32, n), make([]float64, n), make([]float64, n)
	for step, decay := range []float64{1, 0.99, 1, 0.999} {
		c1, c2 := 1-math.Pow(0.9, float64(step+1)), 1-math.Pow(0.999, float64(step+1))
		adamUpdate(w32, g32, m32, v32, 0.01, 0.9, 0.999, c1, c2, 1e-8, decay)
		adamUpdateGo(w64, g64, m64, v64, 0.01, 0.9, 0.999, c1, c2, 1e-8, decay)
	}
	for i := range w32 {
		close := func(a float32, b float64) bool { return math.Abs(float64(a)-b) <= 1e-5*(1+math.Abs(b)) }
		if !close(w32[i], w64[i]) || !close(m32[i], m64[i]) || !close(v32[i], v64[i]) {
			t.Fatalf("element %d: w %v vs %v, m %v vs %v, v %v vs %v", i, w32[i], w64[i], m32[i], m64[i], v32[i], v64[i])
		}
	}
}

// TestSequenceKernelsMatchLoops runs the LSTM and attention kernels of
// every variant the machine has in float32 against the float64 Go loops,
// forward and backward, on sizes that are not whole vectors and with
// pre-activations large enough to reach every branch of exp and tanh.
func TestSequenceKernelsMatchLoops(t *testing.T) {
	defer setKernels("")
	for _, variant := range []string{"v4", "v3", "base"} {
		setKernels(variant)
		for _, size := range []struct{ b, hd, s, a int }{{3, 37, 5, 19}, {2, 16, 3, 32}, {1, 1, 1, 1}, {4, 64, 7, 70}} {
			sequenceKernelsMatch(t, variant, size.b, size.hd, size.s, size.a)
		}
	}
}

func sequenceKernelsMatch(t *testing.T, variant string, b, hd, s, a int) {
	rng := rand.New(rand.NewPCG(uint64(b*hd), uint64(s*a)))
	pair := func(n int, scale float64) ([]float32, []float64) {
		x32, x64 := make([]float32, n), make([]float64, n)
		for i := range x32 {
			x32[i] = float32(scale * rng.NormFloat64())
			x64[i] = float64(x32[i])
		}
		return x32, x64
	}
	near := func(what string, got []float32, want []float64) {
		t.Helper()
		for i := range got {
			if d := math.Abs(float64(got[i]) - want[i]); d > 2e-6*(1+math.Abs(want[i])) {
				t.Fatalf("%s b=%d hd=%d s=%d a=%d: %s[%d] = %v, loop %v", variant, b, hd, s, a, what, i, got[i], want[i])
			}
		}
	}
	// LSTM: gates spread over ±40 (saturated and linear regions).
	g32, g64 := pair(b*4*hd, 8)
	c32, c64 := pair(b*hd, 2)
	h32, cn32, act32 := make([]float32, b*hd), make([]float32, b*hd), make([]float32, b*5*hd)
	h64, cn64, act64 := make([]float64, b*hd), make([]float64, b*hd), make([]float64, b*5*hd)
	lstmForward(b, hd, g32, c32, h32, cn32, act32)
	lstmForwardGo(b, hd, g64, c64, h64, cn64, act64)
	near("h", h32, h64)
	near("c'", cn32, cn64)
	dh32, dh64 := pair(b*hd, 1)
	dcn32, dcn64 := pair(b*hd, 1)
	dg32, dg64 := pair(b*4*hd, 1) // gradients add to what is there
	dc32, dc64 := pair(b*hd, 1)
	lstmBackward(b, hd, act32, c32, dh32, dcn32, dg32, dc32)
	lstmBackwardGo(b, hd, act64, c64, dh64, dcn64, dg64, dc64)
	near("dgates", dg32, dg64)
	near("dc", dc32, dc64)
	lstmBackward(b, hd, act32, c32, nil, dcn32, dg32, nil) // no h gradient, no c gradient
	lstmBackwardGo(b, hd, act64, c64, nil, dcn64, dg64, nil)
	near("dgates without dh", dg32, dg64)

	// Attention scores and context.
	k32, k64 := pair(s*b*a, 1.5)
	q32, q64 := pair(b*a, 1.5)
	v32, v64 := pair(a, 1)
	e32, th32, e64, th64 := make([]float32, b*s), make([]float32, s*b*a), make([]float64, b*s), make([]float64, s*b*a)
	scoresForward(s, b, a, k32, q32, v32, e32, th32)
	scoresForwardGo(s, b, a, k64, q64, v64, e64, th64)
	near("scores", e32, e64)
	ge32, ge64 := pair(b*s, 1)
	ge32[0], ge64[0] = 0, 0 // a masked position
	dk32, dk64 := pair(s*b*a, 1)
	dq32, dq64 := pair(b*a, 1)
	dv32, dv64 := pair(a, 1)
	scoresBackward(s, b, a, th32, v32, ge32, dk32, dq32, dv32)
	scoresBackwardGo(s, b, a, th64, v64, ge64, dk64, dq64, dv64)
	near("dkeys", dk32, dk64)
	near("dq", dq32, dq64)
	near("dv", dv32, dv64)
	w32, w64 := pair(b*s, 1)
	m32, m64 := pair(s*b*a, 1)
	o32, o64 := pair(b*a, 1)
	attendForward(s, b, a, w32, m32, o32)
	attendForwardGo(s, b, a, w64, m64, o64)
	near("context", o32, o64)
	go32, go64 := pair(b*a, 1)
	dw32, dw64 := pair(b*s, 1)
	dm32, dm64 := pair(s*b*a, 1)
	attendBackward(s, b, a, w32, m32, go32, dw32, dm32)
	attendBackwardGo(s, b, a, w64, m64, go64, dw64, dm64)
	near("dweights", dw32, dw64)
	near("dmemory", dm32, dm64)

	// Cross-entropy over rows of a vocabulary of 3a+1 (a tail), one row
	// without a target, logits spread wide.
	cols := 3*a + 1
	x32, x64 := pair(b*cols, 6)
	targets := make([]int, b)
	for r := range targets {
		targets[r] = (r * 7) % cols
	}
	targets[0] = -1
	lse32, lse64 := make([]float64, b), make([]float64, b)
	logSumExpRows(b, cols, x32, targets, lse32)
	logSumExpRowsGo(b, cols, x64, targets, lse64)
	for r := range lse32 {
		if math.Abs(lse32[r]-lse64[r]) > 2e-6*(1+math.Abs(lse64[r])) {
			t.Fatalf("%s: log-sum-exp of row %d: %v, loop %v", variant, r, lse32[r], lse64[r])
		}
	}
	scale := make([]float64, b)
	for r := range scale {
		scale[r] = 0.5 + float64(r)
	}
	gx32, gx64 := pair(b*cols, 1)
	crossEntropyBackward(b, cols, x32, targets, lse64, scale, gx32)
	crossEntropyBackwardGo(b, cols, x64, targets, lse64, scale, gx64)
	near("dlogits", gx32, gx64)
}

// TestSmoothedCrossEntropy checks the loss against its definition, the
// cross-entropy with the target (1−eps)·onehot + eps/V, and the float32
// gradient (the fused kernel plus the smoothing pass) against float64's.
func TestSmoothedCrossEntropy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const rows, cols, eps = 3, 7, 0.2
	x := randTensor(rng, []int{rows, cols})
	targets := []int{2, -1, 6}
	weights := []float64{0.5, 1, 2}
	var want float64
	for r, tg := range targets {
		if tg < 0 {
			continue
		}
		row := x.Data[r*cols : (r+1)*cols]
		lse := logSumExp(row)
		for j, v := range row {
			q := eps / cols
			if j == tg {
				q += 1 - eps
			}
			want -= weights[r] * q * (v - lse)
		}
	}
	tp := NewTape[float64](true)
	n := tp.Var(x)
	loss := tp.SmoothedCrossEntropy(n, targets, weights, eps)
	if got := loss.Value.Data[0]; math.Abs(got-want) > 1e-12 {
		t.Fatalf("loss %v, want %v", got, want)
	}
	if err := tp.Backward(loss); err != nil {
		t.Fatal(err)
	}
	x32 := make([]float32, len(x.Data))
	for i, v := range x.Data {
		x32[i] = float32(v)
	}
	tp32 := NewTape[float32](true)
	n32 := tp32.Var(FromSlice(x32, rows, cols))
	if err := tp32.Backward(tp32.SmoothedCrossEntropy(n32, targets, []float32{0.5, 1, 2}, eps)); err != nil {
		t.Fatal(err)
	}
	for i, g := range n.Grad.Data {
		if math.Abs(float64(n32.Grad.Data[i])-g) > 1e-6 {
			t.Fatalf("float32 gradient[%d] = %v, float64 %v", i, n32.Grad.Data[i], g)
		}
	}
	for j := 0; j < cols; j++ {
		if g := n.Grad.Data[cols+j]; g != 0 {
			t.Fatalf("padding row has gradient %v", g)
		}
	}
}
