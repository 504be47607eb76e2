package experiment

import (
	"time"

	"github.com/lenspec/lenspec/verify"
	"github.com/spf13/pflag"
)

// RegisterFlags adds the verifier's settings to fs as the flags of
// lenspec verify, bound and experiment mmnist-verify, each starting at
// s's value (DefaultVerifySettings for the CLI's defaults). K̂, the step
// cap and the seed are the commands' own flags, worded per command.
func (s *VerifySettings) RegisterFlags(fs *pflag.FlagSet) {
	fs.Var((*seconds)(&s.Timeout), "timeout", "time limit per sample, for the warm start, the bounds and every stage after them (with bound: per K̂ tried)")
	fs.IntVar(&s.Threads, "threads", s.Threads, "MIP solver threads")
	fs.StringVar(&s.Bounds, "bounds", s.Bounds, "bound method: interval, crown, alpha-crown (CROWN with slopes optimised for each open margin) or alpha-crown-full (also for the bounds of each unstable intermediate neuron)")
	fs.BoolVar(&s.Optimize, "optimize", !verify.DefaultOptions().Decision, "optimise the MIPs (report the max-min margin) instead of deciding")
	fs.IntVar(&s.AttackSteps, "attack-steps", s.AttackSteps, "PGD iterations of the warm start and of each wide-falsifier run (0: neither runs)")
	fs.IntVar(&s.AttackRestarts, "attack-restarts", s.AttackRestarts, "PGD warm-start runs, before the bounds (the first from the image, the rest from random points)")
	fs.IntVar(&s.SearchRestarts, "search-restarts", s.SearchRestarts, "runs of each wide-falsifier round (the warm start's PGD, fresh random starts each round): one round once the bounds have not proved the property (with the MIP solver, within a quarter of the time left), more between slices of branch and bound whose bound is not falling fast enough to prove in the time left (0: no wide falsifier)")
	fs.Float64Var(&s.AttackLR, "attack-lr", s.AttackLR, "PGD learning rate of the warm start and the wide falsifier")
	fs.BoolVar(&s.AttackTargeted, "attack-targeted", false, "if the warm start finds no witness, also push the decoder onto each other first token (targeted continuations)")
	fs.Float64Var(&s.RelaxGap, "relax-gap", s.RelaxGap, "before the exact MIP, solve one where unstable ReLUs with a triangle-relaxation gap below this get no binary (0: none)")
	fs.BoolVar(&s.Tokens, "tokens", s.Tokens, "the token search after the box MIP: branch and bound over the emitted tokens with LP bounds (needs the MIP solver)")
	fs.BoolVar(&s.BaB, "bab", s.BaB, "branch and bound over ReLU splits and tokens with α,β-CROWN bounds: a quarter of the time after the first falsifier round, then, after the token search, half of what is left, in slices between which the wide falsifier runs again (--search-restarts > 0) whenever the bound is not falling fast enough to prove in time; with --no-mip, all the time; --bab=false: the falsifier round and the MIP stages alone")
	fs.BoolVar(&s.Cuts, "cuts", s.Cuts, "learn nogoods from branch and bound's closed leaves (strengthened by dropping splits whose constraint multipliers were 0, proved again) and close the domains they cover without bounding them")
	fs.BoolVar(&s.CutMultipliers, "cut-multipliers", s.CutMultipliers, "learn the nogoods as --cuts does and also carry them into every branch-and-bound domain's bound as constraints on its ReLU indicators, one multiplier per cut optimised with the slopes and split multipliers")
	fs.BoolVar(&s.Clip, "clip-input", s.Clip, "cut each branch-and-bound child's input box to the half-space its new split gives through CROWN's linear bound of the split neuron")
	fs.BoolVar(&s.Abstract, "abstract", s.Abstract, "the MIPs with the encoder abstracted by its bounds: around i₀ as a box before the token search, then by CROWN's linear bounds at i₀ and at fc1 before the exact MIP (needs the MIP solver)")
	fs.Float64Var(&s.Safety, "safety", s.Safety, "robust needs the proven margin bound ≤ −safety")
	fs.StringArrayVar(&s.SolverParams, "solver-param", nil, "parameter passed to the solver verbatim, repeatable (CBC: --solver-param=-cuts --solver-param=off)")
	fs.StringVar(&s.Solver, "solver", s.Solver, "cbc (in process) or external (a solver binary on an MPS file)")
	fs.StringVar(&s.SolverBinary, "solver-binary", "cbc", "binary for --solver external")
}

// seconds is a time in seconds set as a duration ("90s", "2m").
type seconds float64

func (v *seconds) String() string { return time.Duration(float64(*v) * float64(time.Second)).String() }
func (v *seconds) Type() string   { return "duration" }

func (v *seconds) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*v = seconds(d.Seconds())
	return nil
}
