package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nmt"
	"github.com/spf13/pflag"
)

// Report is a command's result as lenspec prints it without --json.
type Report interface {
	WriteText(w io.Writer)
}

// EvalSettings are lenspec eval's settings: the model, the split, the
// step cap, and the data (a captioner's Multi-MNIST seed, a translator's
// corpus and how many of its translations to show).
type EvalSettings struct {
	Model, Split       string
	MaxSteps, Examples int
	DataSeed           uint64
	Corpus             nmt.CorpusChoice
}

// RegisterFlags adds the settings to fs as lenspec eval's flags.
func (s *EvalSettings) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Model, "model", "", "model directory")
	fs.StringVar(&s.Split, "split", "test", "train or test (a translator: test or dev)")
	RegisterMaxSteps(fs, &s.MaxSteps)
	fs.Uint64Var(&s.DataSeed, "data-seed", DefaultDataSeed, "Multi-MNIST generation seed")
	fs.IntVar(&s.Examples, "examples", 0, "a translator: also show the first N translations of the split (source, reference, output)")
	s.Corpus.RegisterFlags(fs)
}

// Evaluate evaluates the model: a captioner on Multi-MNIST from env's
// sources (EvalCaptioner, following progress), a translator on its
// corpus (nmt.Evaluate). Settings out of range are SettingsErrors.
func (s *EvalSettings) Evaluate(ctx context.Context, env Env, progress Progress) (Report, error) {
	if s.Model == "" {
		return nil, SettingsError{errors.New("--model is required")}
	}
	if err := CheckMaxSteps(s.MaxSteps, env.Changed("max-steps")); err != nil {
		return nil, err
	}
	d, err := model.Load[float32](s.Model)
	if err != nil {
		return nil, err
	}
	if d.Input().Kind == model.Tokens {
		return s.translator(ctx, env, d)
	}
	if err := CheckSplit(s.Split); err != nil {
		return nil, err
	}
	src, err := env.Sources()
	if err != nil {
		return nil, err
	}
	ev, err := src.EvalCaptioner(ctx, s.Model, d, s.Split, s.DataSeed, s.MaxSteps, progress)
	if err != nil {
		return nil, err
	}
	return ev, nil
}

// translator evaluates the translator d on its corpus: BLEU on the split
// against the dictionary baseline, and the clean output lengths on dev.
func (s *EvalSettings) translator(ctx context.Context, env Env, d model.Decoder[float32]) (Report, error) {
	if s.Examples < 0 {
		return nil, SettingsError{fmt.Errorf("--examples %d must be non-negative", s.Examples)}
	}
	if s.Split != "test" && s.Split != "dev" {
		return nil, SettingsError{fmt.Errorf("--split %q: a translator is evaluated on test or dev", s.Split)}
	}
	cf, err := s.Corpus.ForModel(s.Model, d.Config(), env.Changed("split-seed"))
	if err != nil {
		return nil, SettingsError{err}
	}
	sp, err := cf.Load()
	if err != nil {
		return nil, err
	}
	ev, err := nmt.Evaluate(ctx, s.Model, d, sp, s.Split, s.MaxSteps, s.Examples)
	if err != nil {
		return nil, err
	}
	return ev, nil
}
