package main

import (
	"errors"
	"fmt"

	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/nmt"
	"github.com/spf13/cobra"
)

func newTranslateCmd(a *app) *cobra.Command {
	var modelDir string
	var maxSteps, batch int
	c := &cobra.Command{
		Use:   "translate [TEXT...]",
		Short: "Translate text with a translator model (arguments, or one text per line on stdin)",
		Long: `Translate each argument, or, without arguments, every line of standard input
as it arrives (one translation per line, in order), greedily with the float32
model. Lines that arrive together (a file, a paste) are translated together,
up to --batch at a time, but no line waits more than 20 ms for others: a line
written alone to a pipe is answered before the next one comes. A line break
in an output (byte tokens <0x0A>, <0x0D>) is printed as a space, so that
output line n is always input n's translation. --json prints one JSON object
per text instead, with its line (stdin) or argument number, the source text
and ids, and the output's exact text, tokens, ids, length and whether it
stopped within the step cap.

A blank text (empty, or white space alone) gives an empty line without
running the model. A text that is not valid UTF-8 is translated (its invalid
bytes read as byte tokens) with a warning on stderr naming its line or
argument (with --json, "invalid_utf8": true in its object). Control
characters other than white space (NUL, ESC, DEL, the C1 controls) are not
text: each is read as a space, as the training corpora read them, with a
warning naming the line or argument (with --json, "control_chars": true), so
a line of NUL bytes gives an empty line without running the model. In both
cases the exit status stays 0. A text the model cannot read (more source tokens than its
max_source_len, or a stdin line over 16 MiB) is reported on stderr by its
line or argument number, and its place in the output is an empty line (with
--json, an object with an "error" field); every other text is translated as
it would be alone. The exit status is then 1, after all the input has been
read and translated. See docs/models.md, "The translator's tokenizer".

Output that cannot be written (a full disk, a closed pipe, a FIFO whose
reader is gone) stops translate with exit 1. SIGINT or SIGTERM stops it at
once if it is waiting for input, or within a decoding step, whatever
--batch: it writes the lines it finished before the first it did not (in
order, as always), says on stderr which lines it translated, and exits 130
or 143. Nothing is saved but the output written.`,
		RunE: func(c *cobra.Command, args []string) error {
			if modelDir == "" {
				return usagef("--model is required")
			}
			if err := experiment.CheckMaxSteps(maxSteps, c.Flags().Changed("max-steps")); err != nil {
				return err
			}
			if batch < 1 || batch > 1<<20 {
				return usagef("--batch %d must be in 1..%d", batch, 1<<20)
			}
			d, err := model.Load[float32](modelDir)
			if err != nil {
				return err
			}
			if d.Config().Tokenizer == nil {
				return usagef("%s is a %s, which does not read text", modelDir, d.Config().Architecture)
			}
			out := &nmt.Output{W: a.stdout, JSON: a.jsonOut, Stdin: len(args) == 0, Warn: func(msg string) { fmt.Fprintf(a.stderr, "lenspec: %s\n", msg) }}
			if out.Stdin {
				if err = nmt.TranslateLines(c.Context(), d, c.InOrStdin(), batch, maxSteps, out.Write); errors.As(err, new(*nmt.ReadError)) {
					err = fmt.Errorf("stdin %w", err)
				}
			} else {
				err = nmt.TranslateTexts(c.Context(), d, args, maxSteps, out.Write)
			}
			if c.Context().Err() != nil {
				return interruptedError{out.Progress()}
			}
			if err != nil {
				return err
			}
			if out.Failed > 0 {
				return reportedError{fmt.Errorf("translate: %d of %d texts not translated", out.Failed, out.Done)}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&modelDir, "model", "", "model directory (a translator)")
	experiment.RegisterMaxSteps(f, &maxSteps)
	f.IntVar(&batch, "batch", 1024, "most lines of stdin translated together (those that arrive within 20 ms of each other)")
	return c
}
