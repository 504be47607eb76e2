package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lenspec/lenspec/captions"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/spf13/pflag"
)

// PreviewSettings are what lenspec data multimnist and data captions
// share: the first Count canvases of Split, enlarged Scale times, written
// as PNG files to Out.
type PreviewSettings struct {
	Out, Split   string
	Count, Scale int
}

// RegisterFlags adds the settings to fs as the data commands' flags.
func (p *PreviewSettings) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&p.Out, "out", "", "output directory for PNG files")
	fs.StringVar(&p.Split, "split", "test", "train or test")
	fs.IntVar(&p.Count, "count", 8, "number of canvases, at most the split's (50,000 train, 10,000 test)")
	fs.IntVar(&p.Scale, "scale", 4, "integer upscaling of the PNG (nearest neighbour; decode --image undoes it)")
}

// Validate checks the settings before any work, as SettingsErrors naming
// the flags: an output directory, a positive count, a scale in
// 1..maxScale (each command's own: the larger a canvas, the smaller), the
// split (CheckSplit), and a count no larger than the split's canvases,
// trainN or testN (each data set's own), rather than building the split
// and writing fewer than asked for.
func (p PreviewSettings) Validate(maxScale, trainN, testN int) error {
	if p.Out == "" {
		return SettingsError{errors.New("--out is required")}
	}
	if p.Count <= 0 || p.Scale <= 0 || p.Scale > maxScale {
		return SettingsError{fmt.Errorf("--count must be positive and --scale in 1..%d", maxScale)}
	}
	if err := CheckSplit(p.Split); err != nil {
		return err
	}
	if n := map[string]int{"train": trainN, "test": testN}[p.Split]; p.Count > n {
		return SettingsError{fmt.Errorf("--count %d: want at most %d, the %s split's canvases", p.Count, n, p.Split)}
	}
	return nil
}

// CaptionPreview is one canvas WriteCaptionPreviews wrote: its caption, the
// model's output spelled out (if a model was given) and the two PNG files.
type CaptionPreview struct {
	Index   int    `json:"index"`
	Caption string `json:"caption"`
	Output  string `json:"output,omitempty"`
	PNG     string `json:"png"`
	Preview string `json:"preview"`
}

// WriteCaptionPreviews writes the first n canvases of ds (split names
// them) to dir: SPLIT-NNNNN.png, the canvas enlarged scale times (what
// lenspec decode --image reads), and SPLIT-NNNNN-caption.png, the same
// with its caption printed under it and, if d is not nil, d's greedy
// output too.
func WriteCaptionPreviews(ctx context.Context, ds *captions.Dataset, d model.Decoder[float64], split, dir string, n, scale int) ([]CaptionPreview, error) {
	n = min(n, ds.N)
	var outs []model.Result
	if d != nil {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		src, err := captions.NewSource[float64](ds, d.Input().Min, d.Input().Max)
		if err != nil {
			return nil, err
		}
		x, _, _ := src.Batch(idx, nil)
		if outs, err = model.Decode(ctx, d, model.Batch[float64]{X: x}, 0); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var items []CaptionPreview
	for i := range n {
		it := CaptionPreview{Index: i, Caption: ds.Captions[i].String(),
			PNG: filepath.Join(dir, fmt.Sprintf("%s-%05d.png", split, i)), Preview: filepath.Join(dir, fmt.Sprintf("%s-%05d-caption.png", split, i))}
		if err := multimnist.WritePNG(it.PNG, ds.Canvas(i), captions.Height, captions.Width, scale); err != nil {
			return nil, err
		}
		second := ""
		if outs != nil {
			it.Output = Spell(d.Config(), outs[i])
			second = "model: " + it.Output
		}
		if err := captions.WritePreview(it.Preview, ds.Canvas(i), "caption: "+it.Caption, second, scale); err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}

// Spell is a decoded output as the model's words, "…" marking one that did
// not stop.
func Spell(cfg *model.Config, r model.Result) string {
	w := make([]string, len(r.Tokens))
	for i, t := range r.Tokens {
		w[i] = cfg.Token(t)
	}
	s := strings.Join(w, " ")
	if !r.Stopped {
		s += " …"
	}
	return s
}

// CaptionPreviewing is lenspec data captions: the previews to write, the
// captions data set's caption-length distribution and seed, a model
// whose captions are shown beside the data set's (Model, optional), and
// whether the report shows the split's length histogram.
type CaptionPreviewing struct {
	PreviewSettings
	Lengths, Model string
	DataSeed       uint64
	Histogram      bool
}

// RegisterFlags adds the settings to fs as lenspec data captions' flags.
func (c *CaptionPreviewing) RegisterFlags(fs *pflag.FlagSet) {
	c.PreviewSettings.RegisterFlags(fs)
	fs.StringVar(&c.Lengths, "lengths", "skewed", "caption-length distribution: skewed (short captions most, as COCO) or flat")
	fs.StringVar(&c.Model, "model", "", "also decode the canvases with this model and print its captions")
	fs.Uint64Var(&c.DataSeed, "data-seed", DefaultDataSeed, "generation seed")
	fs.BoolVar(&c.Histogram, "histogram", false, "print the split's caption-length histogram (without --out, only that: no PNG files)")
}

// previewFlags are the flags of the previews, which --histogram without
// --out writes none of.
var previewFlags = []string{"count", "scale", "model"}

// Validate checks the settings before any work, as SettingsErrors naming
// the flags (changed reports those given): the previews' (PreviewSettings)
// unless the histogram alone is asked for (Histogram without Out), when
// no preview flag may be given, and the caption lengths.
func (c *CaptionPreviewing) Validate(changed func(flag string) bool) error {
	if c.Out == "" && c.Histogram {
		for _, f := range previewFlags {
			if changed(f) {
				return SettingsError{fmt.Errorf("--%s is read only with --out: --histogram without it writes no previews", f)}
			}
		}
		if err := CheckSplit(c.Split); err != nil {
			return err
		}
	} else if err := c.PreviewSettings.Validate(16, captions.DefaultTrain, captions.DefaultTest); err != nil {
		return err
	}
	return CheckCaptionLengths(c.Lengths)
}

// Write checks the settings (Validate; env.Changed reports the flags
// given), loads the model if one is named, builds the split from env's
// sources and writes its previews (WriteCaptionPreviews), none with the
// histogram alone.
func (c *CaptionPreviewing) Write(ctx context.Context, env Env) (CaptionPreviewReport, error) {
	if err := c.Validate(env.Changed); err != nil {
		return CaptionPreviewReport{}, err
	}
	var d model.Decoder[float64]
	if c.Model != "" {
		var err error
		if d, err = model.Load[float64](c.Model); err != nil {
			return CaptionPreviewReport{}, err
		}
		if err := CheckCaptions(d.Input()); err != nil {
			return CaptionPreviewReport{}, fmt.Errorf("%s: %w", c.Model, err)
		}
	}
	src, err := env.Sources()
	if err != nil {
		return CaptionPreviewReport{}, err
	}
	ds, err := src.CaptionSplit(ctx, c.DataSeed, c.Lengths, c.Split)
	if err != nil {
		return CaptionPreviewReport{}, err
	}
	items := []CaptionPreview{}
	if c.Out != "" {
		if items, err = WriteCaptionPreviews(ctx, ds, d, c.Split, c.Out, c.Count, c.Scale); err != nil {
			return CaptionPreviewReport{}, err
		}
	}
	return CaptionPreviewReport{Items: items, LengthHistogram: ds.LengthHistogram(), Split: c.Split, N: ds.N, Histogram: c.Histogram}, nil
}

// MultiMNISTPreviews are the canvases lenspec data multimnist wrote.
type MultiMNISTPreviews []multimnist.Preview

// WriteText writes a line per canvas: its file and its label.
func (p MultiMNISTPreviews) WriteText(w io.Writer) {
	for _, it := range p {
		fmt.Fprintf(w, "%s  label %v\n", it.PNG, it.Label)
	}
}

// MultiMNISTPreviewing is lenspec data multimnist: the previews to write
// and the Multi-MNIST seed.
type MultiMNISTPreviewing struct {
	PreviewSettings
	DataSeed uint64
}

// RegisterFlags adds the settings to fs as lenspec data multimnist's
// flags.
func (m *MultiMNISTPreviewing) RegisterFlags(fs *pflag.FlagSet) {
	m.PreviewSettings.RegisterFlags(fs)
	fs.Uint64Var(&m.DataSeed, "data-seed", DefaultDataSeed, "Multi-MNIST generation seed")
}

// Write checks the settings (as SettingsErrors), builds Multi-MNIST from
// env's sources and writes the split's previews (multimnist.WritePreviews).
func (m *MultiMNISTPreviewing) Write(ctx context.Context, env Env) (MultiMNISTPreviews, error) {
	if err := m.Validate(64, multimnist.DefaultTrain, multimnist.DefaultTest); err != nil {
		return nil, err
	}
	src, err := env.Sources()
	if err != nil {
		return nil, err
	}
	tr, ds, err := src.MultiMNIST(ctx, m.DataSeed)
	if err != nil {
		return nil, err
	}
	if m.Split == "train" {
		ds = tr
	}
	return multimnist.WritePreviews(ds, m.Out, m.Split, m.Count, m.Scale)
}
