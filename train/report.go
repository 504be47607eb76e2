package train

import (
	"fmt"
	"io"
)

// Status is a captioner training step's progress line: the epoch and
// loss, and what the regularisers measure (unstable ReLUs, certified
// images of the batch) when o turns them on.
func (o Options) Status(p Progress) string {
	msg := fmt.Sprintf("epoch %d/%d loss %.3f", p.Epoch, p.Epochs, p.Loss)
	if o.Stability > 0 {
		msg += fmt.Sprintf(" unstable %d", p.Unstable)
	}
	if o.IBP > 0 {
		over := string(o.bound())
		if o.SABR > 0 {
			// The count is the small boxes', not the balls': say so.
			over += fmt.Sprintf(", SABR boxes of %g·ε", o.SABR)
		}
		msg += fmt.Sprintf(" certified %d/%d (%s)", p.Certified, o.BatchSize, over)
	}
	return msg
}

// ShowTellSummary is what lenspec train showtell reports of the model it
// trained: its exact captions and BLEU-4 on the test split and its
// outputs' lengths there. Its fields are in the order of their JSON
// names, the order in which a map of them was printed before.
type ShowTellSummary struct {
	BLEU          string  `json:"bleu"`
	Out           string  `json:"out"`
	Seconds       float64 `json:"seconds"`
	TestBLEU4     float64 `json:"test_bleu4"`
	TestAccuracy  float64 `json:"test_exact_caption_accuracy"`
	TestMaxLen    int     `json:"test_max_len"`
	TestUnstopped int     `json:"test_unstopped"`
}

// Summary is r's summary, the model written to out.
func (r ShowTellResult) Summary(out string) ShowTellSummary {
	return ShowTellSummary{r.BLEU.String(), out, r.Seconds, r.BLEU.BLEU, r.Eval.SequenceAccuracy, r.Eval.MaxLen, r.Eval.Unstopped}
}

// WriteText writes the summary as one line.
func (s ShowTellSummary) WriteText(w io.Writer) {
	fmt.Fprintf(w, "trained %s in %.0fs (this run): test exact-caption accuracy %.4f, %s; longest test output %d (unstopped %d)\n",
		s.Out, s.Seconds, s.TestAccuracy, s.BLEU, s.TestMaxLen, s.TestUnstopped)
}
