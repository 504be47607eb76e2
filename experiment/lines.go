package experiment

import (
	"fmt"
	"io"

	"github.com/lenspec/lenspec/verify"
)

// Line words an attack record as lenspec attack prints it: the original
// and adversarial lengths (marked when the output reached the step cap),
// the verdict, and for a sentence the adversarial source.
func (r AttackRecord) Line() string {
	input := "image"
	if r.IsText() {
		input = "sentence"
	}
	what := fmt.Sprintf("%s %d eps %g %s", input, r.Sample, r.Eps, r.Method)
	if r.Error != "" {
		return fmt.Sprintf("%s: FAILED: %s", what, r.Error)
	}
	adv, verdict := fmt.Sprint(r.AdvLength), "not lengthened"
	if !r.Stopped {
		adv = fmt.Sprintf("≥%d (no eos)", r.AdvLength)
	}
	if r.Success {
		verdict = "LENGTHENED"
	}
	if !r.IsText() {
		return fmt.Sprintf("%s: length %d → %s (K̂ %d) %s, margin %.2g, %d evals, %.1fs", what, r.OrigLength, adv, r.K, verdict, r.MinRelMargin, r.Evals, r.Seconds)
	}
	src := r.AdvText
	switch {
	case r.Redacted && r.AdvSubs != nil:
		src = "(" + r.RedactedSource() + "; positions and ids in the record)"
	case src == "":
		src = "(embeddings: " + r.Witness + ")"
	}
	return fmt.Sprintf("%s: length %d → %s (K̂ %d) %s, %d evals, %.1fs: %q", what, r.OrigLength, adv, r.K, verdict, r.Evals, r.Seconds, src)
}

// BoundSummary is a worst-case length search's answer for one sample and
// radius, without the rest of its record: what lenspec bound prints.
type BoundSummary struct {
	Sample    int                `json:"sample"`
	Eps       float64            `json:"eps"`
	Lower     int                `json:"lower"`
	Upper     *int               `json:"upper"`
	Certified bool               `json:"certified"`
	Witness   string             `json:"witness,omitempty"`
	Seconds   float64            `json:"seconds"`
	Steps     []verify.BoundStep `json:"steps"`
	Error     string             `json:"error,omitempty"`
	verdict   string
}

// BoundSummary is r's search answer (zero bounds for a record without
// one: a failed sample).
func (r VerifyRecord) BoundSummary() BoundSummary {
	out := BoundSummary{Sample: r.Sample, Eps: r.Eps, Witness: r.Witness, Seconds: r.Seconds, Error: r.Error, verdict: r.Verdict}
	if b := r.Bound; b != nil {
		out.Lower, out.Upper, out.Certified, out.Steps = b.Lower, b.Upper, b.Certified, b.Steps
	}
	return out
}

// WriteText writes the answer as one line: the verdict and the bracket,
// "unproven" for an upper bound no K̂ tried proved.
func (b BoundSummary) WriteText(w io.Writer) {
	up := "unproven"
	if b.Upper != nil {
		up = fmt.Sprint(*b.Upper)
	}
	fmt.Fprintf(w, "sample %d eps %g: %s lower %d upper %s\n", b.Sample, b.Eps, b.verdict, b.Lower, up)
}
