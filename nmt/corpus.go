package nmt

import (
	"fmt"
	"strings"

	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/model"
	"github.com/spf13/pflag"
)

// DefaultCorpus is the corpus a translator trains on unless told
// otherwise: Debian's Ding dictionary.
const DefaultCorpus = "ding"

// CorpusChoice selects the parallel corpus a translator trains on or is
// evaluated on: a registered corpus (corpus.Sources) at its default
// location or one given, or a TSV file of the user's, split with a seed.
type CorpusChoice struct {
	// Name is a registered corpus or a TSV file; "" is the corpus the
	// model was trained on (ForModel), else DefaultCorpus.
	Name string
	// Paths holds each registered corpus's location, by its name ("" or
	// absent: its default location).
	Paths map[string]*string
	// SplitSeed seeds the train/dev/test split of the corpora lenspec
	// splits itself.
	SplitSeed uint64
}

// CorpusFlagNames are the flags CorpusChoice.RegisterFlags adds.
func CorpusFlagNames() []string {
	names := []string{"corpus", "split-seed"}
	for _, s := range corpus.Sources() {
		names = append(names, s.LocationFlag)
	}
	return names
}

// RegisterFlags adds the choice to fs as the translator commands'
// --corpus and --split-seed, and a location flag per registered corpus
// (corpus.Source.LocationFlag), so that a new corpus registers its flag
// with itself.
func (c *CorpusChoice) RegisterFlags(fs *pflag.FlagSet) {
	var names []string
	c.Paths = map[string]*string{}
	for _, s := range corpus.Sources() {
		names = append(names, fmt.Sprintf("%q (%s)", s.Name, s.Help))
		c.Paths[s.Name] = fs.String(s.LocationFlag, "", fmt.Sprintf("%s: %s", s.Name, s.Location))
	}
	fs.StringVar(&c.Name, "corpus", "", strings.Join(names, ", ")+` or a corpus of your own: a file of "source<TAB>target" lines (default: the model's own corpus; for training, `+DefaultCorpus+`)`)
	fs.Uint64Var(&c.SplitSeed, "split-seed", corpus.DefaultSplitSeed, "seed of the train/dev/test split (Ding and TSV corpora; Multi30k's splits are its own)")
}

// ForModel fills in what the choice leaves open from the training record
// (Train's) of the translator cfg, read from dir: its split seed, unless
// seedGiven, and, when Name is empty, its corpus if registered. A model
// trained on a TSV file of its own cannot name it: that is an error
// asking for --corpus.
func (c CorpusChoice) ForModel(dir string, cfg *model.Config, seedGiven bool) (CorpusChoice, error) {
	tr := cfg.Training
	if rec, ok := tr["split_seed"].(float64); ok && !seedGiven {
		c.SplitSeed = uint64(rec)
	}
	if c.Name == "" {
		rec, _ := tr["corpus"].(string)
		if rec == "tsv" {
			return c, fmt.Errorf("%s was trained on a corpus of its own: name it with --corpus", dir)
		}
		if _, ok := corpus.Lookup(rec); ok {
			c.Name = rec
		}
	}
	return c, nil
}

// Load reads and splits the corpus chosen (corpus.Load).
func (c CorpusChoice) Load() (*corpus.Splits, error) {
	name, path := c.Name, ""
	if name == "" {
		name = DefaultCorpus
	}
	if p := c.Paths[name]; p != nil {
		path = *p
	}
	return corpus.Load(name, path, c.SplitSeed)
}
