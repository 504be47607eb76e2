package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/lenspec/lenspec/experiment"
	"github.com/spf13/cobra"
)

func newResultsCmd(a *app) *cobra.Command {
	return group("results", "Merge, summarise, retry, check and rerun results files", newMergeCmd(a), newSummaryCmd(a), newRetryCmd(a), newCheckCmd(a), newRerunCmd(a))
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

func newCheckCmd(a *app) *cobra.Command {
	var opt experiment.CheckOptions
	check := &cobra.Command{
		Use:   "check [--witnesses DIR] [--model-dir DIR] [--rederive DIR] FILE.jsonl...",
		Short: "Replay every witness results files name and confirm the claimed lengths and verdicts",
		Long: `For every record of the results files that claims something a witness shows —
an attack's adversarial input and its replayed output, a vulnerable verdict, a
worst-case length search's witnessed lower bound — find the witness file, check
that it lies in the record's perturbation set (exactly, in float64: the L∞
ball around the clean input, within the input range), decode it greedily in
float64 through the model the record names by its sha256, and compare the
output with the record's: its tokens and length, and for a vulnerable verdict
more than K̂ tokens within the first K̂ + 1 steps with no tie. The smallest
relative top-2 logit margin of each replay is reported; one below 1e-6 is a
tie (the "ties" column).

A witness is looked for at the path the record gives (as given, or relative to
the results file), in STEM.witnesses/ or the archive STEM.witnesses.tar.gz
beside a results file STEM.jsonl, and in each --witnesses DIR (and its
STEM.witnesses/), by the record's file name or its key. The model is the one
of the record's sha256 at the record's path or among --model-dir (model
directories or directories of them; default models). With --rederive DIR, a
vulnerable verdict whose witness is missing is verified again with its own
recorded model, data and settings, into DIR/STEM.jsonl with its witnesses in
DIR/STEM.witnesses/, which the check then replays (scripts/ship-witnesses.sh
packs them beside the file); a rerun that finds no witness says how it ended.
Attack records and worst-case length searches are not rerun.

Robust verdicts and proven worst-case lengths are proofs, which no witness
shows: they are counted as "proofs" and re-derived only by rerunning lenspec
verify. Text attacks' records are counted as not replayable.

The table has a row per file: claims, agree, disagree, not replayable (with the
reasons below it), proofs and ties; --json prints every record's outcome.
Exit status 0 when no record disagrees, 1 when one does (or a file cannot be
read), 2 for a usage error.`,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("give the results files to check")
			}
			src, err := a.sources()
			if err != nil {
				return err
			}
			opt.Logf = a.logf
			rep, err := experiment.CheckRecords(c.Context(), src, args, opt)
			if err != nil {
				return err
			}
			if err := a.emit(rep, rep.WriteText); err != nil {
				return err
			}
			if n := rep.Disagreements(); n > 0 {
				return fmt.Errorf("%d records disagree with their witnesses' replay", n)
			}
			return nil
		},
	}
	check.Flags().StringArrayVar(&opt.Witnesses, "witnesses", nil, "a directory of witness files (repeatable)")
	check.Flags().StringArrayVar(&opt.ModelDirs, "model-dir", nil, "a model directory, or a directory of them, to find records' models in by sha256 (repeatable; default models)")
	check.Flags().StringVar(&opt.Rederive, "rederive", "", "directory where vulnerable verdicts' missing witnesses are made again by rerunning their units with their recorded settings")
	return check
}

func newRerunCmd(a *app) *cobra.Command {
	opt := experiment.DefaultRerunOptions()
	rerun := &cobra.Command{
		Use:   "rerun [--samples N] [--budget SECONDS] [--model-dir DIR] [--out DIR] FILE.jsonl...",
		Short: "Verify a stratified sample of recorded verdicts again and report any that flip",
		Long: `Verify again --samples records of verification results files (verify's or
bound's records), each with its record's own model (found by its sha256, as
results check finds it), data and settings (everything the record's key
holds), through the same library call verify makes, and compare: per sample
the recorded and the new verdict, the recorded and the new bound (a
verification's proven bound on the max-min margin, a worst-case length
search's proven length and its witnessed length) and the time; then the
summary: samples rerun, every verdict flip, the samples decided differently,
the largest bound difference (absolute, and relative to the larger of the
two; among samples decided both times, and among all: an unknown's bound is
where its time limit stopped it), and the time recorded against the time now.

A flip is robust against vulnerable (for a worst-case length search,
brackets [lower, upper] that do not meet): one of the two runs is unsound.
Unknown against robust or vulnerable (open against certified) is reported
apart as "decided differently", not as a flip: a time limit decides those,
and the machine's speed and load move them.

The choice is deterministic: records that claim a verdict (no error), each
key once, are grouped by file and recorded verdict (robust, vulnerable,
unknown, certified, open), each group ordered by recorded time, shortest
first; rounds take the next record of every group in turn, the group whose
next record is shortest first, until N are chosen. Their recorded time stays
within --budget seconds (0: no cap), and there are as many as it allows: a
record is taken only if as many records can still be chosen with it as
without it, and after the first round only if it takes at most an equal
share of the budget left. So every group's shortest record comes first, the
long ones (unknowns, which ran to their time limit) only while they leave
room, and the short groups fill the rest. The rerun takes about the chosen
records' recorded time (printed first) on a machine like the one that made
them.

The rerun's records go to a temporary directory, removed at the end; with
--out DIR they are kept in DIR/STEM.jsonl (witnesses in DIR/STEM.witnesses/)
and a rerun into the same DIR resumes from them, so give a fresh DIR after
changing the code. Progress is on stderr.

A file that does not hold verification records, a record of schema 0 (its
settings were not all recorded), one whose clean input is the user's own
file, one whose model is not found or whose data set cannot be read is
refused before any rerun, in one line naming the file and record.
Exit status 0 when no verdict flips and every rerun completes (samples
decided differently included), 1 on a flip, a failed rerun or a refused
file, 2 for a usage error, 130/143 interrupted (the rows finished are
printed; with --out, rerunning resumes).`,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("give the verification results files to rerun")
			}
			if err := opt.Validate(); err != nil {
				return err
			}
			src, err := a.sources()
			if err != nil {
				return err
			}
			progress, finish := a.bars()
			opt.Logf, opt.Progress = a.logf, progress
			rep, err := experiment.RerunRecords(c.Context(), src, args, opt)
			finish()
			if rep != nil {
				if werr := a.emit(rep, rep.WriteText); werr != nil {
					return werr
				}
			}
			switch {
			case rep != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
				return interruptedError{fmt.Sprintf("%d of %d samples rerun, %d flips among them", len(rep.Rows), rep.Chosen, rep.Flips)}
			case err != nil:
				return err
			case rep.Problems() > 0:
				return fmt.Errorf("%d verdict flips, %d failed reruns", rep.Flips, rep.Failed)
			}
			return nil
		},
	}
	opt.RegisterFlags(rerun.Flags())
	return rerun
}
