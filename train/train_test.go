package train

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/mnist"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
)

// synthetic builds a small Multi-MNIST set from random "digits" whose class
// is encoded in their brightness pattern, so a tiny model can learn it.
func synthetic(t testing.TB, n int, seed uint64) *multimnist.Dataset {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	src := &mnist.Set{N: 200, Images: make([]uint8, 200*784), Labels: make([]uint8, 200)}
	for i := 0; i < src.N; i++ {
		c := uint8(i % 10)
		src.Labels[i] = c
		for p := 0; p < 784; p++ {
			if (p/28+int(c))%10 < 3 && rng.Float64() < 0.9 {
				src.Images[i*784+p] = 255
			}
		}
	}
	ds, err := multimnist.Generate(src, n, seed)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestShiftKeepsDigitsInside(t *testing.T) {
	ds := synthetic(t, 50, 3)
	rng := rand.New(rand.NewPCG(1, 1))
	const size = multimnist.Height * multimnist.Width
	plain, _ := multimnist.NewSource[float32](ds, -1, 1, false)
	shifted, _ := multimnist.NewSource[float32](ds, -1, 1, true)
	moved := 0
	for trial := 0; trial < 20; trial++ {
		idx := []int{trial % ds.N, (trial * 7) % ds.N}
		orig, _, _ := plain.Batch(idx, nil)
		buf, _, labels := shifted.Batch(idx, rng)
		for k := range idx {
			a, b := orig[k*size:(k+1)*size], buf[k*size:(k+1)*size]
			// The shifted canvas holds the same pixels (digits never cross
			// the border), so the ink totals agree exactly.
			var sa, sb float64
			for p := range a {
				sa += float64(a[p]) + 1
				sb += float64(b[p]) + 1
				if a[p] != b[p] {
					moved++
				}
			}
			if sa != sb {
				t.Fatalf("trial %d: ink %v before, %v after the shift", trial, sa, sb)
			}
			if !slices.Equal(labels[k], ds.Labels[idx[k]]) {
				t.Fatalf("trial %d: label %v, want %v", trial, labels[k], ds.Labels[idx[k]])
			}
		}
	}
	if moved == 0 {
		t.Fatal("no canvas was shifted")
	}
}

func TestClipGrad(t *testing.T) {
	p := ad.NewParam[float32]("w", 2)
	p.G.Data[0], p.G.Data[1] = 3, 4
	clipGrad([]*ad.Param[float32]{p}, 1)
	if n := math.Hypot(float64(p.G.Data[0]), float64(p.G.Data[1])); math.Abs(n-1) > 1e-6 {
		t.Fatalf("norm %v after clipping to 1", n)
	}
	clipGrad([]*ad.Param[float32]{p}, 10) // below the limit: unchanged
	if math.Abs(float64(p.G.Data[0])-0.6) > 1e-6 {
		t.Fatalf("gradient changed below the clip norm: %v", p.G.Data)
	}
}

func tinyCfg(cell string) *model.Config {
	c := model.DefaultCaptionerConfig()
	a := c.Arch.(*model.CaptionerConfig)
	a.Conv = []model.ConvConfig{{OutChannels: 2, Kernel: 3, Stride: 4, Padding: 1}}
	a.FCHidden, a.Embedding, a.Hidden, a.Cell = 16, 8, 16, cell
	return &c
}

func source[T float32 | float64](t testing.TB, ds *multimnist.Dataset, shift bool) *multimnist.Source[T] {
	t.Helper()
	s, err := multimnist.NewSource[T](ds, -1, 1, shift)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newModel(t testing.TB, cell string, seed uint64) model.Decoder[float32] {
	t.Helper()
	m, err := model.New[float32](tinyCfg(cell), rand.New(rand.NewPCG(seed, 0)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTrainingLearnsAndResumes: a few epochs lower the loss and raise the
// accuracy on a learnable synthetic set, and an interrupted run resumed
// from its checkpoint ends with exactly the weights of an uninterrupted one.
func TestTrainingLearnsAndResumes(t *testing.T) {
	for _, cell := range []string{model.CellReLU, model.CellLSTM} {
		t.Run(cell, func(t *testing.T) { learnsAndResumes(t, cell) })
	}
}

func learnsAndResumes(t *testing.T, cell string) {
	ds := synthetic(t, 512, 5)
	src := source[float32](t, ds, true)
	opt := Options{Seed: 2, Epochs: 4, BatchSize: 32, LR: 3e-3, FinalLR: 1e-4, ClipNorm: 5}
	ctx := context.Background()
	m := newModel(t, cell, opt.Seed)
	eval := source[float32](t, ds, false)
	before, _ := Evaluate(ctx, m, eval, 0, nil)
	var first float64
	o := opt
	o.Progress = func(p Progress) {
		if p.Step == 1 {
			first = p.Loss
		}
	}
	last, err := Fit(ctx, m, src, o)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := Evaluate(ctx, m, eval, 0, nil)
	if !(last < first*0.8) || after.SequenceAccuracy <= before.SequenceAccuracy {
		t.Fatalf("loss %v → %v, accuracy %v → %v: not learning", first, last, before.SequenceAccuracy, after.SequenceAccuracy)
	}

	// Interrupt in the middle of the third epoch (a cancelled context),
	// after a checkpoint at every step, then resume.
	dir := t.TempDir()
	m2 := newModel(t, cell, opt.Seed)
	o2 := opt
	o2.CheckpointDir, o2.CheckpointEvery = dir, time.Nanosecond
	cctx, cancel := context.WithCancel(ctx)
	o2.Progress = func(p Progress) {
		if p.Step == 2*(ds.N/opt.BatchSize)+3 {
			cancel()
		}
	}
	if _, err := Fit(cctx, m2, src, o2); err == nil {
		t.Fatal("cancelled run returned no error")
	}
	if _, err := os.Stat(filepath.Join(dir, checkpointFile)); err != nil {
		t.Fatal(err)
	}
	m3 := newModel(t, cell, opt.Seed)
	o2.Progress = nil
	var ends []int
	o2.EpochEnd = func(epoch int) error { ends = append(ends, epoch); return nil }
	resumed, err := Fit(ctx, m3, src, o2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ends, []int{3, 4}) {
		t.Fatalf("resumed in epoch 3 of 4, EpochEnd called for %v", ends)
	}
	o2.EpochEnd = nil
	if resumed != last {
		t.Fatalf("last epoch's mean loss: resumed %v, uninterrupted %v", resumed, last)
	}
	for i, p := range m3.Params() {
		for j, v := range p.W.Data {
			if v != m.Params()[i].W.Data[j] {
				t.Fatalf("%s[%d]: resumed %v, uninterrupted %v", p.Name, j, v, m.Params()[i].W.Data[j])
			}
		}
	}
	// A checkpoint written with other settings is refused, naming them.
	for _, c := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Seed = 99 }, "seed"},
		{func(o *Options) { o.Epochs = 9 }, "epochs"},
		{func(o *Options) { o.LR = 1e-2 }, "lr"},
		{func(o *Options) { o.BatchSize = 16 }, "batch_size"},
		{func(o *Options) { o.Shards = 3 }, "shards"},
	} {
		o3 := o2
		c.change(&o3)
		_, err := Fit(ctx, newModel(t, cell, opt.Seed), src, o3)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("checkpoint with another %s: error %v", c.want, err)
		}
	}
}

// TestOptionsValidate: every out-of-range or non-finite setting is refused
// before any work, naming the setting.
func TestOptionsValidate(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for _, c := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Dropout = 1.5 }, "dropout"},
		{func(o *Options) { o.Dropout = 1 }, "dropout"},
		{func(o *Options) { o.LabelSmoothing = 1 }, "label smoothing"},
		{func(o *Options) { o.LabelSmoothing = math.NaN() }, "label smoothing"},
		{func(o *Options) { o.WeightDecay = math.NaN() }, "weight decay"},
		{func(o *Options) { o.ClipNorm = math.NaN() }, "clip norm"},
		{func(o *Options) { o.StabilityEps = math.NaN() }, "stability radius"},
		{func(o *Options) { o.Stability, o.StabilityEps = 1, 0 }, "stability radius"},
		{func(o *Options) { o.LR = math.Inf(1) }, "learning rate"},
		{func(o *Options) { o.Epochs = 0 }, "epochs"},
		{func(o *Options) { o.StabilityRamp = 2 }, "ramp"},
		{func(o *Options) { o.IBP = 1.5 }, "IBP weight"},
		{func(o *Options) { o.IBP = math.NaN() }, "IBP weight"},
		{func(o *Options) { o.IBP, o.IBPEps = 0.5, 0 }, "IBP radius"},
		{func(o *Options) { o.IBPEps = math.Inf(1) }, "IBP radius"},
		{func(o *Options) { o.IBPRamp = -0.1 }, "IBP ramp"},
		{func(o *Options) { o.IBP, o.IBPEps, o.IBPBound = 0.5, 0.1, "zonotope" }, "IBP bound \"zonotope\""},
		{func(o *Options) { o.IBPBound = model.BoundCROWNIBP }, "certified loss, which is off"},
		{func(o *Options) { o.IBPAttack = true }, "certified loss, which is off"},
		{func(o *Options) { o.SABR = 0.5 }, "certified loss, which is off"},
		{func(o *Options) { o.IBP, o.IBPEps, o.SABR = 0.5, 0.1, 1 }, "SABR box fraction 1"},
		{func(o *Options) { o.IBP, o.IBPEps, o.SABR = 0.5, 0.1, -0.1 }, "SABR box fraction -0.1"},
		{func(o *Options) { o.IBP, o.IBPEps, o.SABR = 0.5, 0.1, math.NaN() }, "SABR box fraction NaN"},
		{func(o *Options) { o.Distill = 1.5 }, "distillation weight 1.5"},
		{func(o *Options) { o.Distill = math.NaN() }, "distillation weight NaN"},
		{func(o *Options) { o.DistillTemp = 0 }, "distillation temperature 0"},
		{func(o *Options) { o.DistillTemp = math.Inf(1) }, "distillation temperature +Inf"},
		{func(o *Options) { o.Shards = -1 }, "shards"},
		{func(o *Options) { o.Shards = 1000 }, "shards"},
	} {
		o := DefaultOptions()
		c.change(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
}

// TestStabilityTrainingStabilises: the same run with the ReLU-stability
// regulariser ends with far fewer unstable encoder ReLUs over the ball it
// was trained for, and still learns.
func TestStabilityTrainingStabilises(t *testing.T) {
	ds := synthetic(t, 256, 7)
	const eps = 0.1
	run := func(stability float64) (unstable int, acc float64) {
		m := newModel(t, model.CellReLU, 3)
		opt := Options{Seed: 3, Epochs: 3, BatchSize: 32, LR: 3e-3, ClipNorm: 5, Stability: stability, StabilityEps: eps, StabilityRamp: 0.3}
		if _, err := Fit(context.Background(), m, source[float32](t, ds, false), opt); err != nil {
			t.Fatal(err)
		}
		size := m.Input().Size()
		x := make([]float32, 64*size)
		multimnist.Normalize(x, ds, rand.New(rand.NewPCG(9, 9)).Perm(ds.N)[:64])
		tp := ad.NewTape[float32](false)
		_, unstable = m.(model.Stabilizer[float32]).StabilityLoss(tp, tp.Const(ad.FromSlice(x, 64, size)), eps)
		ev, _ := Evaluate(context.Background(), m, source[float32](t, ds, false), 0, nil)
		return unstable, ev.SequenceAccuracy
	}
	u0, a0 := run(0)
	u1, a1 := run(1)
	if u1*2 > u0 {
		t.Fatalf("unstable ReLUs: %d with the regulariser, %d without: want at most half", u1, u0)
	}
	if a1 < 0.5*a0 {
		t.Fatalf("sequence accuracy %.3f with the regulariser, %.3f without", a1, a0)
	}
	t.Logf("unstable %d → %d, sequence accuracy %.3f → %.3f", u0, u1, a0, a1)
}

// TestCertifiedTrainingCertifies: the same run with interval bound
// propagation's loss ends with many training images' labels certified
// over the ball it was trained for — checked by the interval bound, and by
// decoding corners of certified balls — where plain training certifies
// none, and still learns.
func TestCertifiedTrainingCertifies(t *testing.T) {
	ds := synthetic(t, 256, 7)
	const eps = 0.01
	run := func(ibp float64) (certified int, acc float64, m model.Decoder[float32], x []float32, labels [][]int) {
		m = newModel(t, model.CellReLU, 3)
		opt := Options{Seed: 3, Epochs: 40, BatchSize: 32, LR: 3e-3, ClipNorm: 5, IBP: ibp, IBPEps: eps, IBPRamp: 0.5}
		if _, err := Fit(context.Background(), m, source[float32](t, ds, false), opt); err != nil {
			t.Fatal(err)
		}
		idx := rand.New(rand.NewPCG(9, 9)).Perm(ds.N)[:64]
		x, _, labels = source[float32](t, ds, false).Batch(idx, nil)
		tp := ad.NewTape[float32](false)
		_, certified, err := m.(model.Certifier[float32]).CertifiedLoss(tp, tp.Const(ad.FromSlice(x, 64, m.Input().Size())), labels, eps, model.BoundInterval)
		if err != nil {
			t.Fatal(err)
		}
		ev, _ := Evaluate(context.Background(), m, source[float32](t, ds, false), 0, nil)
		return certified, ev.SequenceAccuracy, m, x, labels
	}
	c0, a0, _, _, _ := run(0)
	c1, a1, m, x, labels := run(0.5)
	// On this small, hard set (plain training reaches about two thirds
	// sequence accuracy and certifies nothing), IBP certifies most of the
	// images it still gets right, at about half the accuracy: the usual
	// price of certified training.
	if c1 < 10 || c1 < c0+10 {
		t.Fatalf("%d of 64 images certified with the certified loss, %d without: want 10 more", c1, c0)
	}
	if a1 < 0.4*a0 {
		t.Fatalf("sequence accuracy %.3f with the certified loss, %.3f without", a1, a0)
	}
	// Brute force on the first certified images: no sampled input of the
	// ball decodes to anything but the label.
	size := m.Input().Size()
	rng := rand.New(rand.NewPCG(5, 5))
	checked := 0
	for i := range labels {
		tp := ad.NewTape[float32](false)
		_, ok, _ := m.(model.Certifier[float32]).CertifiedLoss(tp, tp.Const(ad.FromSlice(x[i*size:(i+1)*size], 1, size)), labels[i:i+1], eps, model.BoundInterval)
		if ok == 0 || checked == 4 {
			continue
		}
		checked++
		xs := make([]float32, 100*size)
		for s := range 100 {
			for j, v := range x[i*size : (i+1)*size] {
				lo, hi := max(float64(v)-eps, -1), min(float64(v)+eps, 1)
				xs[s*size+j] = float32(lo + float64(rng.IntN(2))*(hi-lo)) // corners
			}
		}
		res, err := model.Decode[float32](context.Background(), m, model.Batch[float32]{X: xs}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for s, r := range res {
			if !r.Stopped || !slices.Equal(r.Tokens, labels[i]) {
				t.Fatalf("image %d certified, but corner %d decodes %v (stopped %v), label %v", i, s, r.Tokens, r.Stopped, labels[i])
			}
		}
	}
	if checked == 0 {
		t.Fatal("no certified image to check")
	}
	t.Logf("certified %d → %d of 64, sequence accuracy %.3f → %.3f", c0, c1, a0, a1)
}

// TestShardedStep: a step on shards computes the gradient of one step on
// the whole batch (up to float32 rounding), with the stability
// regulariser or the certified loss and dropout's masks aside; and a
// sharded run ends with the same weights bit for bit on one core as on two.
func TestShardedStep(t *testing.T) {
	ds := synthetic(t, 96, 11)
	src := source[float32](t, ds, false)
	x, tokens, labels := src.Batch(rand.New(rand.NewPCG(1, 2)).Perm(ds.N)[:32], nil)
	b := Batch{X: x, Tokens: tokens, Labels: labels}
	grads := func(shards int, loss Options) ([][]float32, float64) {
		m := newModel(t, model.CellReLU, 4)
		opt := Options{Seed: 1, Epochs: 1, BatchSize: 32, LR: 1e-3, Shards: shards,
			Stability: loss.Stability, StabilityEps: loss.StabilityEps, IBP: loss.IBP, IBPEps: loss.IBPEps,
			IBPBound: loss.IBPBound, IBPAttack: loss.IBPAttack, SABR: loss.SABR, Teacher: loss.Teacher, Distill: loss.Distill, DistillTemp: loss.DistillTemp, DistillHardEOS: loss.DistillHardEOS}
		tr, err := NewTrainer(m, opt)
		if err != nil {
			t.Fatal(err)
		}
		r, err := tr.Step(b, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var g [][]float32
		for _, p := range m.Params() {
			g = append(g, slices.Clone(p.G.Data))
		}
		return g, r.Loss
	}
	for _, loss := range []Options{{}, {Stability: 0.5, StabilityEps: 0.1}, {IBP: 0.5, IBPEps: 0.05},
		{IBP: 0.5, IBPEps: 0.05, IBPBound: model.BoundCROWNIBP}, {IBP: 0.5, IBPEps: 0.05, IBPAttack: true},
		{IBP: 0.5, IBPEps: 0.05, SABR: 0.3, IBPBound: model.BoundCROWNIBP},
		{IBP: 0.5, IBPEps: 0.05, IBPAttack: true, Teacher: newModel(t, model.CellLSTM, 9), Distill: 0.5, DistillTemp: 2, DistillHardEOS: true}} {
		g1, l1 := grads(1, loss)
		for _, shards := range []int{2, 3} {
			gs, ls := grads(shards, loss)
			if math.Abs(ls-l1) > 1e-5*math.Abs(l1) {
				t.Fatalf("stability %v, IBP %v, %d shards: loss %v, one shard %v", loss.Stability, loss.IBP, shards, ls, l1)
			}
			for i := range g1 {
				var scale float64
				for _, v := range g1[i] {
					scale = max(scale, math.Abs(float64(v)))
				}
				for j := range g1[i] {
					if d := math.Abs(float64(gs[i][j] - g1[i][j])); d > 1e-4*scale+1e-7 {
						t.Fatalf("stability %v, IBP %v, %d shards: gradient %d[%d] %v, one shard %v", loss.Stability, loss.IBP, shards, i, j, gs[i][j], g1[i][j])
					}
				}
			}
		}
	}

	run := func(procs int) model.Decoder[float32] {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		m := newModel(t, model.CellReLU, 4)
		opt := Options{Seed: 2, Epochs: 2, BatchSize: 32, LR: 3e-3, Dropout: 0.3, Shards: 2}
		if _, err := Fit(context.Background(), m, source[float32](t, ds, true), opt); err != nil {
			t.Fatal(err)
		}
		return m
	}
	one, two := run(1), run(2)
	for i, p := range one.Params() {
		if !slices.Equal(p.W.Data, two.Params()[i].W.Data) {
			t.Fatalf("%s: one core and two cores end with different weights", p.Name)
		}
	}
}

// TestTokenRate: the rate counts the tokens of the steps after the
// window's first over the time between its ends, and forgets older steps.
func TestTokenRate(t *testing.T) {
	r := TokenRate{Window: 3}
	for i, want := range []float64{0, 10, 10, 15} {
		// Steps of 10, 10, 10 then 20 tokens, one second apart.
		toks := 10
		if i == 3 {
			toks = 20
		}
		if got := r.Add(Progress{Tokens: toks, Elapsed: time.Duration(i) * time.Second}); got != want {
			t.Errorf("step %d: rate %v, want %v", i, got, want)
		}
	}
}

// TestDistillation: training on the soft term alone brings the model's
// distributions toward the teacher's (their KL divergence along the
// labels falls by more than half), a teacher that reads other tokens is
// refused, and a checkpoint written with another teacher is not resumed.
func TestDistillation(t *testing.T) {
	ds := synthetic(t, 256, 13)
	src := source[float32](t, ds, false)
	x, _, labels := src.Batch(rand.New(rand.NewPCG(3, 3)).Perm(ds.N)[:64], nil)
	teacher := newModel(t, model.CellLSTM, 9)
	const temp = 2
	// kl is T²·Σ_t mean_r KL(teacher ‖ m) at temp along the labels: the
	// soft term of m less the teacher's own.
	soft := func(m model.Decoder[float32]) float64 {
		tp := ad.NewTape[float32](false)
		in := model.Input[float32]{X: tp.Const(ad.FromSlice(x, len(labels), len(x)/len(labels)))}
		st, err := model.TeacherSoftTargets(tp, teacher, in, labels, temp)
		if err != nil {
			t.Fatal(err)
		}
		l, err := model.DistilledLoss(tp, m, in, labels, st, 1)
		if err != nil {
			t.Fatal(err)
		}
		return float64(l.Value.Data[0])
	}
	kl := func(m model.Decoder[float32]) float64 { return soft(m) - soft(teacher) }
	m := newModel(t, model.CellReLU, 4)
	before := kl(m)
	dir := t.TempDir()
	opt := Options{Seed: 1, Epochs: 2, BatchSize: 32, LR: 3e-3, ClipNorm: 5, Teacher: teacher, TeacherID: "teacher-a", Distill: 1, DistillTemp: temp, CheckpointDir: dir}
	if _, err := Fit(context.Background(), m, src, opt); err != nil {
		t.Fatal(err)
	}
	after := kl(m)
	t.Logf("KL divergence from the teacher: %v before, %v after", before, after)
	if !(before > 0.01 && after < before/2) {
		t.Fatalf("KL divergence from the teacher %v before, %v after two epochs of distillation: not following it", before, after)
	}
	opt.TeacherID, opt.Epochs = "teacher-b", 3
	if _, err := Fit(context.Background(), m, src, opt); err == nil || !strings.Contains(err.Error(), "teacher") {
		t.Fatalf("a checkpoint written with another teacher resumed: %v", err)
	}
	other := tinyCfg(model.CellReLU)
	other.Vocab = append(slices.Clone(other.Vocab[:len(other.Vocab)-1]), "x", other.Vocab[len(other.Vocab)-1])
	other.EOS = len(other.Vocab) - 1
	wide, err := model.New[float32](other, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Seed: 1, Epochs: 1, BatchSize: 32, LR: 1e-3, Teacher: wide, TeacherID: "wide", Distill: 0.5, DistillTemp: 1}
	if err := o.ValidateFor(newModel(t, model.CellReLU, 4)); err == nil || !strings.Contains(err.Error(), "teacher wide: vocabulary 12") {
		t.Fatalf("a teacher with another vocabulary: %v", err)
	}
}
