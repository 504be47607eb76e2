package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lenspec/lenspec/report"
	"github.com/lenspec/lenspec/results"
	"github.com/spf13/cobra"
)

// paperVerifyEps spans all-robust to all-vulnerable on the shipped model
// and contains the attack experiment's grid.
var paperVerifyEps = []float64{0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5}

func newVerifyExperimentCmd(a *app) *cobra.Command {
	cfg := &verifyConfig{}
	var outDir string
	c := &cobra.Command{
		Use:   "mmnist-verify",
		Short: "The paper's verification experiment: robust / vulnerable / unknown per δ, figure and table",
		Long: `Verify --images random test images at every δ of --eps against K̂ = the length of
the ground-truth label ("longer than the ground truth"), with --timeout per sample.
Results go to OUT/verify.jsonl as they are produced (rerunning resumes); then the
stacked bar chart of verdict proportions per δ (PNG, SVG) and a table are written.

With --shard k/n, n processes (one per core) share the list: each writes
OUT/verify-shard-k-of-n.jsonl, and each summary covers every verify*.jsonl in OUT.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if outDir == "" {
				return usagef("--out is required")
			}
			cfg.out = filepath.Join(outDir, "verify.jsonl")
			if cfg.shard != "" && cfg.shard != "1/1" {
				cfg.out = filepath.Join(outDir, "verify-shard-"+strings.ReplaceAll(cfg.shard, "/", "-of-")+".jsonl")
			}
			if err := cfg.validate(); err != nil {
				return err
			}
			if err := runVerify(c.Context(), a, cfg, func(verifyRecord) error { return nil }); err != nil {
				return err
			}
			return emitSummaryOf(a, func() ([]verifyRecord, error) { return readVerifyRecords(outDir) }, outDir, summariseVerify)
		},
	}
	cfg.flags(c, false)
	f := c.Flags()
	f.StringVar(&outDir, "out", "", "output directory (verify.jsonl, witnesses, figure, table)")
	f.IntVar(&cfg.images, "images", 100, "number of random test images")
	f.Float64SliceVar(&cfg.eps, "eps", paperVerifyEps, "radius grid")
	return c
}

// readVerifyRecords reads OUT/verify.jsonl and every shard's file,
// keeping the first record of each key.
func readVerifyRecords(outDir string) ([]verifyRecord, error) {
	paths, err := filepath.Glob(filepath.Join(outDir, "verify*.jsonl"))
	if err != nil {
		return nil, err
	}
	var all []verifyRecord
	seen := map[string]bool{}
	for _, p := range paths {
		recs, err := results.Read[verifyRecord](p)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			k, err := verifyKey(mustJSON(r))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			if !seen[k] {
				seen[k] = true
				all = append(all, r)
			}
		}
	}
	return all, nil
}

func (s *verifySummary) text() string {
	return fmt.Sprintf("figure: %s, %s\n\n%s", s.FigurePNG, s.FigureSVG, s.Table)
}

type verifySummary struct {
	FigurePNG string `json:"figure_png"`
	FigureSVG string `json:"figure_svg"`
	TableFile string `json:"table_file"`
	Table     string `json:"table"`
}

// summariseVerify draws the verdict chart and table from records only.
func summariseVerify(recs []verifyRecord, outDir string) (*verifySummary, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("no verification records to summarise")
	}
	by := map[float64][]verifyRecord{}
	for _, r := range recs {
		by[r.Eps] = append(by[r.Eps], r)
	}
	var eps []float64
	for e := range by {
		eps = append(eps, e)
	}
	sort.Float64s(eps)
	var counts []report.VerdictCount
	var rows [][]string
	for _, e := range eps {
		vc := report.VerdictCount{Delta: e}
		var secs, bins, relu, unstI, unstC []float64
		for _, r := range by[e] {
			switch r.Verdict {
			case "robust":
				vc.Robust++
			case "vulnerable":
				vc.Vulnerable++
			default:
				vc.Unknown++
			}
			secs = append(secs, r.Seconds)
			if r.Stage != "attack" { // the attack settles it before any bound
				unstI = append(unstI, float64(r.UnstableInterval))
				unstC = append(unstC, float64(r.Unstable))
			}
			if r.Binaries > 0 {
				bins = append(bins, float64(r.Binaries))
				relu = append(relu, float64(r.ReLUBinaries))
			}
		}
		counts = append(counts, vc)
		n := len(by[e])
		med := func(xs []float64) string {
			if len(xs) == 0 {
				return "–"
			}
			return fmt.Sprintf("%.0f", report.Quantile(xs, 0.5))
		}
		rows = append(rows, []string{fmt.Sprint(e), fmt.Sprint(n), fmt.Sprint(vc.Robust), fmt.Sprint(vc.Vulnerable), fmt.Sprint(vc.Unknown),
			fmt.Sprintf("%.0f%%", 100*float64(vc.Unknown)/float64(n)),
			fmt.Sprintf("%.2f", report.Quantile(secs, 0.5)), fmt.Sprintf("%.2f", report.Quantile(secs, 0.9)),
			med(unstI) + " → " + med(unstC), fmt.Sprint(len(bins)), med(bins), med(relu)})
	}
	sum := &verifySummary{
		FigurePNG: filepath.Join(outDir, "verify-verdicts.png"),
		FigureSVG: filepath.Join(outDir, "verify-verdicts.svg"),
		TableFile: filepath.Join(outDir, "verify-table.md"),
	}
	if err := report.VerdictFigure(counts, "Multi-MNIST: can an input within δ decode longer than the label?", sum.FigurePNG, sum.FigureSVG); err != nil {
		return nil, err
	}
	sum.Table = report.Markdown([]string{"δ", "samples", "robust", "vulnerable", "unknown", "unknown %", "median s", "p90 s", "median unstable ReLUs, interval → CROWN", "MIPs built", "median binaries", "median ReLU binaries"}, rows)
	if err := writeFileAtomic(sum.TableFile, []byte(sum.Table)); err != nil {
		return nil, err
	}
	return sum, nil
}
