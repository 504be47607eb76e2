package model

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/lenspec/lenspec/ad"
)

// Result is one greedily decoded output.
type Result struct {
	// Tokens are the emitted tokens before eos (eos itself excluded).
	Tokens []int
	// Stopped reports whether eos came within the step cap. When false,
	// Tokens holds the cap's worth of tokens and ℓ(x) ≥ len(Tokens).
	Stopped bool
	// MinMargin is the smallest gap between the largest and second largest
	// logit over the decoded steps (eos step included): how far the input is
	// from changing the path. MinRelMargin divides each gap by
	// max(1, |largest logit|); below RelTieMargin it is a tie, not a result.
	MinMargin, MinRelMargin float64
	// Diverged is set when a forced token (GreedyOptions.Prefix) was not
	// the argmax: the output is then not what greedy decoding gives.
	Diverged bool
	// NonFinite reports that the logits of the step after Tokens were not
	// all finite (the state overflowed, as a model whose recurrence
	// amplifies does after enough steps): decoding stopped there, without
	// eos, since no token can be chosen. Tokens is the output up to that
	// point, all of it decided on finite logits, so ℓ(x) ≥ len(Tokens) as
	// for an output that hit the step cap; MinMargin and MinRelMargin
	// cover the finite steps (+Inf if there was none).
	NonFinite bool
}

// RelTieMargin is the relative top-2 logit margin below which a decoded
// step counts as a tie: float32 and float64 may then disagree, so no claim
// rests on such a path.
const RelTieMargin = 1e-6

// MaxStepCap is the largest decoding step cap lenspec accepts anywhere
// (config.json, flags): memory and time grow with it, and a bound keeps a
// typo from running for hours before failing.
const MaxStepCap = 10000

// Tie reports whether a decoded output's path has a tie.
func (r Result) Tie() bool { return r.MinRelMargin < RelTieMargin }

// GreedyOptions adjusts Greedy.
type GreedyOptions[T ad.Float] struct {
	// MaxSteps is the step cap (≤ 0: the decoder's).
	MaxSteps int
	// NoEOS takes every argmax over the tokens other than eos, so no row
	// stops: the path a counterexample to "ℓ ≤ K̂" follows. Margins are
	// then among the non-eos tokens.
	NoEOS bool
	// Prefix, if set, forces a continuation: row r's first len(Prefix[r])
	// fed-back tokens are Prefix[r] instead of its argmax (Prefix[r] holds
	// no eos), and the row does not stop on them. The result is then not a
	// greedy decoding: its Tokens start with the prefix, and Diverged says
	// whether any forced token was not the argmax. Attacks use it to push
	// the decoder onto another path than the one it takes.
	Prefix [][]int
	// OnStep, if set, is called after each step with the step's logits
	// [n, Vocab] for the n rows still in the batch, rows[k] the input row
	// of batch row k, and live[k] whether it was decoding at this step (the
	// step that emits its eos included; a row that stopped earlier may stay
	// in the batch until the next compaction). The attack objective hangs
	// its loss terms here.
	OnStep func(t int, logits *ad.Node[T], rows []int, live []bool)
}

// recycleEvery is how many steps a non-recording decode runs on one tape
// before its state moves to fresh memory (Greedy). Two: a translator's
// step over a 256-row chunk holds 14 MB (its logits over 8,000 tokens,
// its attention and gates), and moving the state, whose memory and keys
// are the largest part, costs a copy, small beside a step's products.
const recycleEvery = 2

// compactBelow is the fraction of live rows under which Greedy drops
// finished rows from the batch: each step's work then follows the rows
// still decoding, at the cost of one gather of the state.
const compactBelow = 0.75

// Greedy decodes the batch in greedily on tp: y_t = argmax o_t, ties to the
// lowest token index, each row until its eos, the step cap, or a step
// whose logits are not all finite (Result.NonFinite). It is the one
// greedy loop of lenspec: decoding, the attack objective, benchmarks and
// replay all run it. On a recording tape gradients flow through the
// logits and states of the path decoded (the argmax is piecewise
// constant).
func Greedy[T ad.Float](tp *ad.Tape[T], d Decoder[T], in Input[T], opt GreedyOptions[T]) ([]Result, error) {
	return greedy(context.Background(), tp, d, in, opt)
}

// greedy is Greedy stopping between two steps when ctx ends, so that a
// decode of many long rows stops within a step rather than at its end.
// It then returns ctx's error with the results so far: a row that
// stopped (Stopped or NonFinite) is finished, as Greedy would give it;
// the others are not (the step cap cannot have been reached yet).
func greedy[T ad.Float](ctx context.Context, tp *ad.Tape[T], d Decoder[T], in Input[T], opt GreedyOptions[T]) ([]Result, error) {
	maxSteps := opt.MaxSteps
	if maxSteps <= 0 {
		maxSteps = d.MaxSteps()
	}
	s, err := d.Start(tp, in)
	if err != nil {
		return nil, err
	}
	n, v, eos := in.Rows(), d.Vocab(), d.EOS()
	res := make([]Result, n)
	rows := make([]int, n) // input row of each batch row
	live := make([]bool, n)
	for r := range res {
		res[r].MinMargin, res[r].MinRelMargin = math.Inf(1), math.Inf(1)
		rows[r], live[r] = r, true
	}
	skip := -1
	if opt.NoEOS {
		skip = eos
	}
	ids := make([]int, n)
	var prev []int
	// A tape that records nothing still keeps every step's values until
	// its memory is reset: at hundreds of steps, the logits alone of a
	// 256-row chunk over 8,000 tokens take gigabytes. Without a gradient
	// or an observer, the state moves every recycleEvery steps to a fresh
	// tape on one of two arenas that take turns.
	recycle := !tp.Recording() && opt.OnStep == nil
	var arenas [2]*ad.Arena[T]
	for t, active := 0, n; t < maxSteps && active > 0; t++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if recycle && t > 0 && t%recycleEvery == 0 {
			k := t / recycleEvery % 2
			if arenas[k] == nil {
				arenas[k] = ad.NewArena[T]()
			}
			arenas[k].Reset()
			all := make([]int, len(rows))
			for i := range all {
				all[i] = i
			}
			tp = ad.NewTape[T](false).Use(arenas[k])
			s = s.Rows(tp, all)
		}
		var logits *ad.Node[T]
		logits, s = d.Step(tp, s, prev)
		// A row whose logits overflowed has no argmax: it stops here,
		// marked, before an observer sees it as live.
		for k, r := range rows {
			if live[k] && !finite(logits.Value.Data[k*v:(k+1)*v]) {
				res[r].NonFinite = true
				live[k] = false
				active--
			}
		}
		if opt.OnStep != nil {
			opt.OnStep(t, logits, rows, live)
		}
		for k, r := range rows {
			if !live[k] {
				continue
			}
			y, gap, rel := argmaxSkip(logits.Value.Data[k*v:(k+1)*v], skip)
			res[r].MinMargin = math.Min(res[r].MinMargin, gap)
			res[r].MinRelMargin = math.Min(res[r].MinRelMargin, rel)
			if opt.Prefix != nil && t < len(opt.Prefix[r]) {
				if f := opt.Prefix[r][t]; f != y {
					y, res[r].Diverged = f, true
				}
			}
			ids[k] = y
			if y == eos {
				res[r].Stopped = true
				live[k] = false
				active--
				continue
			}
			res[r].Tokens = append(res[r].Tokens, y)
		}
		prev = ids[:len(rows)]
		if active > 0 && float64(active) < compactBelow*float64(len(rows)) {
			keep := make([]int, 0, active)
			for k := range rows {
				if live[k] {
					keep = append(keep, k)
				}
			}
			s = s.Rows(tp, keep)
			for j, k := range keep {
				rows[j], ids[j], live[j] = rows[k], ids[k], true
			}
			rows, live, prev = rows[:active], live[:active], ids[:active]
		}
	}
	return res, nil
}

// finite reports whether every value of row is finite.
func finite[T ad.Float](row []T) bool {
	for _, v := range row {
		if v-v != 0 { // NaN and ±Inf alike
			return false
		}
	}
	return true
}

// decodeChunk bounds memory and is the unit of parallel work: inputs are
// decoded at most this many at a time.
const decodeChunk = 256

// decodeTokens bounds a chunk of token inputs by its padded size, its rows
// times its longest source: a translator's decode keeps values for every
// source position of every row (the encoder's, the attention's memory and
// keys), so that a chunk's memory grows with both, and a chunk of long
// sources gets fewer rows. Translating 3,000 Multi30k sentences peaks at
// about 1 GB with it, 1.4 GB with 256-row chunks of any length, for the
// same CPU time within the noise of a shared machine (docs/BENCHMARKS.md).
const decodeTokens = 2048

// ChunkRows is how many rows Decode decodes side by side when every input
// is tokens long (0: continuous inputs): its chunks start at its first
// row and every ChunkRows rows after. A row's float32 result depends on
// the rows decoded with it (a GEMM rounds a row by the matrix's size, and
// finished rows leave the batch), so a caller whose results must not
// depend on how it splits its inputs into calls splits them at multiples
// of ChunkRows.
func ChunkRows(spec InputSpec, tokens int) int {
	if spec.Kind == Continuous || tokens <= 0 {
		return decodeChunk
	}
	return max(1, min(decodeChunk, decodeTokens/tokens))
}

// chunks splits the n rows of b into the chunks Decode runs: consecutive
// rows, at most decodeChunk of them and, for token inputs, at most
// decodeTokens padded positions (but at least one row).
func (b Batch[T]) chunks(spec InputSpec, n int) [][2]int {
	var out [][2]int
	for lo := 0; lo < n; {
		hi, longest := lo+1, 0
		if spec.Kind != Continuous {
			longest = len(b.Tokens[lo])
		}
		for hi < n && hi-lo < decodeChunk {
			if spec.Kind != Continuous {
				l := max(longest, len(b.Tokens[hi]))
				if (hi-lo+1)*l > decodeTokens {
					break
				}
				longest = l
			}
			hi++
		}
		out = append(out, [2]int{lo, hi})
		lo = hi
	}
	return out
}

// arenas keeps Decode's per-worker memory from one call to the next, one
// pool per element type: a caller that decodes batch after batch (an
// attack's rounds, a benchmark) would otherwise grow new buffers at every
// call, which the runtime then zeroes (measured: 3 % of a Multi-MNIST
// decode). It only caches memory; no result depends on it.
var arenas [2]sync.Pool

func arenaPool[T ad.Float]() *sync.Pool {
	if _, ok := any(T(0)).(float32); ok {
		return &arenas[0]
	}
	return &arenas[1]
}

func getArena[T ad.Float]() *ad.Arena[T] {
	if a, ok := arenaPool[T]().Get().(*ad.Arena[T]); ok {
		return a
	}
	return ad.NewArena[T]()
}

func putArena[T ad.Float](a *ad.Arena[T]) { arenaPool[T]().Put(a) }

// Decode greedily decodes a batch of inputs with at most maxSteps steps
// (≤ 0: the decoder's MaxSteps), in chunks spread over all cores. Each
// chunk's result does not depend on which worker ran it, so the output is
// deterministic. When ctx ends, Decode returns its error within a
// decoding step.
func Decode[T ad.Float](ctx context.Context, d Decoder[T], b Batch[T], maxSteps int) ([]Result, error) {
	out, _, err := decode(ctx, d, b, maxSteps)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decode is Decode keeping, when ctx ends, what was finished: it then
// returns ctx's error with the results so far, done[i] saying whether
// row i was decoded to its end (its result is then Decode's); the chunks
// in progress stop at their next step. On any other error out is nil.
func decode[T ad.Float](ctx context.Context, d Decoder[T], b Batch[T], maxSteps int) (out []Result, done []bool, err error) {
	spec := d.Input()
	n, err := b.rows(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("decode: %w", err)
	}
	if maxSteps > MaxStepCap {
		return nil, nil, fmt.Errorf("decode: step cap %d exceeds the supported %d", maxSteps, MaxStepCap)
	}
	out, done = make([]Result, n), make([]bool, n)
	chunks := b.chunks(spec, n)
	workers := min(runtime.GOMAXPROCS(0), len(chunks))
	next := make(chan int, len(chunks))
	for c := range chunks {
		next <- c
	}
	close(next)
	errs := make([]error, len(chunks))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			arena := getArena[T]() // one per worker, reused chunk after chunk
			defer putArena(arena)
			for c := range next {
				if ctx.Err() != nil {
					return
				}
				lo, hi := chunks[c][0], chunks[c][1]
				arena.Reset()
				tp := ad.NewTape[T](false).Use(arena)
				res, err := greedy(ctx, tp, d, b.slice(spec, lo, hi).input(tp, spec, hi-lo), GreedyOptions[T]{MaxSteps: maxSteps})
				if err != nil && (ctx.Err() == nil || res == nil) {
					errs[c] = err
					return
				}
				copy(out[lo:hi], res)
				for i, r := range res {
					done[lo+i] = err == nil || r.Stopped || r.NonFinite
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return out, done, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("decode: %w", err)
		}
	}
	return out, done, nil
}

// Argmax returns the index of the largest value (lowest index on ties), the
// gap to the second largest and that gap relative to max(1, |largest|).
func Argmax[T ad.Float](row []T) (idx int, gap, rel float64) { return argmaxSkip(row, -1) }

// argmaxSkip is Argmax over the entries other than skip (−1: all), in one
// pass and in T: it runs on every row of every decoding step over the
// whole vocabulary, where a second pass through math.Max in float64 cost
// as much as a third of the output layer's product. A NaN other than the
// largest makes the gap NaN (the replay's non-finite check sees it), as
// math.Max would; argmaxSkipNaive in the tests is the two-pass reference.
func argmaxSkip[T ad.Float](row []T, skip int) (idx int, gap, rel float64) {
	idx = -1
	second, nan := T(math.Inf(-1)), false
	for j, v := range row {
		switch {
		case j == skip:
		case idx < 0:
			idx = j
		case v > row[idx]: // the old largest (not NaN: v > NaN is false) becomes a candidate second
			if top := row[idx]; top > second {
				second = top
			}
			idx = j
		case v != v:
			nan = true
		case v > second:
			second = v
		}
	}
	sec := float64(second)
	if nan {
		sec = math.NaN()
	}
	top := float64(row[idx])
	gap = top - sec
	return idx, gap, gap / math.Max(1, math.Abs(top))
}

// TeacherForcedLoss is the cross-entropy of the batch in against labels
// (token ids without eos; eos is the target after the last one), each row
// fed its own label tokens, summed over steps and averaged over the batch:
// the training loss of every architecture.
func TeacherForcedLoss[T ad.Float](tp *ad.Tape[T], d Decoder[T], in Input[T], labels [][]int) (*ad.Node[T], error) {
	var total *ad.Node[T]
	err := forceTeacher(tp, d, in, labels, func(_ int, logits *ad.Node[T], targets []int, weights []T) {
		total = tp.AddTo(total, tp.SmoothedCrossEntropy(logits, targets, weights, in.LabelSmoothing))
	})
	return total, err
}

// forceTeacher runs d over the batch in, each row fed its own label
// tokens, and calls each with every step's logits, targets (stepTargets)
// and row weights (1/B each): the loop every teacher-forced loss shares.
// targets and weights are reused from step to step, so each must not keep
// them (the tape's losses copy what they keep).
func forceTeacher[T ad.Float](tp *ad.Tape[T], d Decoder[T], in Input[T], labels [][]int, each func(t int, logits *ad.Node[T], targets []int, weights []T)) error {
	b := len(labels)
	if in.Rows() != b {
		return fmt.Errorf("teacher forcing: %d inputs, %d labels", in.Rows(), b)
	}
	steps, err := labelSteps(labels, d.Vocab(), d.EOS())
	if err != nil {
		return fmt.Errorf("teacher forcing: %w", err)
	}
	s, err := d.Start(tp, in)
	if err != nil {
		return err
	}
	weights := make([]T, b)
	for i := range weights {
		weights[i] = T(1) / T(b)
	}
	targets := make([]int, b)
	var prev []int
	var whole []*ad.Node[T] // every step's logits at once (TeacherForcer)
	if tf, ok := d.(TeacherForcer[T]); ok {
		whole = tf.TeacherLogits(tp, s, teacherInputs(labels, steps, d.EOS()))
	}
	for t := 0; t < steps; t++ {
		var logits *ad.Node[T]
		if whole != nil {
			logits = whole[t]
		} else {
			logits, s = d.Step(tp, s, prev)
		}
		stepTargets(targets, labels, t, d.EOS())
		next := make([]int, b)
		for r, y := range targets {
			next[r] = max(y, 0)
		}
		each(t, logits, targets, weights)
		prev = next
	}
	return nil
}

// labelSteps checks that every label token is a non-eos token of a
// vocabulary of size vocab, and returns the steps teacher forcing takes:
// the longest label and its eos.
func labelSteps(labels [][]int, vocab, eos int) (int, error) {
	steps := 0
	for _, l := range labels {
		steps = max(steps, len(l)+1)
		for _, y := range l {
			if y < 0 || y >= vocab || y == eos {
				return 0, fmt.Errorf("label token %d is not a non-eos token of the vocabulary of %d", y, vocab)
			}
		}
	}
	return steps, nil
}

// stepTargets sets targets[r] to step t's target of label r under teacher
// forcing: its token, eos right after it, −1 (no loss) once finished.
func stepTargets(targets []int, labels [][]int, t, eos int) {
	for r, l := range labels {
		switch {
		case t < len(l):
			targets[r] = l[t]
		case t == len(l):
			targets[r] = eos
		default:
			targets[r] = -1
		}
	}
}
