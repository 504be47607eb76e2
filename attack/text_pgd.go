package attack

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/model"
)

// RelaxedOptions configures the relaxed text attacks: PGD through a
// Gumbel-softmax relaxation of the tokens (GumbelPGD) and PGD on the
// embeddings themselves (EmbeddingPGD).
type RelaxedOptions struct {
	Steps int     // iterations (paper: 800)
	LR    float64 // Adam learning rate (paper: 0.005)
	// Tau is the Gumbel-softmax temperature (GumbelPGD only).
	Tau  float64
	Eps  float64 // clip ε of J̃
	Loss Loss
	// MaxSteps caps decoding (≤ 0: the model's).
	MaxSteps int
	// Horizon caps the steps the objective's unrolled decoding runs (≤ 0:
	// MaxSteps). Unrolling costs the attack a forward and backward pass
	// per output token, so a row already past any length of interest
	// would spend most of the budget; the final replay still decodes to
	// MaxSteps.
	Horizon int
	// Progress, if set, is called after each iteration with the count and
	// the number of targets whose relaxed input's float32 output is
	// longer than their K̂ so far.
	Progress func(step, lengthened int)
}

// DefaultGumbel returns the paper's settings (§5.2, NMT): 800 iterations
// of Adam at 0.005, temperature 1.
func DefaultGumbel() RelaxedOptions {
	return RelaxedOptions{Steps: 800, LR: 0.005, Tau: 1, Eps: 1, Loss: LossMargin}
}

// Validate checks the options before any work.
func (o RelaxedOptions) Validate() error {
	var errs []error
	if o.Steps < 0 {
		errs = append(errs, fmt.Errorf("steps %d must be non-negative", o.Steps))
	}
	if !(o.LR > 0) || math.IsInf(o.LR, 0) {
		errs = append(errs, fmt.Errorf("learning rate %v must be positive and finite", o.LR))
	}
	if !(o.Tau > 0) || math.IsInf(o.Tau, 0) {
		errs = append(errs, fmt.Errorf("Gumbel-softmax temperature %v must be positive and finite", o.Tau))
	}
	if !(o.Eps > 0) || math.IsInf(o.Eps, 0) {
		errs = append(errs, fmt.Errorf("clip ε %v must be positive and finite", o.Eps))
	}
	if o.MaxSteps > model.MaxStepCap {
		errs = append(errs, fmt.Errorf("step cap %d exceeds the supported %d", o.MaxSteps, model.MaxStepCap))
	}
	if o.Horizon > model.MaxStepCap {
		errs = append(errs, fmt.Errorf("objective horizon %d exceeds the supported step cap %d", o.Horizon, model.MaxStepCap))
	}
	if _, err := ParseLoss(string(o.Loss)); o.Loss != "" && err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// relaxed is the shared machinery of the relaxed attacks: per target the
// chosen positions and a variable (π for Gumbel, embedding rows for the
// embedding attack), one Adam over all of them.
type relaxed struct {
	d32      model.Decoder[float32]
	table    *ad.Param[float32] // source embedding table [V, E]
	targets  []TextTarget
	pos      [][]int // chosen positions per target
	vars     []*ad.Param[float32]
	opt      RelaxedOptions
	maxSteps int
	horizon  int    // steps the objective unrolls
	keep     []bool // allowed tokens (columns π may use)
	// freeze retires a target whose relaxed input's output reaches the
	// horizon without stopping: the objective has nothing left to gain
	// there. Only for a deterministic relaxation (the embedding attack): a
	// Gumbel sample that got there once may not again.
	freeze bool
}

func newRelaxed(d32 model.Decoder[float32], targets []TextTarget, opt RelaxedOptions) (*relaxed, error) {
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("attack: %w", err)
	}
	if len(targets) == 0 {
		return nil, errors.New("attack: no targets")
	}
	emb, ok := d32.(model.SourceEmbedder[float32])
	if !ok {
		return nil, fmt.Errorf("attack: the %s model exposes no source embedding to relax", d32.Config().Architecture)
	}
	if opt.Loss == "" {
		opt.Loss = LossMargin
	}
	r := &relaxed{d32: d32, table: emb.SourceEmbedding(), targets: targets, opt: opt, maxSteps: opt.MaxSteps}
	if r.maxSteps <= 0 {
		r.maxSteps = d32.MaxSteps()
	}
	r.horizon = r.maxSteps
	if opt.Horizon > 0 && opt.Horizon < r.maxSteps {
		r.horizon = opt.Horizon
	}
	v := r.table.W.Rows()
	r.keep = make([]bool, v)
	for id := range r.keep {
		r.keep[id] = targets[0].Set.Allowed(id)
	}
	for _, tg := range targets {
		r.pos = append(r.pos, tg.Set.Positions(tg.rng()))
	}
	return r, nil
}

// embedded builds the source embedding rows of the active targets on tp,
// rows of the chosen positions from chosen(k) [len(pos[k]), E], the others
// the table's rows of the original tokens.
func (r *relaxed) embedded(tp *ad.Tape[float32], active []int, chosen func(k int) *ad.Node[float32]) *ad.Node[float32] {
	table := tp.Const(r.table.W)
	var parts []*ad.Node[float32]
	var index []int
	base := 0
	for _, k := range active {
		x := r.targets[k].Set.X
		orig := tp.Gather(table, x)
		var ch *ad.Node[float32]
		if len(r.pos[k]) > 0 {
			ch = chosen(k)
		}
		off := base + len(x) // the chosen rows follow the originals in parts
		slot := make([]int, len(x))
		for i := range slot {
			slot[i] = base + i
		}
		for j, p := range r.pos[k] {
			slot[p] = off + j
		}
		index = append(index, slot...)
		parts = append(parts, orig)
		base += len(x)
		if ch != nil {
			parts = append(parts, ch)
			base += len(r.pos[k])
		}
	}
	return tp.Gather(tp.Concat(0, parts...), index)
}

func (r *relaxed) tokens(active []int) [][]int {
	out := make([][]int, len(active))
	for i, k := range active {
		out[i] = r.targets[k].Set.X
	}
	return out
}

// run minimises J̃ over the variables: each iteration builds the relaxed
// input of the active targets (build), computes J̃ and its gradient, and
// takes one Adam step. It returns, per target, the iterations it took part
// in and the longest float32 output a relaxed input reached within the
// horizon.
func (r *relaxed) run(ctx context.Context, build func(tp *ad.Tape[float32], active []int, vars []*ad.Node[float32]) *ad.Node[float32]) (iters, best []int, err error) {
	adam := ad.NewAdam(r.vars, r.opt.LR)
	arena := ad.NewArena[float32]()
	best = make([]int, len(r.targets))
	iters = make([]int, len(r.targets))
	active := make([]int, len(r.targets))
	for k := range best {
		best[k], active[k] = -1, k
	}
	// A retired target's variable as it was when it reached the horizon:
	// Adam's momentum would move it on even with a zero gradient.
	frozen := make(map[int][]float32)
	for it := 0; it < r.opt.Steps && len(active) > 0; it++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		arena.Reset()
		tp := ad.NewTape[float32](true).Use(arena)
		// The variables enter as the tape's leaves (an attack tape binds
		// parameters as constants); their gradients go to the Params Adam
		// updates.
		vars := make([]*ad.Node[float32], len(r.vars))
		for _, k := range active {
			vars[k] = tp.Var(r.vars[k].W)
		}
		in := model.Input[float32]{Tokens: r.tokens(active), Embedded: build(tp, active, vars)}
		loss, res, err := Objective(tp, r.d32, in, r.horizon, r.opt.Loss, r.opt.Eps)
		if err != nil {
			return nil, nil, err
		}
		if err := tp.Backward(loss); err != nil {
			return nil, nil, err
		}
		for k, p := range r.vars {
			if vars[k] != nil && vars[k].Grad != nil {
				copy(p.G.Data, vars[k].Grad.Data)
			} else {
				p.ZeroGrad()
			}
		}
		still := active[:0:0]
		for i, k := range active {
			iters[k]++
			best[k] = max(best[k], rank(res[i], r.horizon))
			if r.freeze && !res[i].Stopped {
				frozen[k] = append([]float32(nil), r.vars[k].W.Data...)
				continue
			}
			still = append(still, k)
		}
		active = still
		adam.Step()
		if r.opt.Progress != nil {
			lengthened := 0
			for k, b := range best {
				if b > r.targets[k].K {
					lengthened++
				}
			}
			r.opt.Progress(it+1, lengthened)
		}
	}
	for k, w := range frozen {
		copy(r.vars[k].W.Data, w)
	}
	return iters, best, nil
}

// GumbelPGD is the paper's relaxed attack on text (§3.3): at each target's
// ⌈δ·n⌉ chosen positions a logit vector πᵢ over the vocabulary, set +1 at
// xᵢ and −1 elsewhere (special tokens excluded); the input embedding there
// is the Gumbel-softmax sample softmax((gᵢ + log softmax(πᵢ))/τ) times the
// embedding table, and Adam on π minimises J̃. The final sentence is drawn
// from Categorical(softmax(π)), and the argmax is tried too; the better of
// the two after float64 replay is returned (TextOutcome.Pick).
func GumbelPGD(ctx context.Context, d32 model.Decoder[float32], d64 model.Decoder[float64], targets []TextTarget, opt RelaxedOptions) ([]TextOutcome, error) {
	r, err := newRelaxed(d32, targets, opt)
	if err != nil {
		return nil, err
	}
	v := r.table.W.Rows()
	mask := ad.New[float32](1, v) // −1e4 on tokens π may not use
	for id, ok := range r.keep {
		if !ok {
			mask.Data[id] = -1e4
		}
	}
	for k, tg := range targets {
		p := ad.NewParam[float32](fmt.Sprintf("pi%d", k), len(r.pos[k]), v)
		for j, pos := range r.pos[k] {
			row := p.W.Data[j*v : (j+1)*v]
			for id := range row {
				row[id] = -1
			}
			row[tg.Set.X[pos]] = 1
		}
		r.vars = append(r.vars, p)
	}
	noise := make([]*rand.Rand, len(targets)) // Gumbel noise: each target's own stream
	for k, tg := range targets {
		noise[k] = rand.New(rand.NewPCG(tg.Seed, tg.Stream^0x9e3779b97f4a7c15))
	}
	tau := float32(opt.Tau)
	steps, found, err := r.run(ctx, func(tp *ad.Tape[float32], active []int, vars []*ad.Node[float32]) *ad.Node[float32] {
		return r.embedded(tp, active, func(k int) *ad.Node[float32] {
			n := len(r.pos[k])
			g := ad.New[float32](n, v)
			for i := range g.Data {
				g.Data[i] = float32(gumbel(noise[k]))
			}
			return gumbelEmbedding(tp, vars[k], g, mask, r.keep, tau, tp.Const(r.table.W))
		})
	})
	if err != nil {
		return nil, err
	}
	// The final sentences: a draw from softmax(π) and the argmax — each a
	// text (for a target with a Textual test: up to maxDraws draws, and an
	// argmax that is not a text is left out).
	out := make([]TextOutcome, len(targets))
	for k, tg := range targets {
		rng := rand.New(rand.NewPCG(tg.Seed, tg.Stream^0x5851f42d4c957f2d))
		pi := r.vars[k].W.Data
		final := func() (sample, argmax []int) {
			sample, argmax = append([]int(nil), tg.Set.X...), append([]int(nil), tg.Set.X...)
			for j, pos := range r.pos[k] {
				sample[pos], argmax[pos] = drawAllowed(pi[j*v:(j+1)*v], r.keep, rng)
			}
			return sample, argmax
		}
		sample, argmax := final()
		for d := 1; d < maxDraws && !tg.isText(sample); d++ {
			sample, _ = final()
		}
		cands, picks := [][]int{}, []string{}
		for i, c := range [][]int{sample, argmax} {
			if tg.isText(c) {
				cands, picks = append(cands, c), append(picks, []string{"sample", "argmax"}[i])
			}
		}
		if len(cands) == 0 {
			cands, picks = [][]int{append([]int(nil), tg.Set.X...)}, []string{"original"}
		}
		var best TextOutcome
		for i, cand := range cands {
			o, err := ReplayText(ctx, d64, tg, cand, r.maxSteps)
			if err != nil {
				return nil, err
			}
			o.Pick = picks[i]
			if i == 0 || better(o.Replayed, best.Replayed, r.maxSteps) {
				best = o
			}
		}
		best.Found32, best.Steps, best.Evals = found[k], steps[k], int64(steps[k])+int64(len(cands))
		out[k] = best
	}
	return out, nil
}

// drawAllowed draws a token from softmax(row) over the allowed tokens and
// returns it with the row's argmax among them (lowest id on ties).
func drawAllowed(row []float32, keep []bool, rng *rand.Rand) (sample, argmax int) {
	m := math.Inf(-1)
	argmax = -1
	for id, v := range row {
		if keep[id] && float64(v) > m {
			m, argmax = float64(v), id
		}
	}
	var z float64
	for id, v := range row {
		if keep[id] {
			z += math.Exp(float64(v) - m)
		}
	}
	u := rng.Float64() * z
	sample = argmax
	for id, v := range row {
		if !keep[id] {
			continue
		}
		if u -= math.Exp(float64(v) - m); u < 0 {
			sample = id
			break
		}
	}
	return sample, argmax
}

// gumbelEmbedding is the relaxed embedding of Gumbel-softmax samples:
// softmax((g + log softmax(π + mask))/τ)·table over the allowed tokens
// (keep; mask is −1e4 on the others), for logits π [n, V] and noise g
// [n, V] drawn from Gumbel(0, 1).
func gumbelEmbedding[T ad.Float](tp *ad.Tape[T], pi *ad.Node[T], g, mask *ad.Tensor[T], keep []bool, tau T, table *ad.Node[T]) *ad.Node[T] {
	n, v := pi.Value.Rows(), pi.Value.Cols()
	masked := tp.Add(pi, tp.Const(repeatRows(mask, n)))
	logits := tp.Scale(tp.Add(tp.LogSoftmax(masked), tp.Const(g)), 1/tau)
	rowKeep := make([]bool, n*v)
	for i := range rowKeep {
		rowKeep[i] = keep[i%v]
	}
	return tp.MatMul(tp.MaskedSoftmax(logits, rowKeep), table)
}

// gumbel draws from Gumbel(0, 1): −log(−log u), u uniform in (0, 1).
func gumbel(rng *rand.Rand) float64 {
	return -math.Log(-math.Log(rng.Float64()*(1-1e-12) + 1e-12))
}

func repeatRows[T ad.Float](t *ad.Tensor[T], n int) *ad.Tensor[T] {
	out := ad.New[T](n, t.Len())
	for i := 0; i < n; i++ {
		copy(out.Data[i*t.Len():], t.Data)
	}
	return out
}

// EmbeddingPGD is the paper's analysis attack (§5.2): the embedding
// vectors at each target's ⌈δ·n⌉ chosen positions are free variables,
// started at the original tokens' embeddings, and Adam minimises J̃ with no
// constraint. No sentence has these embeddings, so the result bounds what
// the discrete attacks can reach; it is replayed in float64 from the same
// embedding rows (TextOutcome.Embedded).
func EmbeddingPGD(ctx context.Context, d32 model.Decoder[float32], d64 model.Decoder[float64], targets []TextTarget, opt RelaxedOptions) ([]TextOutcome, error) {
	r, err := newRelaxed(d32, targets, opt)
	if err != nil {
		return nil, err
	}
	e := r.table.W.Cols()
	for k, tg := range targets {
		p := ad.NewParam[float32](fmt.Sprintf("emb%d", k), len(r.pos[k]), e)
		for j, pos := range r.pos[k] {
			copy(p.W.Data[j*e:(j+1)*e], r.table.W.Data[tg.Set.X[pos]*e:(tg.Set.X[pos]+1)*e])
		}
		r.vars = append(r.vars, p)
	}
	steps, found, err := r.run(ctx, func(tp *ad.Tape[float32], active []int, vars []*ad.Node[float32]) *ad.Node[float32] {
		return r.embedded(tp, active, func(k int) *ad.Node[float32] { return vars[k] })
	})
	if err != nil {
		return nil, err
	}
	out := make([]TextOutcome, len(targets))
	for k, tg := range targets {
		rows := make([]float64, len(tg.Set.X)*e)
		for i, id := range tg.Set.X {
			for c := 0; c < e; c++ {
				rows[i*e+c] = float64(r.table.W.Data[id*e+c])
			}
		}
		for j, pos := range r.pos[k] {
			for c := 0; c < e; c++ {
				rows[pos*e+c] = float64(r.vars[k].W.Data[j*e+c])
			}
		}
		tp := ad.NewTape[float64](false)
		res, err := model.Greedy(tp, d64, model.Input[float64]{Tokens: [][]int{tg.Set.X}, Embedded: tp.Const(ad.FromSlice(rows, len(tg.Set.X), e))},
			model.GreedyOptions[float64]{MaxSteps: r.maxSteps})
		if err != nil {
			return nil, err
		}
		o := TextOutcome{Embedded: rows, Replayed: replayed(res[0], tg.K)}
		o.Found32, o.Steps, o.Evals = found[k], steps[k], int64(steps[k])+1
		out[k] = o
	}
	return out, nil
}
