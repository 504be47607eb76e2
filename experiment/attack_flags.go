package experiment

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lenspec/lenspec/attack"
	"github.com/spf13/pflag"
)

// DefaultHorizon is the text attacks' default gradient horizon: twice the
// 100 tokens the paper counts as a success, so a row far past that stops
// costing a forward and backward pass per token.
const DefaultHorizon = 200

// MaxBudget is the largest search budget: samples, iterations or
// evaluations per input.
const MaxBudget = 1_000_000_000

// CheckBudget refuses, as a SettingsError naming flag, a search budget
// outside 1..MaxBudget: a search given none never runs, and its records
// would still say their inputs were not lengthened. Every attack command
// checks its budgets with it (lenspec attack's --budget through
// AttackConfig.Validate, the experiments' --samples and --steps).
func CheckBudget(flag string, n int) error {
	if n < 1 || n > MaxBudget {
		return SettingsError{fmt.Errorf("--%s %d: want 1..%d", flag, n, MaxBudget)}
	}
	return nil
}

// CheckRestarts refuses, as a SettingsError naming flag, fewer than one
// PGD run per input, which PGD would otherwise run as one under another
// key.
func CheckRestarts(flag string, n int) error {
	if n < 1 {
		return SettingsError{fmt.Errorf("--%s %d: want at least 1 (the first run starts from the input itself)", flag, n)}
	}
	return nil
}

// CheckRadii refuses, as a SettingsError naming flag, an image attack's
// radius that is not positive and finite: at δ = 0 there is nothing to
// search. Its width against the model's input range is checked once the
// model is known (AttackConfig.Validate).
func CheckRadii(flag string, eps []float64) error {
	for _, e := range eps {
		if !(e > 0) || math.IsInf(e, 0) {
			return SettingsError{fmt.Errorf("--%s %v: want positive, finite radii", flag, e)}
		}
	}
	return nil
}

// RegisterFlags adds the PGD settings every attack command shares to fs
// (learning rate, J̃'s ε, loss, runs per image, early stop), starting at
// the paper's PGD: Adam at 0.0005 on J̃ with ε = 1, one run stopped once
// its output reaches the step cap. K̂, the step cap, the budget and the
// seed are the commands' own flags; Method.TextDefaults puts a text
// method's learning rate in place of one not given.
func (s *AttackSettings) RegisterFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&s.LR, "lr", 0.0005, "PGD Adam learning rate")
	fs.Float64Var(&s.Clip, "clip", 1, "ε of the proxy J̃ (a step stops pushing once eos trails by ε)")
	fs.StringVar(&s.Loss, "loss", string(attack.LossMargin), "PGD loss (images: pgd; text: gumbel and embedding): margin (the paper's J̃) or eos-logprob (NICGSlowDown)")
	fs.IntVar(&s.Restarts, "restarts", 1, "PGD runs per image (the first from the image itself, the rest from random points)")
	fs.BoolVar(&s.EarlyStop, "early-stop", true, "stop a PGD run once its output reaches the step cap")
}

// RegisterTextFlags adds the text attacks' own settings to fs: the
// Gumbel-softmax temperature, flip's beam, substitutions and loop
// (attack.DefaultFlip), and the gradient horizon (DefaultHorizon).
// qualify says in each help which attacks read it, for a command that
// also attacks images.
func (s *AttackSettings) RegisterTextFlags(fs *pflag.FlagSet, qualify bool) {
	text, flip := "", "flip: "
	if qualify {
		text, flip = "text: ", "text (flip): "
	}
	fl := attack.DefaultFlip()
	fs.Float64Var(&s.Tau, "tau", 1, text+"Gumbel-softmax temperature")
	fs.IntVar(&s.Beam, "beam", fl.Beam, flip+"sentences kept per round")
	fs.IntVar(&s.Swaps, "swaps", fl.Swaps, flip+"substitutions evaluated per kept sentence and round")
	fs.BoolVar(&s.Loop, "loop", fl.Loop, flip+"half of each sentence's substitutions ranked by the gradient along its output repeated (targeted continuations into a loop; --loop=false: along its output alone)")
	fs.IntVar(&s.Horizon, "horizon", DefaultHorizon, "text: decoding steps a gradient unrolls (0: the step cap); exact decoding still runs to --max-steps")
}

// settingFlags are the flags of settings some methods ignore, in the
// order CheckRead names them.
var settingFlags = []string{"lr", "tau", "clip", "horizon", "beam", "swaps", "loop", "loss", "restarts", "early-stop"}

// CheckRead refuses, as a SettingsError, a setting given (changed reports
// which, by flag: the setting's JSON name with - for _) that none of
// methods reads, so that a run cannot look as if it used a setting it
// ignored. all is every method, to name those that do read it.
func CheckRead(changed func(flag string) bool, methods, all []string) error {
	for _, name := range settingFlags {
		setting := strings.ReplaceAll(name, "-", "_")
		if changed(name) && len(ReadBy(setting, methods)) == 0 {
			return SettingsError{fmt.Errorf("--%s is read by %s only, not by %s", name, strings.Join(ReadBy(setting, all), " and "), strings.Join(methods, " or "))}
		}
	}
	return nil
}

// Budgets are the budgets of the text methods an experiment may run, by
// method: RegisterBudgetFlags adds them as flags.
type Budgets map[string]*int

// RegisterBudgetFlags adds a --METHOD-budget flag per text method to fs,
// starting at the method's TextBudget, and returns the budgets they set.
func RegisterBudgetFlags(fs *pflag.FlagSet) Budgets {
	b := Budgets{}
	for _, m := range TextMethods {
		def, _ := LookupMethod(m)
		b[m] = fs.Int(m+"-budget", def.TextBudget, "budget of "+m+" (samples, iterations or evaluations per sentence)")
	}
	return b
}

// Apply sets the budget of each of cfgs to its method's --METHOD-budget
// where that flag was given (changed reports which), and refuses, as a
// SettingsError, a budget given for a method none of cfgs runs, or out of
// range (CheckBudget).
func (b Budgets) Apply(cfgs []AttackConfig, changed func(flag string) bool) error {
	var methods []string
	for i := range cfgs {
		methods = append(methods, cfgs[i].Method)
		if v, flag := b[cfgs[i].Method], cfgs[i].Method+"-budget"; v != nil && changed(flag) {
			if err := CheckBudget(flag, *v); err != nil {
				return err
			}
			cfgs[i].Settings.Budget = *v
		}
	}
	for _, m := range TextMethods {
		if changed(m+"-budget") && !slices.Contains(methods, m) {
			return SettingsError{fmt.Errorf("--%s-budget: --methods %s does not run %s", m, strings.Join(methods, ","), m)}
		}
	}
	return nil
}
