package experiment

import (
	"context"
	"fmt"
	"slices"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/model"
)

// Attack methods.
const (
	MethodRandom    = "random"
	MethodPGD       = "pgd"
	MethodGumbel    = "gumbel"
	MethodEmbedding = "embedding"
	MethodFlip      = "flip"
)

// Method is an attack method as the runner knows it: its name, the input
// kinds it attacks, the settings it reads, and its search, written once
// against attack.Space for every kind of point it takes. A new method is
// a function in attack and an entry in methods.
type Method struct {
	Name string
	// Images and Text say which input kinds the method attacks.
	Images, Text bool
	// Reads are the settings the method reads besides K̂, the step cap,
	// the budget and the seed, by their JSON names (AttackSettings):
	// Normalize zeroes the others.
	Reads []string
	// MarginEmpty records the default loss (the margin J̃) as empty.
	MarginEmpty bool
	// Batched methods run Batch targets side by side (one search over
	// all of them, its time shared); the others take one target at a
	// time, each timed alone.
	Batched bool
	// Embedded attacks a sentence's embedding rows (attack.Embeddings)
	// instead of its tokens (attack.Substitutions).
	Embedded bool
	// TextBudget and TextLR are the budget and learning rate a text
	// attack takes unless told otherwise (the paper's for random search
	// and Gumbel PGD).
	TextBudget int
	TextLR     float64
	// Validate checks the method's settings before any work (nil: none).
	Validate func(AttackSettings) error
	// Points searches points of a continuous set (an image's ball, a
	// sentence's embedding ball), Tokens token sequences (a sentence's
	// substitutions): nil where the method takes no such points.
	Points func(context.Context, Job[[]float64]) ([]attack.Outcome[[]float64], error)
	Tokens func(context.Context, Job[[]int]) ([]attack.Outcome[[]int], error)
}

// Job is a batch of targets a method attacks (one target unless the
// method is Batched), with what it needs to run.
type Job[E any] struct {
	D32      model.Decoder[float32]
	D64      model.Decoder[float64]
	Targets  []attack.Target[E]
	Settings AttackSettings
	// Draws is how many inputs a search decodes at a time: speed only.
	Draws int
	// Progress reports how far the batch got of how much, with a short
	// status; it is never nil.
	Progress func(done, total int, status string)
}

// methods are the registered attack methods, in the order runs and tables
// take them.
var methods = []Method{
	{Name: MethodRandom, Images: true, Text: true, TextBudget: 10000,
		Points: randomSearch[[]float64], Tokens: randomSearch[[]int]},
	{Name: MethodPGD, Images: true, Reads: []string{"loss", "lr", "clip", "restarts", "early_stop"}, Batched: true,
		Validate: validPGD, Points: pgd[[]float64]},
	{Name: MethodGumbel, Text: true, Reads: []string{"loss", "lr", "tau", "clip", "horizon"}, MarginEmpty: true, Batched: true,
		TextBudget: 800, TextLR: 0.005, Validate: validPGD, Tokens: pgd[[]int]},
	{Name: MethodEmbedding, Text: true, Reads: []string{"loss", "lr", "clip", "horizon"}, MarginEmpty: true, Batched: true, Embedded: true,
		TextBudget: 800, TextLR: 0.005, Validate: validPGD, Points: pgd[[]float64]},
	{Name: MethodFlip, Text: true, Reads: []string{"clip", "horizon", "beam", "swaps", "loop"}, TextBudget: 800,
		Validate: func(s AttackSettings) error { return flipOptions(s).Validate() }, Tokens: flip},
}

// LookupMethod returns the method named name.
func LookupMethod(name string) (Method, bool) {
	i := slices.IndexFunc(methods, func(m Method) bool { return m.Name == name })
	if i < 0 {
		return Method{}, false
	}
	return methods[i], true
}

// MethodNames lists the methods that attack images (text false) or text,
// in the registry's order.
func MethodNames(text bool) []string {
	var names []string
	for _, m := range methods {
		if (text && m.Text) || (!text && m.Images) {
			names = append(names, m.Name)
		}
	}
	return names
}

// TextMethods are the text attack methods, in the order runs and tables
// take them.
var TextMethods = MethodNames(true)

// ReadBy lists the methods of methods that read setting (by its JSON
// name, AttackSettings), in their order.
func ReadBy(setting string, methods []string) []string {
	var out []string
	for _, name := range methods {
		if m, ok := LookupMethod(name); ok && slices.Contains(m.Reads, setting) {
			out = append(out, name)
		}
	}
	return out
}

// TextMaxSteps is a text attack's step cap unless told otherwise.
const TextMaxSteps = 1000

// MaxTextBatch is the most sentences a text attack runs side by side.
const MaxTextBatch = 25

// TextDefaults returns s with the text attack defaults in place of the
// settings the caller did not give (given reports whether it did, by the
// setting's JSON name): the method's budget and learning rate, and a step
// cap of TextMaxSteps; the gradient horizon is at most the step cap.
func (m Method) TextDefaults(s AttackSettings, given func(setting string) bool) AttackSettings {
	if !given("budget") {
		s.Budget = m.TextBudget
	}
	if !given("lr") {
		s.LR = m.TextLR
	}
	if !given("max_steps") {
		s.MaxSteps = TextMaxSteps
	}
	s.Horizon = min(s.Horizon, s.MaxSteps)
	return s
}

// run returns the method's search for points of type E, or nil.
func run[E any](m Method) func(context.Context, Job[E]) ([]attack.Outcome[E], error) {
	for _, f := range []any{m.Points, m.Tokens} {
		if g, ok := f.(func(context.Context, Job[E]) ([]attack.Outcome[E], error)); ok && g != nil {
			return g
		}
	}
	return nil
}

// randomSearch is the paper's random search, one target at a time.
func randomSearch[E any](ctx context.Context, j Job[E]) ([]attack.Outcome[E], error) {
	var outs []attack.Outcome[E]
	for _, tg := range j.Targets {
		o, err := attack.RandomSearch(ctx, j.D32, j.D64, tg, attack.RandomOptions{
			Samples: j.Settings.Budget, Batch: j.Draws, MaxSteps: j.Settings.MaxSteps,
			Progress: func(done, best int) { j.Progress(done, j.Settings.Budget, fmt.Sprintf("longest %d", best)) },
		})
		if err != nil {
			return nil, err
		}
		outs = append(outs, o)
	}
	return outs, nil
}

// pgd is PGD over the targets' relaxation (an image's ball, a sentence's
// Gumbel-softmax or embedding ball), all targets batched together.
func pgd[E any](ctx context.Context, j Job[E]) ([]attack.Outcome[E], error) {
	opt := pgdOptions(j.Settings)
	opt.Progress = func(step, n int) { j.Progress(step, opt.Steps, fmt.Sprintf("lengthened %d/%d", n, len(j.Targets))) }
	return attack.PGD(ctx, j.D32, j.D64, j.Targets, opt)
}

// pgdOptions are PGD's options from settings: unset restarts are one
// run, an unset loss is the margin.
func pgdOptions(s AttackSettings) attack.PGDOptions {
	loss := attack.Loss(s.Loss)
	if loss == "" {
		loss = attack.LossMargin
	}
	return attack.PGDOptions{Steps: s.Budget, LR: s.LR, Tau: s.Tau, Eps: s.Clip, Loss: loss, Restarts: max(s.Restarts, 1),
		MaxSteps: s.MaxSteps, Horizon: s.Horizon, EarlyStop: s.EarlyStop}
}

func validPGD(s AttackSettings) error { return pgdOptions(s).Validate() }

// flip is lenspec's gradient-guided substitution search, one sentence at
// a time.
func flip(ctx context.Context, j Job[[]int]) ([]attack.Outcome[[]int], error) {
	var outs []attack.Outcome[[]int]
	for _, tg := range j.Targets {
		opt := flipOptions(j.Settings)
		opt.Progress = func(done, best int) { j.Progress(done, j.Settings.Budget, fmt.Sprintf("longest %d", best)) }
		o, err := attack.Flip(ctx, j.D32, j.D64, tg, opt)
		if err != nil {
			return nil, err
		}
		outs = append(outs, o)
	}
	return outs, nil
}

func flipOptions(s AttackSettings) attack.FlipOptions {
	o := attack.DefaultFlip()
	o.Evals, o.Eps, o.Beam, o.Swaps, o.MaxSteps, o.Horizon, o.Loop = s.Budget, s.Clip, s.Beam, s.Swaps, s.MaxSteps, s.Horizon, s.Loop
	return o
}
