package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/verify"
	"github.com/spf13/cobra"
)

// runVerify verifies (or bounds) the samples f names, or its spec file's
// problem, printing line(r) with --json and text otherwise per record.
func runVerify(c *cobra.Command, a *app, f *experiment.VerifyFlags, line func(experiment.VerifyRecord) any, text func(io.Writer, experiment.VerifyRecord)) error {
	if f.SpecPath == "" && f.Translator() {
		return f.RunExhaust(c.Context(), a.env(c), !f.Settings.Bound, func(r experiment.ExhaustRecord) error {
			return a.emit(r, func(w io.Writer) { writeExhaust(w, r) })
		})
	}
	if f.SpecPath != "" {
		rec, err := f.Spec(c.Context(), a.env(c))
		if err != nil {
			return err
		}
		return a.emit(line(rec), func(w io.Writer) { text(w, rec) })
	}
	cfg, err := f.Verification(c.Context(), a.env(c))
	if err != nil {
		return err
	}
	progress, finish := a.bars()
	defer finish()
	cfg.Progress = progress
	return experiment.RunVerify(c.Context(), cfg, func(r experiment.VerifyRecord) error {
		return a.emit(line(r), func(w io.Writer) { text(w, r) })
	})
}

// writeExhaust prints a translator's exact search as one line: verify's
// verdict, or bound's longest length and its substitution.
func writeExhaust(w io.Writer, r experiment.ExhaustRecord) {
	if r.Mode == "verify" {
		fmt.Fprintln(w, r.Verdict)
		return
	}
	if s := r.Substitution; s != nil {
		fmt.Fprintf(w, "%d (clean %d): position %d %q → %q\n", r.Length, r.CleanLength, s.Position, s.FromText, s.ToText)
		return
	}
	fmt.Fprintf(w, "%d (clean %d): no substitution\n", r.Length, r.CleanLength)
}

func newVerifyCmd(a *app) *cobra.Command {
	f := &experiment.VerifyFlags{}
	c := &cobra.Command{
		Use:   "verify",
		Short: "Prove that no input within δ makes the output longer than K̂, or find one that does",
		Long: `For each image and radius δ, decide whether some x' in S(x, δ) = {‖x' − x‖∞ ≤ δ} ∩ [min, max]ⁿ
decodes more than K̂ tokens (docs/verification.md). The stages, each given a share of
the time left: a PGD warm start (--attack-steps × --attack-restarts); sound bounds
(--bounds, CROWN by default); where they do not prove, a round of the wide falsifier
(PGD with --search-restarts runs); branch and bound with α,β-CROWN bounds (--bab); the
box MIP around i₀ and the token search; branch and bound resumed, alternating with
further falsifier rounds while the proof is out of reach; the abstracted MIPs; the
exact MIP of the unrolled greedy decoder, solved by CBC in decision mode. --no-mip
keeps the bounds, branch and bound and the falsifier. Every candidate is replayed in
float64. Verdicts: robust (proven, with a margin covering solver tolerances),
vulnerable (a witness that replays in float64 with no tie), unknown (time limit or
doubt). One word per sample on stdout; one JSON line per (image, δ) in --out. A sample
whose solver fails is recorded as unknown with the error, and the run goes on. The
defaults are the library's: experiment.DefaultVerifySettings, that is
experiment.DefaultVerifyOptions (verify.DefaultOptions with CBC and the falsifiers).

On a translator (--sentences, --index, --text, --text-file pick its sentences), the
set is every source with exactly one token substituted (any token but the specials;
no --eps), and the verdict is exact: each candidate is decoded for K̂ + 1 steps (K̂:
--max-len, default the sentence's own output length), vulnerable at the first, in
order of position then token id, whose output is longer (replayed in float64),
robust when none of them is.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runVerify(c, a, f, func(r experiment.VerifyRecord) any { return r },
				func(w io.Writer, r experiment.VerifyRecord) { fmt.Fprintln(w, r.Verdict) })
		},
	}
	f.RegisterFlags(c.Flags(), true)
	f.RegisterTextFlags(c.Flags())
	return c
}

func newBoundCmd(a *app) *cobra.Command {
	f := &experiment.VerifyFlags{}
	c := &cobra.Command{
		Use:   "bound",
		Short: "Certify the worst-case output length: no input within δ decodes more than N tokens",
		Long: `For each image and radius δ, search the largest output length any input of
S(x, δ) can produce. Starting from the image's own length, verify K̂ = the longest
length found so far: a witness (replayed in float64) raises the lower bound to its
length, a proof ends the search (upper = K̂), an unknown moves K̂ up by one. The
answer is certified when lower = upper, an interval [lower, upper] otherwise, and
upper is null when no K̂ up to --max-len was proven. --timeout applies to each K̂
tried. One line per sample on stdout ({"lower":…, "upper":…} with --json); with
--out, one JSON record per (image, δ) and the witnesses, resumable like verify's.

On a translator (--sentences, --index, --text, --text-file pick its sentences), the
bound is exact over every source with exactly one token substituted (any token but
the specials; no --eps, no --max-len): all are decoded, up to --max-steps, and the
longest output is given with its substitution (ties: the lowest position, then the
lowest token id), replayed in float64. With --out, one JSON record per sentence,
appended, with the number of candidates decoded and pruned; a rerun skips the
sentences recorded with the same settings.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			f.Settings.Bound = true
			if f.Out == "" && f.SpecPath == "" {
				// Without --out nothing is kept: the records and witnesses
				// go to a directory removed at the end.
				tmp, err := os.MkdirTemp("", "lenspec-bound-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				f.Out = filepath.Join(tmp, "bound.jsonl")
			}
			return runVerify(c, a, f, func(r experiment.VerifyRecord) any { return r.BoundSummary() },
				func(w io.Writer, r experiment.VerifyRecord) { r.BoundSummary().WriteText(w) })
		},
	}
	f.RegisterFlags(c.Flags(), true)
	f.RegisterTextFlags(c.Flags())
	c.Flags().Lookup("max-len").Usage = fmt.Sprintf("the largest K̂ the search tries, 0..%d", verify.MaxK)
	c.Flags().Lookup("max-len").DefValue = fmt.Sprint(verify.MaxK) // what −1, not given, stands for
	return c
}
