package main

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/lenspec/lenspec/report"
	"github.com/lenspec/lenspec/results"
	"github.com/spf13/cobra"
)

// paperAttackEps is the radius grid of the paper's Multi-MNIST attack
// experiment (§5.2).
var paperAttackEps = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5}

func newExperimentCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "experiment", Short: "Reproduce the paper's experiments end to end (resumable)"}
	cfg := &attackConfig{}
	var outDir string
	var samples, steps int
	atk := &cobra.Command{
		Use:   "mmnist-attack",
		Short: "The paper's Multi-MNIST attack experiment: random search vs PGD over a δ grid, figure and table",
		Long: `Attack --images random test images at every δ of --eps with random search
(--samples uniform samples per image) and PGD (--steps Adam iterations, lr 0.0005),
then draw the distribution of output lengths per δ (PNG and SVG) and a table.
Results go to OUT/attacks.jsonl as they are produced; rerunning resumes.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if outDir == "" {
				return usagef("--out is required")
			}
			if samples < 0 || steps < 0 {
				return usagef("--samples and --steps must be non-negative")
			}
			cfg.out = filepath.Join(outDir, "attacks.jsonl")
			cfg.witnessDir = filepath.Join(outDir, "witnesses")
			// δ by δ, both methods, so an interrupted run leaves whole δs.
			for _, eps := range cfg.eps {
				for _, run := range []struct {
					method string
					budget int
				}{{"random", samples}, {"pgd", steps}} {
					rc := *cfg
					rc.method, rc.budget, rc.eps = run.method, run.budget, []float64{eps}
					if err := rc.validate(); err != nil {
						return err
					}
					if _, err := runAttacks(c.Context(), a, &rc); err != nil {
						return err
					}
				}
			}
			return emitSummary(a, cfg.out, outDir, summariseAttacks)
		},
	}
	cfg.flags(atk, false)
	f := atk.Flags()
	f.StringVar(&outDir, "out", "", "output directory (attacks.jsonl, witnesses/, figure, table)")
	f.IntVar(&cfg.images, "images", 100, "number of random test images")
	f.Float64SliceVar(&cfg.eps, "eps", paperAttackEps, "radius grid")
	f.IntVar(&samples, "samples", 10000, "random-search samples per image")
	f.IntVar(&steps, "steps", 10000, "PGD iterations")
	cmd.AddCommand(atk, newVerifyExperimentCmd(a))
	return cmd
}

// emitSummary reads a results file and prints the summary f makes of it
// (figures and a table written to outDir).
func emitSummary[R any, S interface{ text() string }](a *app, path, outDir string, f func([]R, string) (S, error)) error {
	return emitSummaryOf(a, func() ([]R, error) { return results.Read[R](path) }, outDir, f)
}

// emitSummaryOf is emitSummary over the records read returns.
func emitSummaryOf[R any, S interface{ text() string }](a *app, read func() ([]R, error), outDir string, f func([]R, string) (S, error)) error {
	recs, err := read()
	if err != nil {
		return err
	}
	sum, err := f(recs, outDir)
	if err != nil {
		return err
	}
	return a.emit(sum, func(w io.Writer) { fmt.Fprint(w, sum.text()) })
}

func (s *attackSummary) text() string {
	return fmt.Sprintf("figure: %s, %s\n\n%s", s.FigurePNG, s.FigureSVG, s.Table)
}

type attackSummary struct {
	FigurePNG string       `json:"figure_png"`
	FigureSVG string       `json:"figure_svg"`
	TableFile string       `json:"table_file"`
	Table     string       `json:"table"`
	Rows      []summaryRow `json:"rows"`
}

type summaryRow struct {
	Eps         float64 `json:"eps"`
	Method      string  `json:"method"`
	Images      int     `json:"images"`
	MeanRatio   float64 `json:"mean_length_ratio"`
	SuccessRate float64 `json:"success_rate"`
	Longest     int     `json:"longest"`
	Unstopped   int     `json:"unstopped"`
	Ties        int     `json:"ties"`
	Evals       int64   `json:"evals"`
	Seconds     float64 `json:"seconds"`
}

// summariseAttacks draws the figure and the table from results records
// only, so they can be regenerated from the JSONL at any time.
func summariseAttacks(recs []attackRecord, outDir string) (*attackSummary, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("no attack records to summarise")
	}
	var pts []report.LengthPoint
	orig := map[int]bool{}
	type key struct {
		eps    float64
		method string
	}
	groups := map[key][]attackRecord{}
	for _, r := range recs {
		if !orig[r.Image] {
			orig[r.Image] = true
			pts = append(pts, report.LengthPoint{Method: "original", Delta: 0, Length: r.OrigLength, Stopped: true})
		}
		pts = append(pts, report.LengthPoint{Method: r.Method, Delta: r.Eps, Length: r.AdvLength, Stopped: r.Stopped})
		k := key{r.Eps, r.Method}
		groups[k] = append(groups[k], r)
	}
	sum := &attackSummary{
		FigurePNG: filepath.Join(outDir, "attack-lengths.png"),
		FigureSVG: filepath.Join(outDir, "attack-lengths.svg"),
		TableFile: filepath.Join(outDir, "attack-table.md"),
	}
	if err := report.LengthFigure(pts, "Multi-MNIST: output length under attack", sum.FigurePNG, sum.FigureSVG); err != nil {
		return nil, err
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].eps != keys[j].eps {
			return keys[i].eps < keys[j].eps
		}
		return keys[i].method > keys[j].method // random before pgd
	})
	var rows [][]string
	for _, k := range keys {
		g := groups[k]
		row := summaryRow{Eps: k.eps, Method: k.method, Images: len(g)}
		var ratios []float64
		succ := 0
		for _, r := range g {
			if r.OrigLength > 0 {
				ratios = append(ratios, float64(r.AdvLength)/float64(r.OrigLength))
			}
			if r.AdvLength > r.OrigLength && r.MinRelMargin >= 1e-6 {
				succ++
			}
			if r.MinRelMargin < 1e-6 {
				row.Ties++
			}
			if !r.Stopped {
				row.Unstopped++
			}
			row.Longest = max(row.Longest, r.AdvLength)
			row.Evals += r.Evals
			row.Seconds += r.Seconds
		}
		row.MeanRatio = report.Mean(ratios)
		row.SuccessRate = float64(succ) / float64(len(g))
		sum.Rows = append(sum.Rows, row)
		longest := fmt.Sprint(row.Longest)
		if row.Unstopped > 0 {
			longest = fmt.Sprintf("≥%d (%d without eos)", row.Longest, row.Unstopped)
		}
		rows = append(rows, []string{fmt.Sprint(k.eps), k.method, fmt.Sprint(row.Images), fmt.Sprintf("%.3f", row.MeanRatio),
			fmt.Sprintf("%.0f%%", 100*row.SuccessRate), longest, fmt.Sprint(row.Ties), fmt.Sprint(row.Evals), fmt.Sprintf("%.0f", row.Seconds)})
	}
	sum.Table = report.Markdown([]string{"δ", "method", "images", "mean length ratio", "success (> original)", "longest", "ties", "evaluations", "seconds"}, rows)
	if err := writeFileAtomic(sum.TableFile, []byte(sum.Table)); err != nil {
		return nil, err
	}
	return sum, nil
}
