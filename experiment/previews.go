package experiment

import (
	"context"
	"errors"
	"fmt"
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
	fs.IntVar(&p.Count, "count", 8, "number of canvases")
	fs.IntVar(&p.Scale, "scale", 4, "integer upscaling of the PNG (nearest neighbour; decode --image undoes it)")
}

// Validate checks the settings before any work, as SettingsErrors naming
// the flags: an output directory, a positive count, a scale in
// 1..maxScale (each command's own: the larger a canvas, the smaller) and
// the split (CheckSplit).
func (p PreviewSettings) Validate(maxScale int) error {
	if p.Out == "" {
		return SettingsError{errors.New("--out is required")}
	}
	if p.Count <= 0 || p.Scale <= 0 || p.Scale > maxScale {
		return SettingsError{fmt.Errorf("--count must be positive and --scale in 1..%d", maxScale)}
	}
	return CheckSplit(p.Split)
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
