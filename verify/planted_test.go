package verify

import (
	"context"
	"testing"
	"time"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/spec"
)

// plantedModel hides a counterexample: a 2-pixel captioner that decodes
// one token everywhere in [0, 1]² except in the corner x₁ + x₂ > 1.98 (an
// area of 2·10⁻⁴), where a hidden ReLU wakes up and the output grows to
// six tokens at (1, 1). Outside the corner that unit is off, so no
// gradient points towards it.
func plantedModel(t testing.TB) *model.Captioner[float64] {
	m := toyModel(t)
	copy(m.FC1.W.W.Data, []float64{100, 100, 0, 0}) // a = ReLU(100(x₁ + x₂ − 1.98))
	copy(m.FC1.B.W.Data, []float64{-198, 0})
	copy(m.FC2.W.W.Data, []float64{1, 0, 0, 0}) // i₀ = (a, 0.7)
	copy(m.FC2.B.W.Data, []float64{0, 0.7})
	// h₁[0] = a + 0.3, then − 0.4 a step; the token wins while h[0] > 0.1.
	return m
}

// TestPlantedCounterexample: verify never answers robust below the planted
// worst case, with every pipeline setting and with time limits short
// enough to cut solves; the gradient falsifier alone does not find the
// corner, and the full pipeline with time does.
func TestPlantedCounterexample(t *testing.T) {
	m := plantedModel(t)
	ball, _ := spec.NewBall([]float64{0.5, 0.5}, 0.5, -1, 1)
	if r := decode(t, m, []float64{1, 1}, 12); len(r[0].Tokens) != 6 || r[0].Tie() {
		t.Fatalf("the corner decodes %v, want 6 clear tokens", r[0].Tokens)
	}
	if r := decode(t, m, ball.X, 12); len(r[0].Tokens) != 1 {
		t.Fatalf("the centre decodes %v, want 1 token", r[0].Tokens)
	}
	m32, err := model.Cast[float32](m)
	if err != nil {
		t.Fatal(err)
	}
	pgd := attack.DefaultPGD()
	pgd.Steps, pgd.LR, pgd.Restarts = 200, 0.01, 4
	fals := attack.Falsifier{D32: m32, D64: m, PGD: pgd, Seed: 1}
	x, err := fals.Falsify(context.Background(), ball, 1, 12, 0)
	if err != nil {
		t.Fatal(err)
	}
	if x != nil {
		if r := decode(t, m, x, 12); len(r[0].Tokens) > 1 {
			t.Fatalf("PGD found the corner (%v): the plant is not hidden from gradients", x)
		}
	}

	settings := map[string]func(*Options){
		"default":      func(*Options) {},
		"interval":     func(o *Options) { o.Bounds = BoundInterval },
		"no-abstract":  func(o *Options) { o.Abstract = false },
		"relaxed":      func(o *Options) { o.RelaxGap = 0.5 },
		"optimise":     func(o *Options) { o.Decision = false },
		"falsifier":    func(o *Options) { o.Falsifier = fals },
		"no-tokens":    func(o *Options) { o.NewLP = nil },
		"short-limit":  func(o *Options) { o.TimeLimit = 30 * time.Millisecond },
		"tiny-limit":   func(o *Options) { o.TimeLimit = 3 * time.Millisecond },
		"short+interv": func(o *Options) { o.TimeLimit = 30 * time.Millisecond; o.Bounds = BoundInterval },
		"bab":          func(o *Options) { o.BaB = true },
		"bab-only":     func(o *Options) { o.BaB, o.Solver, o.NewLP, o.Abstract = true, nil, nil, false },
		"bab-short":    func(o *Options) { o.BaB, o.Solver, o.TimeLimit = true, nil, 5*time.Millisecond },
		"search":       func(o *Options) { o.Falsifier, o.Search, o.BaB = fals, fals, true },
		"search-only":  func(o *Options) { o.Search, o.BaB, o.Solver, o.NewLP, o.Abstract = fals, true, nil, nil, false },
	}
	found := 0
	for name, set := range settings {
		for k := 1; k <= 5; k++ {
			opt := verifyOpts()
			set(&opt)
			r := verifyOne(t, m, ball, k, opt)
			switch r.Verdict {
			case Robust:
				t.Fatalf("%s: robust at K̂ = %d (stage %s), but (1, 1) decodes 6 tokens", name, k, r.Stage)
			case Vulnerable:
				found++
			}
		}
		opt := verifyOpts()
		set(&opt)
		if r := verifyOne(t, m, ball, 6, opt); r.Verdict == Vulnerable {
			t.Fatalf("%s: vulnerable at K̂ = 6, the true maximum", name)
		}
	}
	if found == 0 {
		t.Fatal("no setting found the planted counterexample")
	}
	// The worst-case search must not certify below the plant either.
	net, err := Lower(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Bound(context.Background(), net, m, ball, 0, BoundOptions{Options: verifyOpts(), MaxK: 10})
	if err != nil {
		t.Fatal(err)
	}
	if b.Upper >= 0 && b.Upper < 6 || b.Lower > 6 {
		t.Fatalf("bound [%d, %d] misses the planted worst case 6", b.Lower, b.Upper)
	}
	if !b.Certified() {
		t.Logf("bound [%d, %d]: %+v", b.Lower, b.Upper, b.Steps)
	}
}

// branchModel decodes one token ("a", then eos) unless its first token is
// "b", which it emits only where x₁ > 2/3; after "b" it never stops. Along
// the path "a" every logit after step 0 is independent of the input and
// step 0's eos term is clamped, so the plain objective has no gradient;
// forcing "b" first has one (o[b] = 3·ReLU(x₁) against o[a] = 2).
func branchModel(t testing.TB) *model.Captioner[float64] {
	m, err := model.NewCaptioner[float64](pixelConfig(2, 3), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params() {
		clear(p.W.Data)
	}
	copy(m.FC1.W.W.Data, []float64{1, 0, 0, 0}) // f = (ReLU(x₁), 1)
	copy(m.FC1.B.W.Data, []float64{0, 1})
	copy(m.FC2.W.W.Data, []float64{1, 0, 0, 1}) // i₀ = f
	// h = (signal, one, step-0 indicator); the embedding of "b" is (1, 0).
	copy(m.RNN.Wih.W.Data, []float64{1, 0, 0, 0, 0, 1})
	copy(m.RNN.Bih.W.Data, []float64{0, 1, -0.5})
	copy(m.Emb.W.W.Data, []float64{0, 0, 1, 0, 0, 0})
	// o[a] = 2, o[b] = 3·signal, o[eos] = 2.5 − 10·signal − 20·indicator.
	copy(m.Out.W.W.Data, []float64{0, 2, 0, 3, 0, 0, -10, 2.5, -20})
	return m
}

// TestTargetedFalsifier: on branchModel the plain PGD falsifier stays on
// the path "a" and its candidate does not replay; the targeted one pushes
// the decoder onto "b" and verify answers vulnerable at the attack stage.
func TestTargetedFalsifier(t *testing.T) {
	m := branchModel(t)
	ball, _ := spec.NewBall([]float64{0.3, 0}, 0.5, -1, 1)
	if r := decode(t, m, ball.X, 12); len(r[0].Tokens) != 1 || r[0].Tokens[0] != 0 {
		t.Fatalf("the centre decodes %v, want [a]", r[0].Tokens)
	}
	if r := decode(t, m, []float64{0.8, 0}, 12); r[0].Stopped || r[0].Tokens[0] != 1 {
		t.Fatalf("x₁ = 0.8 decodes %v (stopped %v), want b and no eos", r[0].Tokens, r[0].Stopped)
	}
	m32, err := model.Cast[float32](m)
	if err != nil {
		t.Fatal(err)
	}
	pgd := attack.DefaultPGD()
	pgd.Steps, pgd.LR, pgd.Restarts = 100, 0.01, 1
	for _, targeted := range []bool{false, true} {
		f := attack.Falsifier{D32: m32, D64: m, PGD: pgd, Seed: 1, Targeted: targeted}
		x, err := f.Falsify(context.Background(), ball, 1, 12, 0)
		if err != nil {
			t.Fatal(err)
		}
		long := x != nil && len(decode(t, m, x, 12)[0].Tokens) > 1
		if long != targeted {
			t.Fatalf("targeted %v: candidate %v decodes longer than K̂ = 1: %v", targeted, x, long)
		}
		opt := verifyOpts()
		opt.Falsifier = f
		r := verifyOne(t, m, ball, 1, opt)
		if targeted && (r.Verdict != Vulnerable || r.Stage != "attack") {
			t.Fatalf("targeted falsifier: %s at stage %q (%s)", r.Verdict, r.Stage, r.Reason)
		}
		if r.Verdict == Robust {
			t.Fatal("robust, but x₁ = 0.8 never stops")
		}
	}
}
