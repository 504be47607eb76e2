package attack

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

func tinyConfig(cell string) *model.Config {
	c := model.DefaultCaptionerConfig()
	a := c.Arch.(*model.CaptionerConfig)
	a.Input = model.InputConfig{Channels: 1, Height: 4, Width: 6, Min: -1, Max: 1}
	a.Conv = []model.ConvConfig{{OutChannels: 3, Kernel: 3, Stride: 2, Padding: 1}}
	a.FCHidden, a.Embedding, a.Hidden, a.Cell = 6, 4, 5, cell
	c.Vocab = []string{"a", "b", "c", "<eos>"}
	c.EOS = 3
	c.MaxSteps = 8
	return &c
}

// tiny builds a random tiny captioner through the registry, at both
// precisions: the attacks see only the decoder contract.
func tiny(t testing.TB, seed uint64) (model.Decoder[float32], model.Decoder[float64]) {
	return tinyCell(t, model.CellReLU, seed)
}

func tinyCell(t testing.TB, cell string, seed uint64) (model.Decoder[float32], model.Decoder[float64]) {
	return captioner(t, tinyConfig(cell), seed)
}

// captioner builds a random captioner of configuration c at both
// precisions.
func captioner(t testing.TB, c *model.Config, seed uint64) (model.Decoder[float32], model.Decoder[float64]) {
	t.Helper()
	m64, err := model.New[float64](c, rand.New(rand.NewPCG(seed, 11)))
	if err != nil {
		t.Fatal(err)
	}
	m32, err := model.Cast[float32](m64)
	if err != nil {
		t.Fatal(err)
	}
	return m32, m64
}

func size(d interface{ Input() model.InputSpec }) int { return d.Input().Size() }

func ball(t testing.TB, x0 []float64, delta float64) spec.Ball {
	t.Helper()
	b, err := spec.NewBall(x0, delta, -1, 1)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// region is the continuous space of ball(t, x0, delta).
func region(t testing.TB, x0 []float64, delta float64) *Continuous {
	t.Helper()
	return NewContinuous(ball(t, x0, delta))
}

func objective(t testing.TB, tp *ad.Tape[float64], m model.Decoder[float64], x *ad.Node[float64], loss Loss, eps float64) (*ad.Node[float64], []model.Result) {
	t.Helper()
	l, res, err := Objective(tp, m, model.Input[float64]{X: x}, 8, loss, eps)
	if err != nil {
		t.Fatal(err)
	}
	return l, res
}

func decode(t testing.TB, m model.Decoder[float64], x []float64) []model.Result {
	t.Helper()
	res, err := model.Decode(context.Background(), m, model.Batch[float64]{X: x}, 8)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func randX(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	return x
}

// TestObjectiveGradient checks J̃ and the eos log-probability loss against
// central finite differences wherever the decoded path and the clip are
// locally constant.
func TestObjectiveGradient(t *testing.T) {
	for _, loss := range []Loss{LossMargin, LossEOSLogProb} {
		checked := 0
		for seed := uint64(1); seed <= 10; seed++ {
			_, m := tiny(t, seed)
			rng := rand.New(rand.NewPCG(seed, 5))
			const rows = 3
			n := size(m)
			x := randX(rng, rows*n)
			eval := func() (float64, []model.Result) {
				tp := ad.NewTape[float64](false)
				l, res := objective(t, tp, m, tp.Const(ad.FromSlice(x, rows, n)), loss, 0.5)
				return l.Value.Data[0], res
			}
			tp := ad.NewTape[float64](true)
			xn := tp.Var(ad.FromSlice(append([]float64(nil), x...), rows, n))
			l, base := objective(t, tp, m, xn, loss, 0.5)
			if err := tp.Backward(l); err != nil {
				t.Fatal(err)
			}
			const h = 1e-6
			for i := range x {
				orig := x[i]
				x[i] = orig + h
				fp, rp := eval()
				x[i] = orig - h
				fm, rm := eval()
				x[i] = orig
				if !samePaths(rp, base) || !samePaths(rm, base) {
					continue // a path change inside ±h: not differentiable here
				}
				num := (fp - fm) / (2 * h)
				if math.Abs(num-xn.Grad.Data[i]) > 1e-5*math.Max(1, math.Abs(num)) {
					// A clip kink inside ±h gives a one-sided slope; check it is one.
					f0, _ := eval()
					left, right := (f0-fm)/h, (fp-f0)/h
					if math.Abs(left-right) < 1e-4 {
						t.Fatalf("%s seed %d x[%d]: analytic %.9g, finite difference %.9g", loss, seed, i, xn.Grad.Data[i], num)
					}
					continue
				}
				checked++
			}
		}
		if checked < 500 {
			t.Fatalf("%s: only %d coordinates checked", loss, checked)
		}
	}
}

func samePaths(a, b []model.Result) bool {
	for i := range a {
		if a[i].Stopped != b[i].Stopped || len(a[i].Tokens) != len(b[i].Tokens) {
			return false
		}
		for j := range a[i].Tokens {
			if a[i].Tokens[j] != b[i].Tokens[j] {
				return false
			}
		}
	}
	return true
}

// TestObjectiveMatchesDecode: the unrolled objective decodes exactly as the
// model's own greedy decoder.
func TestObjectiveMatchesDecode(t *testing.T) {
	_, m := tiny(t, 3)
	rng := rand.New(rand.NewPCG(1, 1))
	const rows = 40
	x := randX(rng, rows*size(m))
	tp := ad.NewTape[float64](false)
	_, res := objective(t, tp, m, tp.Const(ad.FromSlice(x, rows, size(m))), LossMargin, 1)
	if !samePaths(res, decode(t, m, x)) {
		t.Fatal("objective's decoded paths differ from Decode")
	}
}

// lengthenable finds tiny models and inputs where some point of the ball
// decodes longer than the centre (by dense sampling), so attacks have
// something to find.
func lengthenable(t *testing.T, want int) (m32s []model.Decoder[float32], m64s []model.Decoder[float64], targets []Target[[]float64]) {
	ctx := context.Background()
	for seed := uint64(1); seed < 400 && len(targets) < want; seed++ {
		m32, m64 := tiny(t, seed)
		rng := rand.New(rand.NewPCG(seed, 2))
		x0 := randX(rng, size(m64))
		tg, err := NewTarget(ctx, m64, region(t, x0, 0.3), -1, 8, seed, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !tg.Original.Stopped || len(tg.Original.Tokens) > 4 {
			continue
		}
		o, err := RandomSearch(ctx, m32, m64, tg, RandomOptions{Samples: 3000, Batch: 500})
		if err != nil {
			t.Fatal(err)
		}
		if o.Success {
			m32s, m64s, targets = append(m32s, m32), append(m64s, m64), append(targets, tg)
		}
	}
	if len(targets) < want {
		t.Fatalf("found %d lengthenable tiny targets, want %d", len(targets), want)
	}
	return
}

func TestRandomSearchWitnessesReplay(t *testing.T) {
	m32s, m64s, targets := lengthenable(t, 5)
	for i, tg := range targets {
		o, err := RandomSearch(context.Background(), m32s[i], m64s[i], tg, RandomOptions{Samples: 2000, Batch: 300})
		if err != nil {
			t.Fatal(err)
		}
		if !tg.Set.Contains(o.Input) {
			t.Fatal("witness outside the ball")
		}
		if !samePaths(decode(t, m64s[i], o.Input), []model.Result{o.Result}) {
			t.Fatal("outcome does not match a fresh float64 decode of its input")
		}
		var total int64
		for _, c := range o.LengthCounts {
			total += c
		}
		if total != 2000 || o.Evals != 2000 {
			t.Fatalf("counted %d samples, %d evals; want 2000", total, o.Evals)
		}
	}
}

// plainSpace hides a space's batch sampler: random search then draws
// and decodes point by point (Space.Draw, Space.Decode32).
type plainSpace struct{ Space[[]float64] }

// TestRandomSearchBatchSamplerSame: random search on images, which
// samples straight into the float32 batch, finds what the generic path
// (Draw, then Decode32) finds from the same draws: the same witness, rank
// and length histogram.
func TestRandomSearchBatchSamplerSame(t *testing.T) {
	m32s, m64s, targets := lengthenable(t, 3)
	for i, tg := range targets {
		if _, ok := tg.Set.(batchSampler[[]float64]); !ok {
			t.Fatal("the continuous space has no batch sampler: the test checks nothing")
		}
		opt := RandomOptions{Samples: 500, Batch: 70}
		fast, err := RandomSearch(context.Background(), m32s[i], m64s[i], tg, opt)
		if err != nil {
			t.Fatal(err)
		}
		pt := tg
		pt.Set = plainSpace{tg.Set}
		slow, err := RandomSearch(context.Background(), m32s[i], m64s[i], pt, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fast.Input, slow.Input) || fast.Found32 != slow.Found32 || !slices.Equal(fast.LengthCounts, slow.LengthCounts) {
			t.Fatalf("target %d: the batch sampler found rank %d, the generic path %d", i, fast.Found32, slow.Found32)
		}
	}
}

// TestRandomSearchSameWhateverBatch: every draw's float32 decoding — its
// path and margin, to the bit — and so the outcome are the same for any
// batch size, on one core or two, on images (a tiny and a wide model) and
// token substitutions (a wide translator): --batch changes speed only.
func TestRandomSearchSameWhateverBatch(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		build func(testing.TB, string, uint64) (model.Decoder[float32], model.Decoder[float64])
	}{{"tiny images", tinyCell}, {"wide images", wideCell}} {
		t.Run(tc.name, func(t *testing.T) {
			m32, m64 := tc.build(t, model.CellLSTM, 3)
			tg, err := NewTarget(ctx, m64, region(t, randX(rand.New(rand.NewPCG(3, 3)), size(m64)), 0.3), -1, 8, 7, 5)
			if err != nil {
				t.Fatal(err)
			}
			sameWhateverBatch(t, m32, m64, tg, 600)
		})
	}
	t.Run("wide text", func(t *testing.T) {
		d32, d64 := wideTranslator(t, 3)
		sameWhateverBatch(t, d32, d64, textTargets(t, d64, 0.5, 1)[0], 200)
	})
}

// sameWhateverBatch runs random search on tg with several batch sizes on
// one core and two and checks that every draw decodes as with the first
// and the outcomes agree.
func sameWhateverBatch[E any](t *testing.T, d32 model.Decoder[float32], d64 model.Decoder[float64], tg Target[E], samples int) {
	t.Helper()
	ctx := context.Background()
	var first []model.Result
	var firstOut Outcome[E]
	for _, procs := range []int{1, 2} {
		for _, batch := range []int{1, 70, 300, 1000} {
			name := fmt.Sprintf("batch %d on %d cores", batch, procs)
			func() {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				opt := RandomOptions{Samples: samples, Batch: batch, MaxSteps: 8}
				var res []model.Result
				if err := draws(ctx, d32, tg, opt, 8, func(r model.Result, _ func(int) E, _ int) { res = append(res, r) }); err != nil {
					t.Fatal(err)
				}
				out, err := RandomSearch(ctx, d32, d64, tg, opt)
				if err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first, firstOut = res, out
					return
				}
				for i := range first {
					if !samePaths(first[i:i+1], res[i:i+1]) || first[i].MinRelMargin != res[i].MinRelMargin {
						t.Fatalf("%s: draw %d decodes to %d tokens, margin %g; %d, %g with batch 1 on one core",
							name, i, len(res[i].Tokens), res[i].MinRelMargin, len(first[i].Tokens), first[i].MinRelMargin)
					}
				}
				if !reflect.DeepEqual(out, firstOut) {
					t.Fatalf("%s: outcome differs from batch 1 on one core", name)
				}
			}()
		}
	}
}

// TestPGDLengthens: on targets where random search shows a longer output
// exists, batched PGD finds longer outputs too, and every claimed success
// replays in float64 from an input inside the ball.
func TestPGDLengthens(t *testing.T) {
	m32s, m64s, targets := lengthenable(t, 6)
	ctx := context.Background()
	found := 0
	for i := range targets {
		opt := DefaultPGD()
		opt.Steps, opt.LR, opt.Restarts = 300, 0.01, 2
		outs, err := PGD(ctx, m32s[i], m64s[i], targets[i:i+1], opt)
		if err != nil {
			t.Fatal(err)
		}
		o := outs[0]
		if !targets[i].Set.Contains(o.Input) {
			t.Fatal("PGD witness outside the ball")
		}
		res := decode(t, m64s[i], o.Input)
		if !samePaths(res, []model.Result{o.Result}) {
			t.Fatal("PGD outcome does not match a fresh float64 decode")
		}
		if o.Success {
			found++
			if !spec.Exceeds(res[0], targets[i].K) {
				t.Fatal("claimed success does not exceed K̂ on replay")
			}
		}
		if o.Evals <= 0 || o.Steps <= 0 {
			t.Fatalf("evals %d, steps %d", o.Evals, o.Steps)
		}
	}
	if found < len(targets)/2 {
		t.Fatalf("PGD lengthened %d of %d lengthenable targets", found, len(targets))
	}
}

// wideCell builds a random captioner of the shipped models' widths (a
// 512-value feature map, FC 256, hidden 128) on a small image, at both
// precisions. Tiny models hide what a batch does to a row: OpenBLAS
// rounds a row of a product differently with other rows beside it only
// from sizes like these up (its kernels and blockings change with the
// matrix's shape).
func wideCell(t testing.TB, cell string, seed uint64) (model.Decoder[float32], model.Decoder[float64]) {
	c := tinyConfig(cell)
	a := c.Arch.(*model.CaptionerConfig)
	a.Input = model.InputConfig{Channels: 1, Height: 8, Width: 16, Min: -1, Max: 1}
	a.Conv = []model.ConvConfig{{OutChannels: 16, Kernel: 3, Stride: 2, Padding: 1}}
	a.FCHidden, a.Embedding, a.Hidden = 256, 64, 128
	return captioner(t, c, seed)
}

// TestPGDReproducesAlone: a target's outcome — its witness to the bit, the
// replay, the float32 rank, evaluations and iterations — is the one it
// gets alone, whatever batch it runs in, in any position, on one core or
// two, for tiny and for wide models of both cells: its random starts come
// from PCG(Seed, Stream) and its runs are computed apart from every other
// target's (a record reproduces from its key alone).
func TestPGDReproducesAlone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(testing.TB, string, uint64) (model.Decoder[float32], model.Decoder[float64])
		cell  string
		seed  uint64
		// mixed: some targets stop early (their outputs reach the cap)
		// and some run every step, so a target's own iterations are
		// not the batch's.
		mixed bool
	}{
		{"tiny relu", tinyCell, model.CellReLU, 19, true},
		{"tiny lstm", tinyCell, model.CellLSTM, 17, true},
		{"wide relu", wideCell, model.CellReLU, 4, false},
		{"wide lstm", wideCell, model.CellLSTM, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m32, m64 := tc.build(t, tc.cell, tc.seed)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(4, 4))
			var targets []Target[[]float64]
			for i := 0; i < 9; i++ {
				tg, err := NewTarget(ctx, m64, region(t, randX(rng, size(m64)), 0.05), -1, 8, 7, uint64(100+i))
				if err != nil {
					t.Fatal(err)
				}
				targets = append(targets, tg)
			}
			opt := DefaultPGD()
			opt.Steps, opt.LR, opt.Restarts = 25, 0.01, 2
			outs := reproducesAlone(t, m32, m64, targets, opt)
			if tc.mixed && !slices.ContainsFunc(outs, func(o Outcome[[]float64]) bool { return o.Steps < opt.Steps }) ||
				!slices.ContainsFunc(outs, func(o Outcome[[]float64]) bool { return o.Steps == opt.Steps }) {
				t.Fatal("no batch of targets that stop early beside targets that do not: the test checks less than it says")
			}
		})
	}
}

// reproducesAlone checks PGD on each target alone (one core) against the
// whole batch and the batch reversed, each on one core and on two, and
// returns the batch's outcomes.
func reproducesAlone[E any](t *testing.T, d32 model.Decoder[float32], d64 model.Decoder[float64], targets []Target[E], opt PGDOptions) []Outcome[E] {
	t.Helper()
	ctx := context.Background()
	on := func(procs int, tgs []Target[E]) []Outcome[E] {
		t.Helper()
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		outs, err := PGD(ctx, d32, d64, tgs, opt)
		if err != nil {
			t.Fatal(err)
		}
		return outs
	}
	rev := slices.Clone(targets)
	slices.Reverse(rev)
	batches := map[string][]Outcome[E]{}
	for _, procs := range []int{1, 2} {
		batches[fmt.Sprintf("batch on %d cores", procs)] = on(procs, targets)
		back := on(procs, rev)
		slices.Reverse(back)
		batches[fmt.Sprintf("reversed batch on %d cores", procs)] = back
	}
	for i := range targets {
		alone := on(1, targets[i:i+1])[0]
		for name, outs := range batches {
			o := outs[i]
			if !reflect.DeepEqual(alone.Input, o.Input) || !samePaths([]model.Result{alone.Result}, []model.Result{o.Result}) ||
				alone.Result.MinRelMargin != o.Result.MinRelMargin || alone.Found32 != o.Found32 || alone.Evals != o.Evals ||
				alone.Steps != o.Steps || alone.Success != o.Success || alone.Pick != o.Pick {
				t.Fatalf("target %d: alone and in a %s differ: rank %d/%d, length %d/%d, margin %g/%g, evals %d/%d, steps %d/%d, same input %v",
					i, name, alone.Found32, o.Found32, len(alone.Result.Tokens), len(o.Result.Tokens), alone.Result.MinRelMargin, o.Result.MinRelMargin,
					alone.Evals, o.Evals, alone.Steps, o.Steps, reflect.DeepEqual(alone.Input, o.Input))
			}
		}
	}
	return batches["batch on 1 cores"]
}

// TestLSTMCaptionerAttacked: the LSTM captioner is attacked by the same
// code, and its objective's gradient matches finite differences.
func TestLSTMCaptionerAttacked(t *testing.T) {
	ctx := context.Background()
	m32, m64 := tinyCell(t, model.CellLSTM, 2)
	rng := rand.New(rand.NewPCG(5, 5))
	x := randX(rng, size(m64))
	tp := ad.NewTape[float64](true)
	xn := tp.Var(ad.FromSlice(append([]float64(nil), x...), 1, size(m64)))
	l, base := objective(t, tp, m64, xn, LossEOSLogProb, 1)
	if err := tp.Backward(l); err != nil {
		t.Fatal(err)
	}
	const h = 1e-6
	checked := 0
	for i := range x {
		orig := x[i]
		x[i] = orig + h
		fp, rp := objective(t, ad.NewTape[float64](false), m64, ad.NewTape[float64](false).Const(ad.FromSlice(x, 1, size(m64))), LossEOSLogProb, 1)
		x[i] = orig - h
		fm, rm := objective(t, ad.NewTape[float64](false), m64, ad.NewTape[float64](false).Const(ad.FromSlice(x, 1, size(m64))), LossEOSLogProb, 1)
		x[i] = orig
		if !samePaths(rp, base) || !samePaths(rm, base) {
			continue
		}
		num := (fp.Value.Data[0] - fm.Value.Data[0]) / (2 * h)
		if math.Abs(num-xn.Grad.Data[i]) > 1e-5*math.Max(1, math.Abs(num)) {
			t.Fatalf("x[%d]: analytic %.9g, finite difference %.9g", i, xn.Grad.Data[i], num)
		}
		checked++
	}
	if checked < size(m64)/2 {
		t.Fatalf("only %d coordinates checked", checked)
	}
	tg, err := NewTarget(ctx, m64, region(t, x, 0.3), -1, 8, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	opt := DefaultPGD()
	opt.Steps, opt.LR = 50, 0.01
	outs, err := PGD(ctx, m32, m64, []Target[[]float64]{tg}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !tg.Set.Contains(outs[0].Input) || !samePaths(decode(t, m64, outs[0].Input), []model.Result{outs[0].Result}) {
		t.Fatal("LSTM PGD outcome is not a replayed input of the ball")
	}
}

func TestPGDRejectsBadOptions(t *testing.T) {
	m32, m64 := tiny(t, 1)
	for _, opt := range []PGDOptions{{Steps: 1, LR: 0, Eps: 1, Restarts: 1}, {Steps: 1, LR: 1, Eps: 0, Restarts: 1}, {Steps: 1, LR: 1, Eps: 1, Restarts: 0},
		{Steps: 1, LR: math.Inf(1), Eps: 1, Restarts: 1}, {Steps: 1, LR: math.NaN(), Eps: 1, Restarts: 1}, {Steps: -1, LR: 1, Eps: 1, Restarts: 1},
		{Steps: 1, LR: 1, Eps: 1, Restarts: 1, MaxSteps: model.MaxStepCap + 1}, {Steps: 1, LR: 1, Eps: 1, Restarts: 1, Loss: "bogus"}} {
		if _, err := PGD(context.Background(), m32, m64, []Target[[]float64](nil), opt); err == nil {
			t.Errorf("options %+v accepted", opt)
		}
	}
	if _, err := ParseLoss("bogus"); err == nil {
		t.Error("ParseLoss accepted bogus")
	}
}
