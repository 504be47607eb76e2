package nmt

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes the evaluation as lenspec eval prints it: BLEU next
// to the baseline, the output lengths on the split and on dev, and the
// examples as a Markdown table, which pastes into a report as it is.
func (ev *Evaluation) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s on %s (%d sentences): %s; dictionary baseline BLEU %.2f\n", ev.Model, ev.Split, ev.Samples, ev.Score, ev.BaselineBLEU)
	fmt.Fprintf(w, "%s: longest greedy output %d tokens, %d unstopped, largest output/source ratio %.2f, %d outputs over 3× their source\n", ev.Split, ev.MaxLen, ev.Unstopped, ev.MaxRatio, ev.OverRatio3)
	fmt.Fprintf(w, "dev: longest greedy output %d tokens, %d of %d unstopped\n", ev.MaxLenDev, ev.UnstoppedDev, ev.DevSamples)
	if len(ev.Examples) == 0 {
		return
	}
	fmt.Fprintf(w, "\n| # | source | reference | output |\n|---|---|---|---|\n")
	cell := strings.NewReplacer("|", "\\|", "\n", " ")
	for i, e := range ev.Examples {
		fmt.Fprintf(w, "| %d | %s | %s | %s |\n", i+1, cell.Replace(e.Source), cell.Replace(e.Reference), cell.Replace(e.Output))
	}
}

// Summary is what lenspec train nmt reports of the model it trained:
// where it went, how long it took, its test BLEU next to the baseline's
// and its outputs' lengths on the dev split.
type Summary struct {
	Out          string  `json:"out"`
	Seconds      float64 `json:"seconds"`
	FinalLoss    float64 `json:"final_loss"`
	BLEU         float64 `json:"bleu"`
	BaselineBLEU float64 `json:"baseline_bleu"`
	MaxLenDev    int     `json:"max_len_dev"`
	UnstoppedDev int     `json:"unstopped_dev"`
}

// Summary is r's summary, the model written to out.
func (r *Result) Summary(out string) Summary {
	return Summary{out, r.Seconds, r.FinalLoss, r.BLEU, r.BaselineBLEU, r.MaxLenDev, r.UnstoppedDev}
}

// WriteText writes the summary as one line.
func (s Summary) WriteText(w io.Writer) {
	fmt.Fprintf(w, "trained %s in %.0fs: test BLEU %.2f (dictionary baseline %.2f); dev: longest output %d tokens, %d unstopped\n",
		s.Out, s.Seconds, s.BLEU, s.BaselineBLEU, s.MaxLenDev, s.UnstoppedDev)
}
