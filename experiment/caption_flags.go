package experiment

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/captions"
	"github.com/spf13/pflag"
)

// RegisterFlags adds the experiment's settings to fs as the flags of
// lenspec experiment caption-attack, starting from the paper's
// Show-and-Tell experiment (§5.2: 500 images, δ = 0.5, 10,000 random
// samples, 4 PGD runs of 1,000 steps per loss, step cap 200). Validate's
// errors name the settings by these flags. Data is left to the caller.
func (e *CaptionExperiment) RegisterFlags(fs *pflag.FlagSet) {
	e.Losses = []attack.Loss{attack.LossMargin, attack.LossEOSLogProb}
	fs.StringArrayVar(&e.Models, "model", nil, "model directory (repeatable)")
	fs.StringVar(&e.Out, "out", "", "output directory (one subdirectory per model, comparison.md)")
	fs.IntVar(&e.Images, "images", 500, "number of random test images")
	fs.IntVar(&e.First, "first", 0, "attack only the first this many of the --images drawn (a run grows by rerunning with a larger --first; the summary covers every record of the draw)")
	fs.Float64SliceVar(&e.Eps, "eps", []float64{0.5}, "radius grid")
	fs.IntVar(&e.Samples, "samples", 10000, "random-search samples per image")
	fs.IntVar(&e.Steps, "steps", 1000, "PGD iterations per run")
	fs.Float64Var(&e.LR, "lr", 0.01, "PGD Adam learning rate")
	fs.IntVar(&e.Restarts, "restarts", 4, "PGD runs per image (the first from the image, the rest from random points of the ball)")
	fs.Float64Var(&e.Clip, "clip", 1, "ε of the proxy J̃")
	fs.Var(&lossesFlag{e: e, raw: "margin,eos-logprob"}, "losses", "PGD losses, each a run of its own")
	fs.IntVar(&e.MaxSteps, "max-steps", 200, "decoding step cap")
	fs.IntVar(&e.Cap, "cap", captions.MaxTokens, "the training cap on output length that the table counts outputs past")
	fs.IntVar(&e.Batch, "batch", 25, "images per batched PGD run (speed only)")
	fs.Uint64Var(&e.Seed, "seed", 1, "seed for image selection and every per-sample random choice")
	fs.BoolVar(&e.SummaryOnly, "summary-only", false, "only summarise the records already written")
}

// lossesFlag is --losses: comma-separated PGD losses. A loss it cannot
// parse is kept for Validate to report with the other settings.
type lossesFlag struct {
	e   *CaptionExperiment
	raw string
}

func (f *lossesFlag) String() string { return f.raw }
func (f *lossesFlag) Type() string   { return "string" }

func (f *lossesFlag) Set(s string) error {
	f.raw, f.e.Losses, f.e.lossesErr = s, nil, nil
	for _, l := range strings.Split(s, ",") {
		loss, err := attack.ParseLoss(strings.TrimSpace(l))
		if err != nil {
			f.e.Losses, f.e.lossesErr = nil, err
			return nil
		}
		f.e.Losses = append(f.e.Losses, loss)
	}
	return nil
}

// Validate checks the experiment's settings before any work: a
// SettingsError naming the first problem. Settings of the runs
// themselves (radii, budgets against the model) are checked per model
// when it is loaded.
func (e *CaptionExperiment) Validate() error {
	if len(e.Models) == 0 || e.Out == "" {
		return SettingsError{errors.New("--model and --out are required")}
	}
	if e.Images <= 0 || e.Cap < 0 || e.First < 0 {
		return SettingsError{errors.New("--images must be positive, --first and --cap non-negative")}
	}
	// The checks lenspec attack's runs get (AttackConfig.Validate), here
	// before any model is loaded, naming this command's flags.
	for _, err := range []error{CheckBudget("samples", e.Samples), CheckBudget("steps", e.Steps), CheckRestarts("restarts", e.Restarts),
		CheckMaxSteps(e.MaxSteps, true), CheckRadii("eps", e.Eps), settingsErr(validPGD(AttackSettings{LR: e.LR, Clip: e.Clip, Restarts: e.Restarts}))} {
		if err != nil {
			return err
		}
	}
	names := map[string]bool{}
	for _, m := range e.Models {
		n := filepath.Base(filepath.Clean(m))
		if names[n] {
			return SettingsError{fmt.Errorf("--model %s: two models named %s (their records would share OUT/%s)", m, n, n)}
		}
		names[n] = true
	}
	return settingsErr(e.lossesErr)
}
