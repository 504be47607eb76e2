package main

import (
	"fmt"
	"io"

	"github.com/lenspec/lenspec/experiment"
	"github.com/spf13/cobra"
)

func newResultsCmd(a *app) *cobra.Command {
	return group("results", "Merge, summarise and retry results files", newMergeCmd(a), newSummaryCmd(a), newRetryCmd(a))
}

func newMergeCmd(a *app) *cobra.Command {
	var out string
	var opt experiment.JoinOptions
	merge := &cobra.Command{
		Use:   "merge --out FILE SHARD.jsonl...",
		Short: "Join the shard files of one run into one results file (refusing other experiments and conflicting records)",
		Long: `Join the shard files of one run into --out (created, or extended), each unit once.

Files of different experiments (another model, data set or settings; settings
compared per method, and for text attacks per method and δ) are refused, naming
the file that mixes two, or the two files, and what differs. Records of one unit
(one key) are copies when they agree on everything but what differs between two
runs of it — the model's path, timings, witness and MPS paths, an error's
wording, and for verification how the verdict was reached (stage, bounds,
margins, counts, phases, the witness found): one copy is kept. Records of one
unit that disagree on anything else (a verdict, a replayed length, whether it
failed) are refused naming the unit, both files and the fields; with
--on-conflict best the better is kept instead: no error over an error, a
decided verdict over unknown (then the tighter worst-case length bracket), a
success over none, then the longer replayed output, then the larger margin,
the rest decided by the records' content, never by the order of the files.
Records that contradict each other (robust against vulnerable, a witnessed
length above a proven bound, attacks on different inputs) are refused even
then. Exit status 1 for a refusal, 2 for a usage error.`,
		RunE: func(c *cobra.Command, args []string) error {
			if out == "" {
				return usagef("--out is required")
			}
			if len(args) == 0 {
				return usagef("give the shard files to merge")
			}
			if err := opt.ValidateFlags(); err != nil {
				return err
			}
			rep, err := experiment.Merge(out, args, opt)
			if err != nil {
				return err
			}
			return a.emit(rep, rep.WriteText)
		},
	}
	merge.Flags().StringVar(&out, "out", "", "merged results file (created, or extended)")
	opt.RegisterFlags(merge.Flags(), "see above")
	return merge
}

func newSummaryCmd(a *app) *cobra.Command {
	var dir, title string
	var opt experiment.JoinOptions
	summary := &cobra.Command{
		Use:   "summary --out DIR FILE.jsonl...",
		Short: "Draw the figure and table of one experiment's results files (any schema version)",
		Long: `Summarise attack or verification results files as the experiment commands do — the
length-distribution or verdict figure (PNG, SVG) and the markdown table — from the
records in the files given, including files written by older lenspec versions.

The files are joined as lenspec results merge joins them: one experiment per table
(files of another model, data set or settings are refused, naming what differs), each
unit once (a file given twice, or shards given beside their merge, count once), and
records of one unit that disagree refused unless --on-conflict best chooses. Units
that failed (an error or a crash) count only in a "failed" column: every other
count, rate, mean and time of a row is over the units that completed, as a line
under the table says.`,
		RunE: func(c *cobra.Command, args []string) error {
			if dir == "" {
				return usagef("--out is required")
			}
			if len(args) == 0 {
				return usagef("give the results files to summarise")
			}
			if err := opt.ValidateFlags(); err != nil {
				return err
			}
			sum, err := experiment.SummariseFiles(args, dir, title, opt)
			if err != nil {
				return err
			}
			return a.emit(sum, func(w io.Writer) { fmt.Fprint(w, sum.Text()) })
		},
	}
	summary.Flags().StringVar(&dir, "out", "", "directory for the figure and table")
	summary.Flags().StringVar(&title, "title", "lenspec results", "figure title")
	opt.RegisterFlags(summary.Flags(), "see lenspec results merge --help")
	return summary
}

func newRetryCmd(a *app) *cobra.Command {
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
			rep, err := experiment.RetryFiles(args, allFailed)
			if err != nil {
				return err
			}
			return a.emit(rep, rep.WriteText)
		},
	}
	retry.Flags().BoolVar(&allFailed, "all-failed", false, "remove every failed record, not only crashed ones")
	return retry
}
