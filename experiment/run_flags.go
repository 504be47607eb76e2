package experiment

import (
	"errors"
	"fmt"

	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/model"
	"github.com/spf13/pflag"
)

// DefaultDataSeed generates the standard Multi-MNIST split every lenspec
// command uses unless told otherwise; the shipped models were trained and
// evaluated on it.
const DefaultDataSeed = 1

// RunSettings are the settings lenspec's attack, verify and bound share,
// and the Multi-MNIST experiments some of: the model directory, the
// inputs (Selection), the radii, the step cap and K̂, and the results
// file and its shard.
type RunSettings struct {
	Model, Out, Shard string
	Eps               []float64
	// Images, Indices, Split, Seed and DataSeed pick the data set's
	// samples, PNGs and Inputs are the user's own (Selection).
	Images         int
	Indices        []int
	PNGs, Inputs   []string
	Split          string
	Seed, DataSeed uint64
	// MaxLen is K̂ (each command registers its own flag: K reads it);
	// MaxSteps is the step cap, 0 for the model's.
	MaxLen, MaxSteps int
}

// RegisterFlags adds the settings to fs as lenspec attack's and verify's
// flags; samples adds those picking the inputs and radii, and the output,
// which the Multi-MNIST experiments define their own way.
func (r *RunSettings) RegisterFlags(fs *pflag.FlagSet, samples bool) {
	fs.StringVar(&r.Model, "model", "", "model directory")
	if samples {
		fs.Float64SliceVar(&r.Eps, "eps", nil, "L∞ radius δ (repeatable or comma-separated)")
		fs.IntVar(&r.Images, "images", 0, "this many test images, drawn at random with --seed")
		fs.IntSliceVar(&r.Indices, "index", nil, "these canvas indices")
		fs.StringArrayVar(&r.PNGs, "image", nil, "a PNG image of the model's input size (repeatable): your own input; its own output's length stands in for the label")
		fs.StringArrayVar(&r.Inputs, "input", nil, "a safetensors file holding one input tensor (repeatable), e.g. a witness: your own input")
		fs.StringVar(&r.Out, "out", "", "results file (JSONL); rerunning with the same file skips finished records")
	}
	RegisterMaxSteps(fs, &r.MaxSteps)
	fs.Uint64Var(&r.Seed, "seed", 1, "seed for image selection and every per-sample random choice (PCG(seed, sample))")
	fs.Uint64Var(&r.DataSeed, "data-seed", DefaultDataSeed, "generation seed of the data set an image model reads (Multi-MNIST, or the captions data set for a Show-and-Tell model)")
	fs.StringVar(&r.Split, "split", "test", "train or test (a text model: dev or test)")
	fs.StringVar(&r.Shard, "shard", "", "k/n: run only the k-th of n interleaved parts, into its own file (default: from JOB_COMPLETION_INDEX/JOB_COMPLETIONS or SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT when set)")
}

// ValidateFlags checks an image run's settings before any work, as
// SettingsErrors naming the flags (changed reports which were given): a
// model, an output and radii, one way of picking the inputs
// (Selection.Validate), the step cap (CheckMaxSteps) and the split.
func (r RunSettings) ValidateFlags(changed func(flag string) bool) error {
	if r.Model == "" {
		return SettingsError{errors.New("--model is required")}
	}
	if err := r.validateOutput(); err != nil {
		return err
	}
	if err := r.Selection().Validate(); err != nil {
		return err
	}
	if err := CheckMaxSteps(r.MaxSteps, changed("max-steps")); err != nil {
		return err
	}
	return CheckSplit(r.Split)
}

// ValidateText checks a text run's output settings, as SettingsErrors:
// an output and radii, and no --images (a text model's samples are
// sentences).
func (r RunSettings) ValidateText() error {
	if err := r.validateOutput(); err != nil {
		return err
	}
	if r.Images > 0 {
		return SettingsError{errors.New("--images is for image models; a text model takes --sentences")}
	}
	return nil
}

// validateOutput requires an output file and radii.
func (r RunSettings) validateOutput() error {
	if r.Out == "" {
		return SettingsError{errors.New("--out is required")}
	}
	if len(r.Eps) == 0 {
		return SettingsError{errors.New("--eps is required")}
	}
	return nil
}

// ResolveShard is the run's shard (ResolveShard: Shard, or the batch
// system's environment read by getenv), its output file refused first if
// it is not a regular file (/dev/null, /dev/full, a FIFO), before any
// work.
func (r RunSettings) ResolveShard(getenv func(string) string) (Shard, error) {
	shard, err := ResolveShard(r.Shard, getenv)
	if err != nil {
		return Shard{}, err
	}
	if err := fileio.CheckRegular(shard.Path(r.Out)); err != nil {
		return Shard{}, fmt.Errorf("--out: %w", err)
	}
	return shard, nil
}

// K is K̂: MaxLen if its flag was given (changed reports that), when it
// must not be negative, else −1, each command's default.
func (r RunSettings) K(changed func(flag string) bool) (int, error) {
	if !changed("max-len") {
		return -1, nil
	}
	if r.MaxLen < 0 {
		return 0, SettingsError{fmt.Errorf("--max-len %d: want K̂ ≥ 0", r.MaxLen)}
	}
	return r.MaxLen, nil
}

// Selection is the inputs the settings name: the user's PNGs, then their
// Inputs, as Files.
func (r RunSettings) Selection() Selection {
	return Selection{Images: r.Images, Indices: r.Indices, Files: append(append([]string(nil), r.PNGs...), r.Inputs...),
		Split: r.Split, DataSeed: r.DataSeed, Seed: r.Seed}
}

// RegisterMaxSteps adds --max-steps, the decoding step cap, to fs: 0 (the
// model's own) until given; CheckMaxSteps checks it.
func RegisterMaxSteps(fs *pflag.FlagSet, p *int) {
	fs.IntVar(p, "max-steps", 0, fmt.Sprintf("decoding step cap, 1..%d (default: the model's max_steps)", model.MaxStepCap))
}

// CheckMaxSteps refuses, as a SettingsError, a step cap given outside
// 1..model.MaxStepCap; not given, it is the model's own.
func CheckMaxSteps(maxSteps int, given bool) error {
	if given && (maxSteps < 1 || maxSteps > model.MaxStepCap) {
		return SettingsError{fmt.Errorf("--max-steps %d: want 1..%d", maxSteps, model.MaxStepCap)}
	}
	return nil
}

// CheckSplit refuses, as a SettingsError, an image data set's split other
// than train or test.
func CheckSplit(name string) error {
	if name != "train" && name != "test" {
		return SettingsError{fmt.Errorf("--split %q: want train or test", name)}
	}
	return nil
}
