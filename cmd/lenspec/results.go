package main

import (
	"fmt"
	"io"
	"os"

	"github.com/lenspec/lenspec/experiment"
	"github.com/spf13/cobra"
)

func newResultsCmd(a *app) *cobra.Command {
	var out string
	merge := &cobra.Command{
		Use:   "merge --out FILE SHARD.jsonl...",
		Short: "Join the shard files of one run into one results file (refusing files of different experiments)",
		RunE: func(c *cobra.Command, args []string) error {
			if out == "" {
				return usagef("--out is required")
			}
			if len(args) == 0 {
				return usagef("give the shard files to merge")
			}
			rep, err := experiment.Merge(out, args)
			if err != nil {
				return err
			}
			return a.emit(rep, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %d %s records written, %d duplicates skipped\n", rep.Out, rep.Records, rep.Kind, rep.Duplicates)
			})
		},
	}
	merge.Flags().StringVar(&out, "out", "", "merged results file (created, or extended)")

	var dir, title string
	summary := &cobra.Command{
		Use:   "summary --out DIR FILE.jsonl...",
		Short: "Draw the figure and table of results files (any schema version; every record in them)",
		Long: `Summarise attack or verification results files as the experiment commands do — the
length-distribution or verdict figure (PNG, SVG) and the markdown table — from every
record in the files given, including files written by older lenspec versions.`,
		RunE: func(c *cobra.Command, args []string) error {
			if dir == "" {
				return usagef("--out is required")
			}
			if len(args) == 0 {
				return usagef("give the results files to summarise")
			}
			kind := ""
			for _, p := range args {
				k, err := experiment.FileKind(p)
				if err != nil {
					return err
				}
				if kind != "" && k != "" && k != kind {
					return usagef("%s holds %s records, the others %s records", p, k, kind)
				}
				if k != "" {
					kind = k
				}
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if kind == "text-attack" {
				recs, err := readAll(args, experiment.ReadTextAttackRecords)
				if err != nil {
					return err
				}
				sum, err := experiment.SummariseTextAttacks(recs, dir, title)
				if err != nil {
					return err
				}
				return a.emit(sum, func(w io.Writer) { fmt.Fprintf(w, "figure: %s, %s\n\n%s", sum.FigurePNG, sum.FigureSVG, sum.Table) })
			}
			if kind == "verify" {
				recs, err := readAll(args, experiment.ReadVerifyRecords)
				if err != nil {
					return err
				}
				summarise := experiment.SummariseVerify
				if experiment.IsBound(recs) {
					summarise = experiment.SummariseBound
				}
				sum, err := summarise(recs, dir, title)
				if err != nil {
					return err
				}
				return a.emit(sum, func(w io.Writer) { fmt.Fprint(w, sum.Text()) })
			}
			recs, err := readAll(args, experiment.ReadAttackRecords)
			if err != nil {
				return err
			}
			sum, err := experiment.SummariseAttacks(recs, dir, title)
			if err != nil {
				return err
			}
			return a.emit(sum, func(w io.Writer) { fmt.Fprint(w, sum.Text()) })
		},
	}
	summary.Flags().StringVar(&dir, "out", "", "directory for the figure and table")
	summary.Flags().StringVar(&title, "title", "lenspec results", "figure title")
	var allFailed bool
	retry := &cobra.Command{
		Use:   "retry [--all-failed] FILE.jsonl...",
		Short: "Remove crashed (or, with --all-failed, all failed) units from results files so the next run redoes them",
		Long: `A unit that killed its process twice is recorded as crashed instead of being retried
forever; so is one whose machine was killed twice while it ran (a preempted node, a
session's end). retry removes those records and their attempts, so that rerunning
the same command redoes them; --all-failed removes every failed record (a solver
error, say). It refuses a file a run is writing.`,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("give the results files")
			}
			type report struct {
				File    string `json:"file"`
				Removed int    `json:"removed"`
			}
			var reps []report
			for _, p := range args {
				n, err := experiment.Retry(p, allFailed)
				if err != nil {
					return err
				}
				reps = append(reps, report{p, n})
			}
			return a.emit(reps, func(w io.Writer) {
				for _, r := range reps {
					if r.Removed == 0 {
						fmt.Fprintf(w, "%s: nothing to retry\n", r.File)
						continue
					}
					fmt.Fprintf(w, "%s: %d records removed; rerun its command to redo them\n", r.File, r.Removed)
				}
			})
		},
	}
	retry.Flags().BoolVar(&allFailed, "all-failed", false, "remove every failed record, not only crashed ones")
	return group("results", "Merge, summarise and retry results files", merge, summary, retry)
}

func readAll[R any](paths []string, read func(string) ([]R, error)) ([]R, error) {
	var all []R
	for _, p := range paths {
		recs, err := read(p)
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	return all, nil
}
