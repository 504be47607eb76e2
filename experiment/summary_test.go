package experiment

import (
	"strings"
	"testing"

	"github.com/lenspec/lenspec/verify"
)

// TestSummariseVerifyStages: the summary counts the stage that decided
// each sample, reports the unknowns' margin bounds, and splits their time
// by stage in the order the stages ran, the rest last.
func TestSummariseVerifyStages(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	recs := []VerifyRecord{
		{Sample: 1, Eps: 0.1, Verdict: "robust", Stage: "bab", Seconds: 3},
		{Sample: 2, Eps: 0.1, Verdict: "robust", Stage: "bounds", Seconds: 1},
		{Sample: 3, Eps: 0.1, Verdict: "robust", Stage: "bab", Seconds: 4},
		{Sample: 4, Eps: 0.1, Verdict: "vulnerable", Stage: "falsify", Seconds: 2},
		{Sample: 5, Eps: 0.1, Verdict: "unknown", Seconds: 60, BoundSeconds: 2, ProvenBound: f(4),
			Phases: []verify.Phase{{Name: "falsify", Seconds: 1}, {Name: "bab", Seconds: 40}, {Name: "falsify", Seconds: 1}, {Name: "tokens", Seconds: 10}}},
		{Sample: 6, Eps: 0.1, Verdict: "unknown", Seconds: 60, BoundSeconds: 4, ProvenBound: f(2),
			Phases: []verify.Phase{{Name: "falsify", Seconds: 4}, {Name: "bab", Seconds: 50}}},
	}
	sum, err := SummariseVerify(recs, t.TempDir(), "t")
	if err != nil {
		t.Fatal(err)
	}
	table := strings.Join(strings.Fields(sum.Table), " ") // the cells, not their padding
	for _, want := range []string{
		// median s, p90 s, max s, unstable ReLUs (none recorded), decided
		// by, the unknowns' margin bounds' median and range
		"| 3.50 | 60.00 | 60.00 | 0 → 0 | bab 2, bounds 1, falsify 1 | 3 (2–4) |",
		"| δ | unknown | bounds | falsify | bab | tokens | warm start, other |",
		// medians: bounds (2, 4), falsify (2, 4), bab (40, 50), tokens
		// (10, absent in the second), rest (6, 2)
		"| 0.1 | 2 | 3.0 | 3.0 | 45.0 | 10.0 | 4.0 |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, sum.Table)
		}
	}
}
