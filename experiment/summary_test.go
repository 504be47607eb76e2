package experiment

import (
	"context"
	"encoding/json"
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

// TestSummariesOneDenominator: in every table, failed units (an error or a
// crash) count only in the failed column, and every count, rate and mean of
// a row is over the units that completed, the rule said under the table.
// 20 images, 2 of them failed, 5 of the other 18 lengthened: 18 images,
// 28 % and a mean over the 18, where the tables used to read 20 images and
// 25 % (5 of 20) beside a mean over 18.
func TestSummariesOneDenominator(t *testing.T) {
	attacks := func(text bool) []AttackRecord {
		var recs []AttackRecord
		for i := range 20 {
			r := AttackRecord{Sample: i, Eps: 0.1, Method: MethodPGD, OrigLength: 3, AdvLength: 3, Stopped: true, MinRelMargin: 0.1, Evals: 10}
			if text {
				r.AttackText, r.Method = &AttackText{}, MethodFlip
			}
			switch {
			case i < 5:
				r.AdvLength, r.Success = 6, true
			case i >= 18:
				r = AttackRecord{Sample: i, Eps: 0.1, Method: r.Method, AttackText: r.AttackText, Error: "the process died 2 times", Crashed: true}
			}
			recs = append(recs, r)
		}
		return recs
	}
	up := func(n int) *int { return &n }
	bound := func(i int) VerifyRecord {
		return VerifyRecord{Sample: i, Eps: 0.1, Settings: VerifySettings{Bound: true}, Verdict: VerdictCertified, Seconds: 1,
			Bound: &BoundResult{Lower: 4, Upper: up(4), Certified: true}}
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		sum  func() (any, error) // a summary, whose JSON has its table
		row  string              // the row's cells, their padding dropped
	}{
		{"attack", func() (any, error) { return SummariseAttacks(attacks(false), dir, "t") }, "| 0.1 | pgd | 18 | 1.278 | 28% | 6 | 0 | 180 | 0 | 2 |"},
		{"text attack", func() (any, error) { return SummariseTextAttacks(attacks(true), dir, "t") }, "| 0.1 | flip | 18 | 10 | 1.28 | 28% | 0 | — | 6 | 0 | 0 | 2 |"},
		{"caption attack", func() (any, error) {
			return SummariseCaptionAttacks(context.Background(), attacks(false), nil, "m", dir, "t", 20)
		}, "| m | 0.1 | pgd | 18 | 27.8% | 1.278 | 6 | 0 (originals 0) | — | 0 | — | 180 | 0 | 2 |"},
		{"verify", func() (any, error) {
			recs := []VerifyRecord{
				{Sample: 1, Eps: 0.1, Verdict: "robust", Stage: "bounds", Seconds: 1},
				{Sample: 2, Eps: 0.1, Verdict: "robust", Stage: "bounds", Seconds: 1},
				{Sample: 3, Eps: 0.1, Verdict: "vulnerable", Stage: "attack", Seconds: 1},
				{Sample: 4, Eps: 0.1, Verdict: "unknown", Seconds: 1},
				{Sample: 5, Eps: 0.1, Verdict: "unknown", Error: "solver error", Seconds: 9},
				{Sample: 6, Eps: 0.1, Verdict: "unknown", Error: "the process died 2 times", Crashed: true},
			}
			return SummariseVerify(recs, dir, "t")
		}, "| 0.1 | 4 | 2 | 1 | 1 | 25% | 1.00 | 1.00 | 1.00 | 0 → 0 | bounds 2, attack 1 | – | 2 |"},
		{"bound", func() (any, error) {
			failed := VerifyRecord{Sample: 3, Eps: 0.1, Settings: VerifySettings{Bound: true}, Verdict: "unknown", Error: "the process died 2 times", Crashed: true}
			if !IsBound([]VerifyRecord{failed, bound(1)}) { // results summary's choice, a failed unit first
				t.Error("a bound run whose first record failed is taken for a verification")
			}
			return SummariseBound([]VerifyRecord{bound(1), failed, bound(2)}, dir, "t")
		}, "| 0.1 | 2 | 2 | 0 | 4 | 4 | 4 | 4 | 1.00 | 1.00 | 1 |"},
	} {
		sum, err := tc.sum()
		var s struct{ Table string }
		if err == nil {
			var b []byte
			b, err = json.Marshal(sum)
			json.Unmarshal(b, &s)
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		table := s.Table
		cells := strings.Join(strings.Fields(table), " ")
		if !strings.Contains(cells, tc.row) || !strings.Contains(table, failedRule) {
			t.Errorf("%s: want the row %q and the rule under the table:\n%s", tc.name, tc.row, table)
		}
	}
}

// TestSummaryEmptyOriginals: a completed unit whose original output is
// empty has no length ratio; the mean is over the others, and the table
// says so.
func TestSummaryEmptyOriginals(t *testing.T) {
	recs := []AttackRecord{
		{Sample: 1, Eps: 0.1, Method: MethodPGD, OrigLength: 2, AdvLength: 3, Stopped: true, MinRelMargin: 0.1},
		{Sample: 2, Eps: 0.1, Method: MethodPGD, OrigLength: 0, AdvLength: 4, Stopped: true, MinRelMargin: 0.1},
	}
	sum, err := SummariseAttacks(recs, t.TempDir(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if r := sum.Rows[0]; r.Samples != 2 || r.MeanRatio != 1.5 || r.NoRatio != 1 || !strings.Contains(sum.Table, "1 completed units have an empty original output") {
		t.Fatalf("row %+v, table:\n%s", r, sum.Table)
	}
}
