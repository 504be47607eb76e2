package attack

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

func tinyConfig() model.Config {
	c := model.DefaultCaptionerConfig()
	c.Input = model.InputConfig{Channels: 1, Height: 4, Width: 6, Min: -1, Max: 1}
	c.Conv = []model.ConvConfig{{OutChannels: 3, Kernel: 3, Stride: 2, Padding: 1}}
	c.FCHidden, c.Embedding, c.Hidden = 6, 4, 5
	c.Vocab = []string{"a", "b", "c", "<eos>"}
	c.EOS = 3
	c.MaxSteps = 8
	return c
}

func tiny(t testing.TB, seed uint64) (*model.Captioner[float32], *model.Captioner[float64]) {
	t.Helper()
	m64, err := model.NewCaptioner[float64](tinyConfig(), rand.New(rand.NewPCG(seed, 11)))
	if err != nil {
		t.Fatal(err)
	}
	return model.Cast[float32](m64), m64
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
			n := m.InputSize()
			x := randX(rng, rows*n)
			eval := func() (float64, []model.Result) {
				tp := ad.NewTape[float64](false)
				l, res := Objective(tp, m, tp.Const(ad.FromSlice(x, rows, n)), 8, loss, 0.5)
				return l.Value.Data[0], res
			}
			tp := ad.NewTape[float64](true)
			xn := tp.Var(ad.FromSlice(append([]float64(nil), x...), rows, n))
			l, base := Objective(tp, m, xn, 8, loss, 0.5)
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
	x := randX(rng, rows*m.InputSize())
	tp := ad.NewTape[float64](false)
	_, res := Objective(tp, m, tp.Const(ad.FromSlice(x, rows, m.InputSize())), 8, LossMargin, 1)
	want, err := m.Decode(context.Background(), x, rows, 8)
	if err != nil {
		t.Fatal(err)
	}
	if !samePaths(res, want) {
		t.Fatal("objective's decoded paths differ from Decode")
	}
}

// lengthenable finds tiny models and inputs where some point of the ball
// decodes longer than the centre (by dense sampling), so attacks have
// something to find.
func lengthenable(t *testing.T, want int) (m32s []*model.Captioner[float32], m64s []*model.Captioner[float64], targets []Target) {
	ctx := context.Background()
	for seed := uint64(1); seed < 400 && len(targets) < want; seed++ {
		m32, m64 := tiny(t, seed)
		rng := rand.New(rand.NewPCG(seed, 2))
		x0 := randX(rng, m64.InputSize())
		tg, err := NewTarget(ctx, m64, x0, 0.3, -1, 8, -1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !tg.Original.Stopped || len(tg.Original.Tokens) > 4 {
			continue
		}
		o, err := RandomSearch(ctx, m32, m64, tg, RandomOptions{Samples: 3000, Batch: 500, Seed: seed})
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
		o, err := RandomSearch(context.Background(), m32s[i], m64s[i], tg, RandomOptions{Samples: 2000, Batch: 300, Seed: 9})
		if err != nil {
			t.Fatal(err)
		}
		if !spec.Contains(tg.Spec.Ball, o.Input) {
			t.Fatal("witness outside the ball")
		}
		res, _ := m64s[i].Decode(context.Background(), o.Input, 1, 8)
		if !samePaths(res, []model.Result{o.Result}) {
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

// TestPGDLengthens: on targets where random search shows a longer output
// exists, batched PGD finds longer outputs too, and every claimed success
// replays in float64 from an input inside the ball.
func TestPGDLengthens(t *testing.T) {
	m32s, m64s, targets := lengthenable(t, 6)
	ctx := context.Background()
	found := 0
	for i := range targets {
		opt := DefaultPGD()
		opt.Steps, opt.LR, opt.Restarts, opt.Seed = 300, 0.01, 2, uint64(i)
		outs, err := PGD(ctx, m32s[i], m64s[i], targets[i:i+1], opt)
		if err != nil {
			t.Fatal(err)
		}
		o := outs[0]
		if !spec.Contains(targets[i].Spec.Ball, o.Input) {
			t.Fatal("PGD witness outside the ball")
		}
		res, _ := m64s[i].Decode(ctx, o.Input, 1, 8)
		if !samePaths(res, []model.Result{o.Result}) {
			t.Fatal("PGD outcome does not match a fresh float64 decode")
		}
		if o.Success {
			found++
			if !spec.Exceeds(res[0], targets[i].Spec.K) {
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

func TestPGDBatchedEqualsSingle(t *testing.T) {
	m32, m64 := tiny(t, 4)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(4, 4))
	var targets []Target
	for i := 0; i < 3; i++ {
		tg, err := NewTarget(ctx, m64, randX(rng, m64.InputSize()), 0.2, -1, 8, -1, 1)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
	}
	opt := DefaultPGD()
	opt.Steps, opt.LR, opt.EarlyStop = 40, 0.01, false
	all, err := PGD(ctx, m32, m64, targets, opt)
	if err != nil {
		t.Fatal(err)
	}
	for i := range targets {
		one, err := PGD(ctx, m32, m64, targets[i:i+1], opt)
		if err != nil {
			t.Fatal(err)
		}
		for j := range one[0].Input {
			if math.Abs(one[0].Input[j]-all[i].Input[j]) > 1e-5 {
				t.Fatalf("target %d: batched and single PGD differ at %d: %v vs %v", i, j, all[i].Input[j], one[0].Input[j])
			}
		}
	}
}

func TestPGDRejectsBadOptions(t *testing.T) {
	m32, m64 := tiny(t, 1)
	for _, opt := range []PGDOptions{{Steps: 1, LR: 0, Eps: 1, Restarts: 1}, {Steps: 1, LR: 1, Eps: 0, Restarts: 1}, {Steps: 1, LR: 1, Eps: 1, Restarts: 0}} {
		if _, err := PGD(context.Background(), m32, m64, nil, opt); err == nil {
			t.Errorf("options %+v accepted", opt)
		}
	}
	if _, err := ParseLoss("bogus"); err == nil {
		t.Error("ParseLoss accepted bogus")
	}
}
