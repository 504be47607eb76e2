package experiment

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/report"
)

// CaptionRow is one (model, radius, method) line of the Show-and-Tell
// experiment's table (paper §5.2): how far the attacks lengthen captions,
// and how many outputs pass the training cap. Its counts, rates, means
// and times are over the images whose unit completed (Images); Failed
// counts the others, in no other field.
type CaptionRow struct {
	Model  string  `json:"model"`
	Eps    float64 `json:"eps"`
	Method string  `json:"method"` // random, or pgd and its loss
	Images int     `json:"images"`
	// Lengthened is the fraction of images whose replayed output is longer
	// than the original with no tie on its path.
	Lengthened float64 `json:"lengthened"`
	MeanRatio  float64 `json:"mean_length_ratio"`
	Longest    int     `json:"longest"`
	Unstopped  int     `json:"unstopped"`
	// OverCap counts images whose attacked output is longer than the
	// training cap; OrigOverCap those whose original output already is.
	OverCap     int `json:"over_cap"`
	OrigOverCap int `json:"orig_over_cap"`
	Ties        int `json:"ties"`
	Failed      int `json:"failed"`
	// NoRatio counts the completed images whose original output is empty:
	// they have no length ratio, so MeanRatio is over the others.
	NoRatio int `json:"no_ratio,omitempty"`
	// Witnesses counts the lengthened outputs; Replayed those whose saved
	// witness decodes again, in float64, to the recorded tokens with no
	// tie (−1: not checked).
	Witnesses int `json:"witnesses"`
	Replayed  int `json:"replayed"`
	// Unreadable counts the witnesses whose file is missing or cannot be
	// read (records copied without their witnesses, as docs/runs ships
	// them): not replayed, and said so, rather than failing the summary.
	Unreadable int `json:"unreadable,omitempty"`
	// Sampled counts the inputs the searches evaluated in float32 (where
	// records keep their lengths: random search), SampledOverCap those
	// whose output was longer than the cap or did not stop.
	Sampled        int64   `json:"sampled,omitempty"`
	SampledOverCap int64   `json:"sampled_over_cap,omitempty"`
	Evals          int64   `json:"evals"`
	Seconds        float64 `json:"seconds"`
}

// CaptionSummary is the figure and table of one model's caption attacks.
type CaptionSummary struct {
	FigurePNG string       `json:"figure_png"`
	FigureSVG string       `json:"figure_svg"`
	TableFile string       `json:"table_file"`
	Table     string       `json:"table"`
	Rows      []CaptionRow `json:"rows"`
}

// methodLabel names an attack record's method with its loss.
func methodLabel(r AttackRecord) string {
	if r.Method == MethodPGD && r.Settings.Loss != "" {
		return MethodPGD + " " + r.Settings.Loss
	}
	return r.Method
}

// SummariseCaptionAttacks makes the length figure and the table of one
// model's attack records (name labels its rows): per radius and method the
// share of lengthened outputs, the mean length ratio, the longest output
// and how many outputs are longer than capLen, the training cap. With m
// set, every lengthened output's witness is decoded again in float64 and
// must give the recorded tokens with no tie.
func SummariseCaptionAttacks(ctx context.Context, recs []AttackRecord, m *Model, name, outDir, title string, capLen int) (*CaptionSummary, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("no attack records of %s to summarise", name)
	}
	pts, keys, groups := groupAttacks(recs, methodLabel, imageOrder)
	sum := &CaptionSummary{
		FigurePNG: filepath.Join(outDir, "attack-lengths.png"),
		FigureSVG: filepath.Join(outDir, "attack-lengths.svg"),
		TableFile: filepath.Join(outDir, "attack-table.md"),
	}
	if len(pts) > 0 {
		if err := report.LengthFigure(pts, title, sum.FigurePNG, sum.FigureSVG); err != nil {
			return nil, err
		}
	}
	for _, k := range keys {
		row, err := captionRow(ctx, groups[k], m, name, k.eps, k.method, capLen)
		if err != nil {
			return nil, err
		}
		sum.Rows = append(sum.Rows, row)
	}
	sum.Table = CaptionTable(sum.Rows, capLen)
	if err := fileio.WriteFileAtomic(sum.TableFile, []byte(sum.Table)); err != nil {
		return nil, err
	}
	return sum, nil
}

// captionRow summarises one group of records.
func captionRow(ctx context.Context, g []AttackRecord, m *Model, name string, eps float64, method string, capLen int) (CaptionRow, error) {
	t := tallyAttacks(g)
	row := CaptionRow{Model: name, Eps: eps, Method: method, Images: t.completed, Replayed: -1, Lengthened: t.lengthened, MeanRatio: t.meanRatio,
		Longest: t.longest, Unstopped: t.unstopped, Ties: t.ties, Failed: t.failed, NoRatio: t.noRatio, Evals: t.evals, Seconds: t.seconds}
	if m != nil {
		row.Replayed = 0
	}
	for _, r := range g {
		if r.Error != "" {
			continue
		}
		if r.AdvLength > capLen {
			row.OverCap++
		}
		if r.OrigLength > capLen {
			row.OrigOverCap++
		}
		total, over := sampledOver(r.LengthCounts, capLen)
		row.Sampled, row.SampledOverCap = row.Sampled+total, row.SampledOverCap+over
		if r.Success {
			row.Witnesses++
			if m != nil {
				switch ok, err := replays(ctx, m, r); {
				case errors.Is(err, errUnreadable):
					row.Unreadable++
				case err != nil:
					return row, err
				case ok:
					row.Replayed++
				}
			}
		}
	}
	return row, nil
}

// replays decodes a record's witness again in float64 and reports whether
// it gives the recorded tokens, stopping as recorded, with no tie.
func replays(ctx context.Context, m *Model, r AttackRecord) (bool, error) {
	if r.Witness == "" {
		return false, nil
	}
	x, err := ReadWitness(r.Witness, m.D64.Input())
	if err != nil {
		return false, fmt.Errorf("%w: %w", errUnreadable, err)
	}
	res, err := model.Decode(ctx, m.D64, model.Batch[float64]{X: x}, r.Settings.MaxSteps)
	if err != nil {
		return false, err
	}
	got := res[0]
	return slices.Equal(got.Tokens, r.AdvTokens) && got.Stopped == r.Stopped && !got.Tie(), nil
}

// errUnreadable marks a witness file that is missing or cannot be read.
var errUnreadable = errors.New("witness unreadable")

// CaptionTable is the Markdown table of caption-attack rows, of one model
// or several side by side.
func CaptionTable(rows []CaptionRow, capLen int) string {
	var cells [][]string
	for _, r := range rows {
		longest := fmt.Sprint(r.Longest)
		if r.Unstopped > 0 {
			longest = fmt.Sprintf("≥%d (%d without eos)", r.Longest, r.Unstopped)
		}
		replayed, sampled := "—", "—"
		if r.Replayed >= 0 {
			replayed = fmt.Sprintf("%d/%d", r.Replayed, r.Witnesses)
			if r.Unreadable > 0 {
				replayed += fmt.Sprintf(" (%d missing or unreadable)", r.Unreadable)
			}
		}
		if r.Sampled > 0 {
			sampled = fmt.Sprintf("%d of %d", r.SampledOverCap, r.Sampled)
		}
		cells = append(cells, []string{r.Model, fmt.Sprint(r.Eps), r.Method, fmt.Sprint(r.Images),
			over(r.Images, "%.1f%%", 100*r.Lengthened), over(r.Images, "%.3f", r.MeanRatio), longest,
			fmt.Sprintf("%d (originals %d)", r.OverCap, r.OrigOverCap), sampled, fmt.Sprint(r.Ties), replayed,
			fmt.Sprint(r.Evals), fmt.Sprintf("%.0f", r.Seconds)})
	}
	header := []string{"model", "δ", "method", "images", "lengthened", "mean length ratio", "longest",
		fmt.Sprintf("outputs > %d", capLen), fmt.Sprintf("sampled outputs > %d", capLen), "ties", "witnesses replayed", "evaluations", "seconds"}
	return attackTable(header, cells, func(i int) int { return rows[i].Failed }, func(i int) int { return rows[i].NoRatio })
}
