package experiment

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/lenspec/lenspec/train"
)

// WriteText writes the evaluation as lenspec eval prints it, on one
// line.
func (e *CaptionerEval) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s on %s (%d samples): sequence accuracy %.4f; longest output on train %d (unstopped %d); lengths %v\n",
		e.Model, e.Split, e.Samples, e.SequenceAccuracy, e.MaxLenTrain, e.UnstoppedTrain, e.LengthHistogram)
}

// WriteText writes the report as lenspec results merge prints it, on one
// line.
func (r *MergeReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s: %d %s records written, %d duplicates skipped", r.Out, r.Records, r.Kind, r.Duplicates)
	if r.Resolved > 0 {
		fmt.Fprintf(w, ", %d conflicts resolved by --on-conflict best (%d records replaced)", r.Resolved, r.Replaced)
	}
	fmt.Fprintln(w)
}

// Retried is what Retry removed from one results file.
type Retried struct {
	File    string `json:"file"`
	Removed int    `json:"removed"`
}

// RetryReport is what RetryFiles removed, file by file.
type RetryReport []Retried

// RetryFiles is Retry on each of paths in turn, stopping at the first
// that fails.
func RetryFiles(paths []string, all bool) (RetryReport, error) {
	var rep RetryReport
	for _, p := range paths {
		n, err := Retry(p, all)
		if err != nil {
			return nil, err
		}
		rep = append(rep, Retried{p, n})
	}
	return rep, nil
}

// WriteText writes a line per file: how many records were removed, and
// that rerunning redoes them.
func (rep RetryReport) WriteText(w io.Writer) {
	for _, r := range rep {
		if r.Removed == 0 {
			fmt.Fprintf(w, "%s: nothing to retry\n", r.File)
			continue
		}
		fmt.Fprintf(w, "%s: %d records removed; rerun its command to redo them\n", r.File, r.Removed)
	}
}

// CaptionerSummary is what lenspec train captioner reports of the model
// it trained: its test sequence accuracy, its longest outputs on the
// training set, and the verifier's count after the last epoch (Probe,
// with --certify-images).
type CaptionerSummary struct {
	Out              string        `json:"out"`
	Seed             uint64        `json:"seed"`
	Epochs           int           `json:"epochs"`
	Seconds          float64       `json:"seconds"`
	FinalLoss        float64       `json:"final_loss"`
	SequenceAccuracy float64       `json:"sequence_accuracy"`
	MaxLenTrain      int           `json:"max_len_train"`
	UnstoppedTrain   int           `json:"unstopped_train"`
	Probe            *CertifyCount `json:"probe,omitempty"`
}

// SummariseCaptioner is the summary of run's result res.
func SummariseCaptioner(run train.CaptionerRun, res train.CaptionerResult) CaptionerSummary {
	s := CaptionerSummary{run.Out, run.Seed, run.Epochs, res.Seconds, res.Loss, res.Test.SequenceAccuracy, res.Train.MaxLen, res.Train.Unstopped, nil}
	if p, ok := res.Probe.(CertifyCount); ok {
		s.Probe = &p
	}
	return s
}

// WriteText writes the summary as one line.
func (s CaptionerSummary) WriteText(w io.Writer) {
	fmt.Fprintf(w, "trained %s in %.0fs: test sequence accuracy %.4f, longest train output %d (unstopped %d)",
		s.Out, s.Seconds, s.SequenceAccuracy, s.MaxLenTrain, s.UnstoppedTrain)
	if s.Probe != nil {
		fmt.Fprintf(w, "; %s", s.Probe)
	}
	fmt.Fprintln(w)
}

// CaptionPreviewReport is what lenspec data captions reports: the
// previews written, and the split's caption-length histogram
// (LengthHistogram[l] canvases with l words) of its N canvases, which
// its text shows with Histogram.
type CaptionPreviewReport struct {
	Items           []CaptionPreview `json:"items"`
	LengthHistogram []int            `json:"length_histogram"`
	Split           string           `json:"-"`
	N               int              `json:"-"`
	Histogram       bool             `json:"-"`
}

// WriteText writes a line per preview, its caption and the model's, and
// with Histogram the histogram as bars of at most 80 characters.
func (r CaptionPreviewReport) WriteText(w io.Writer) {
	for _, it := range r.Items {
		fmt.Fprintf(w, "%s  %q", it.Preview, it.Caption)
		if it.Output != "" {
			fmt.Fprintf(w, "  model: %q", it.Output)
		}
		fmt.Fprintln(w)
	}
	if !r.Histogram {
		return
	}
	fmt.Fprintf(w, "caption lengths of the %s split (%d canvases):\n", r.Split, r.N)
	for l, k := range r.LengthHistogram {
		if k > 0 {
			fmt.Fprintf(w, "%3d words %6d  %s\n", l, k, strings.Repeat("#", int(math.Ceil(80*float64(k)/float64(r.N)))))
		}
	}
}
