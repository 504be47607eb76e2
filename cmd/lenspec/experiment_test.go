package main

import (
	"os"
	"strings"
	"testing"
)

func TestSummariseAttacks(t *testing.T) {
	dir := t.TempDir()
	var recs []attackRecord
	for img := 0; img < 4; img++ {
		for _, m := range []string{"random", "pgd"} {
			r := attackRecord{Image: img, Eps: 0.1, Method: m, OrigLength: 2, AdvLength: 2, Stopped: true, MinRelMargin: 0.1, Evals: 10}
			if m == "pgd" && img < 2 { // two successes, one of them a tie
				r.AdvLength = 4
				if img == 1 {
					r.MinRelMargin = 1e-9
				}
			}
			recs = append(recs, r)
		}
	}
	sum, err := summariseAttacks(recs, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{sum.FigurePNG, sum.FigureSVG, sum.TableFile} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	var pgd summaryRow
	for _, r := range sum.Rows {
		if r.Method == "pgd" {
			pgd = r
		}
	}
	// Success counts only the untied lengthening: 1 of 4; the mean ratio
	// uses replayed lengths: (2+2+1+1)/4.
	if pgd.SuccessRate != 0.25 || pgd.Longest != 4 || pgd.Ties != 1 || pgd.MeanRatio != 1.5 || pgd.Evals != 40 {
		t.Fatalf("pgd row %+v", pgd)
	}
	if _, err := summariseAttacks(nil, dir); err == nil {
		t.Fatal("empty records accepted")
	}
}

func TestSummariseVerify(t *testing.T) {
	dir := t.TempDir()
	recs := []verifyRecord{
		{Image: 0, Eps: 0.01, Verdict: "robust", Seconds: 1},
		{Image: 1, Eps: 0.01, Verdict: "unknown", Seconds: 60, Binaries: 100, ReLUBinaries: 80},
		{Image: 0, Eps: 0.5, Verdict: "vulnerable", Seconds: 2},
		{Image: 1, Eps: 0.5, Verdict: "vulnerable", Seconds: 3},
	}
	sum, err := summariseVerify(recs, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{sum.FigurePNG, sum.FigureSVG, sum.TableFile} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(sum.Table), "\n")
	cells := func(line string) []string {
		var out []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			out = append(out, strings.TrimSpace(c))
		}
		return out
	}
	if len(lines) != 4 {
		t.Fatalf("table:\n%s", sum.Table)
	}
	// δ, samples, robust, vulnerable, unknown, unknown %, …
	if got := cells(lines[2])[:6]; strings.Join(got, " ") != "0.01 2 1 0 1 50%" {
		t.Fatalf("row δ=0.01: %v", got)
	}
	if got := cells(lines[3])[:6]; strings.Join(got, " ") != "0.5 2 0 2 0 0%" {
		t.Fatalf("row δ=0.5: %v", got)
	}
}
