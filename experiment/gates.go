package experiment

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lenspec/lenspec/model"
	"github.com/spf13/pflag"
)

// GateSet is the gate saturation of one set of decoding paths (clean or
// attacked inputs).
type GateSet struct {
	Name    string            `json:"name"`
	Summary model.GateSummary `json:"summary"`
}

// Text is the set's summary as lenspec gates prints it (threshold: the
// |z| it was measured with): the fraction saturated per gate, overall, at
// the eos step and step by step, and the eos margins.
func (g GateSet) Text(threshold float64) string {
	s := g.Summary
	var b strings.Builder
	fmt.Fprintf(&b, "%s paths: %d (stopped %d); gates with |z| > %g:\n", g.Name, s.Paths, s.Stopped, threshold)
	row := func(label string, n int, v [4]float64) {
		fmt.Fprintf(&b, "  %-10s %6d  i %5.1f%%  f %5.1f%%  g %5.1f%%  o %5.1f%%\n", label, n, 100*v[0], 100*v[1], 100*v[2], 100*v[3])
	}
	row("all steps", s.Paths, s.Gate)
	row("eos step", s.Stopped, s.AtEOS)
	for t, v := range s.ByStep {
		row(fmt.Sprintf("step %d", t), s.StepPaths[t], v)
	}
	if s.Stopped > 0 {
		fmt.Fprintf(&b, "  eos margin over the runner-up at the eos step: mean %.2f, median %.2f, 10th percentile %.2f, min %.3f; mean p(eos) %.4f\n",
			s.EOSMarginMean, s.EOSMarginMedian, s.EOSMarginP10, s.EOSMarginMin, s.EOSProbMean)
	}
	return b.String()
}

// Gates measures m's gate saturation (model.GateSaturation, |z| >
// threshold) and eos margins along the greedy paths of the clean and the
// attacked inputs (batches of m's inputs, concatenated), leaving out a set
// with no inputs.
func Gates(ctx context.Context, m *Model, clean, attacked []float64, maxSteps int, threshold float64) ([]GateSet, error) {
	var sets []GateSet
	for _, s := range []struct {
		name string
		x    []float64
	}{{"clean", clean}, {"attacked", attacked}} {
		if len(s.x) == 0 {
			continue
		}
		paths, err := model.GateSaturation(ctx, m.D64, model.Batch[float64]{X: s.x}, maxSteps, threshold)
		if err != nil {
			return nil, err
		}
		sets = append(sets, GateSet{s.name, model.SummariseGates(paths)})
	}
	return sets, nil
}

// ReadInputs reads inputs of m saved as safetensors files (as witnesses
// are), concatenated.
func ReadInputs(m *Model, paths []string) ([]float64, error) {
	var x []float64
	for _, p := range paths {
		v, err := ReadWitness(p, m.D64.Input())
		if err != nil {
			return nil, err
		}
		x = append(x, v...)
	}
	return x, nil
}

// LengthenedInputs reads the witnesses of the outputs that attacks
// lengthened, recorded for m (by its digest) in the attack results files,
// concatenated. A file holding records of other models only is refused,
// as a SettingsError naming both models; one holding some is read for
// m's, and logf (if not nil) says how many records it left out.
func LengthenedInputs(m *Model, files []string, logf func(format string, args ...any)) ([]float64, error) {
	var paths []string
	for _, p := range files {
		recs, err := ReadAttackRecords(p)
		if err != nil {
			return nil, err
		}
		var other *AttackRecord
		others := 0
		for i, r := range recs {
			if r.ModelSHA256 != m.Digest {
				if others++; other == nil {
					other = &recs[i]
				}
				continue
			}
			if r.Success && r.Witness != "" {
				paths = append(paths, r.Witness)
			}
		}
		switch {
		case others > 0 && others == len(recs):
			return nil, SettingsError{fmt.Errorf("--attacks %s: its records are of model %s (model_sha256 %s), not of --model %s (%s)",
				p, other.Model, shortDigest(other.ModelSHA256), m.Dir, shortDigest(m.Digest))}
		case others > 0 && logf != nil:
			logf("--attacks %s: %d of %d records are of another model (%s, model_sha256 %s), not of --model %s: left out",
				p, others, len(recs), other.Model, shortDigest(other.ModelSHA256), m.Dir)
		}
	}
	return ReadInputs(m, paths)
}

// shortDigest is a digest's first 12 hex digits, enough to tell models apart
// in a message.
func shortDigest(digest string) string { return digest[:min(len(digest), 12)] }

// GateInputs names the decoding paths lenspec gates measures: clean ones,
// the user's Inputs (safetensors files) or else Images random test images
// drawn with Seed, or those Indices names, of the Multi-MNIST data set
// DataSeed generates (Selection); and attacked ones, the witnesses of the
// outputs lengthened in the Attacks results files (LengthenedInputs).
type GateInputs struct {
	Images         int
	Indices        []int
	Inputs         []string
	Attacks        []string
	Seed, DataSeed uint64
}

// RegisterFlags adds the inputs to fs as lenspec gates' flags.
func (g *GateInputs) RegisterFlags(fs *pflag.FlagSet) {
	fs.IntVar(&g.Images, "images", 0, "this many test images, drawn at random with --seed")
	fs.IntSliceVar(&g.Indices, "index", nil, "these test images")
	fs.StringArrayVar(&g.Inputs, "input", nil, "an input as a safetensors file (repeatable)")
	fs.StringArrayVar(&g.Attacks, "attacks", nil, "attack results file whose lengthened outputs' witnesses are the attacked paths (repeatable)")
	fs.Uint64Var(&g.Seed, "seed", 1, "seed for image selection")
	fs.Uint64Var(&g.DataSeed, "data-seed", DefaultDataSeed, "data generation seed")
}

// Read reads the clean and attacked inputs g names for m, each set
// concatenated; sources is asked for the data set only when it is read,
// and logf (if not nil) is told of attack records of other models left
// out (LengthenedInputs). Naming no input at all is a SettingsError.
func (g GateInputs) Read(ctx context.Context, m *Model, sources func() (Sources, error), logf func(format string, args ...any)) (clean, attacked []float64, err error) {
	switch {
	case len(g.Inputs) > 0:
		if clean, err = ReadInputs(m, g.Inputs); err != nil {
			return nil, nil, err
		}
	case g.Images > 0 || len(g.Indices) > 0:
		src, err := sources()
		if err != nil {
			return nil, nil, err
		}
		data, picked, err := src.Select(ctx, m, Selection{Images: g.Images, Indices: g.Indices, Split: "test", DataSeed: g.DataSeed, Seed: g.Seed}, 0)
		if err != nil {
			return nil, nil, err
		}
		clean, _, _ = data.Source.Batch(picked, nil)
	}
	if attacked, err = LengthenedInputs(m, g.Attacks, logf); err != nil {
		return nil, nil, err
	}
	if len(clean) == 0 && len(attacked) == 0 {
		return nil, nil, SettingsError{errors.New("give inputs: --images, --index or --input, and/or --attacks")}
	}
	return clean, attacked, nil
}
