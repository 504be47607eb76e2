package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/model"
)

// rerunTestOptions rerun records of testData's samples against the
// models in dirs.
func rerunTestOptions(n int, dirs ...string) RerunOptions {
	return RerunOptions{Samples: n, ModelDirs: dirs, data: func(DataRef, model.InputSpec) (Data, error) { return testData(20), nil }}
}

// rerunFixture verifies testData's samples 0..4 at δ 0.01 and 1 with K̂ 1
// on a tiny model into DIR/v.jsonl (robust verdicts at the small radius,
// vulnerable ones the warm start finds at the large), and bounds the
// worst-case length of samples 0..2 at δ 0.01 into DIR/b.jsonl; it returns
// the model's directory, DIR and the records of both files.
func rerunFixture(t *testing.T) (mdir, dir string, ver, bnd []VerifyRecord) {
	t.Helper()
	mdir = tinyModelDir(t, 6)
	m := loadModel(t, mdir)
	dir = t.TempDir()
	run := func(name string, samples []int, eps []float64, bound bool) []VerifyRecord {
		out := filepath.Join(dir, name)
		c := verifyConfig(m, out, samples)
		c.Eps, c.Settings.MaxLen, c.Settings.AttackSteps, c.Settings.Solver, c.Settings.BaB, c.Settings.Bound = eps, 1, 50, SolverNone, false, bound
		if bound {
			c.Settings.MaxLen = 3
		}
		if err := RunVerify(context.Background(), c, nil); err != nil {
			t.Fatal(err)
		}
		rs, err := ReadVerifyRecords(out)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	ver = run("v.jsonl", []int{0, 1, 2, 3, 4}, []float64{0.01, 1}, false)
	bnd = run("b.jsonl", []int{0, 1, 2}, []float64{0.01}, true)
	for _, v := range []string{"robust", "vulnerable"} {
		if !slices.ContainsFunc(ver, func(r VerifyRecord) bool { return r.Verdict == v }) {
			t.Fatalf("test set-up: no %s verdict among %d records", v, len(ver))
		}
	}
	if !slices.ContainsFunc(bnd, func(r VerifyRecord) bool { return r.Bound != nil && r.Bound.Upper != nil }) {
		t.Fatal("test set-up: no proven worst-case length")
	}
	return mdir, dir, ver, bnd
}

// TestRerunRecords: records rerun as they were made agree (no flip, no
// bound difference); a record whose verdict is edited to the opposite is
// a flip, one edited to unknown is decided differently, and so is a
// worst-case length edited to open; a proven length edited below the
// witnessed one is a flip.
func TestRerunRecords(t *testing.T) {
	mdir, dir, ver, bnd := rerunFixture(t)
	idx := func(rs []VerifyRecord, v string) int {
		return slices.IndexFunc(rs, func(r VerifyRecord) bool { return r.Verdict == v })
	}
	rob, vul := idx(ver, "robust"), idx(ver, "vulnerable")
	cert := slices.IndexFunc(bnd, func(r VerifyRecord) bool { return r.Bound.Upper != nil })
	edit := func(rs []VerifyRecord, i int, f func(*VerifyRecord)) []VerifyRecord {
		rs = slices.Clone(rs)
		r := rs[i]
		f(&r)
		rs[i] = r
		return rs
	}
	for _, tc := range []struct {
		name             string
		recs             []VerifyRecord
		flips, decided   int
		outcome          string // of the edited record (record 1 + at)
		at               int
		flipPart, reason string
	}{
		{name: "as recorded", recs: ver},
		{name: "robust edited to vulnerable", recs: edit(ver, rob, func(r *VerifyRecord) { r.Verdict = "vulnerable" }), flips: 1, outcome: RerunFlip, at: rob, flipPart: "vulnerable recorded, robust now"},
		{name: "vulnerable edited to robust", recs: edit(ver, vul, func(r *VerifyRecord) { r.Verdict = "robust" }), flips: 1, outcome: RerunFlip, at: vul, flipPart: "robust recorded, vulnerable now"},
		{name: "robust edited to unknown", recs: edit(ver, rob, func(r *VerifyRecord) { r.Verdict = "unknown" }), decided: 1, outcome: RerunDecidedDifferently, at: rob},
		{name: "bounds as recorded", recs: bnd},
		{name: "certified length edited to open", recs: edit(bnd, cert, func(r *VerifyRecord) {
			b := *r.Bound
			up := *b.Upper + 1
			r.Bound, r.Verdict = &BoundResult{Lower: b.Lower, Upper: &up}, VerdictOpen
		}), decided: 1, outcome: RerunDecidedDifferently, at: cert},
		{name: "proven length edited below the witnessed one", recs: edit(bnd, cert, func(r *VerifyRecord) {
			b := *r.Bound
			up := b.Lower - 1
			r.Bound = &BoundResult{Lower: up, Upper: &up}
		}), flips: 1, outcome: RerunFlip, at: cert, flipPart: "worst-case length in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeRecords(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl", tc.recs...)
			rep, err := RerunRecords(context.Background(), Sources{}, []string{p}, rerunTestOptions(100, mdir))
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Rows) != len(tc.recs) || rep.Flips != tc.flips || rep.DecidedDiff != tc.decided || rep.Failed != 0 || (rep.Problems() > 0) != (tc.flips > 0) {
				t.Fatalf("%d rows of %d records, %d flips, %d decided differently, %d failed: %+v", len(rep.Rows), len(tc.recs), rep.Flips, rep.DecidedDiff, rep.Failed, rep.Rows)
			}
			for _, r := range rep.Rows {
				want := RerunSame
				if tc.outcome != "" && r.Record == tc.at+1 {
					want = tc.outcome
				}
				if r.Outcome != want {
					t.Errorf("record %d: %s (%s → %s), want %s", r.Record, r.Outcome, r.Old, r.New, want)
				}
			}
			// Bounds proven again are the recorded ones; verify's verdicts
			// here need none (bounds or the warm start decide them).
			if tc.flips == 0 && tc.decided == 0 && (rep.MaxAbs != nil && (rep.MaxAbs.Value != 0 || rep.MaxRel.Value != 0) || tc.name == "bounds as recorded" && rep.MaxAbs == nil) {
				t.Errorf("bound difference %+v %+v, want 0", rep.MaxAbs, rep.MaxRel)
			}
			var text strings.Builder
			rep.WriteText(&text)
			if !strings.Contains(text.String(), fmt.Sprintf("verdict flips: %d\n", tc.flips)) || !strings.Contains(text.String(), tc.flipPart) {
				t.Errorf("report:\n%s", text.String())
			}
		})
	}
}

// TestRerunRefuses: a file of attack records, an empty or missing file, a
// record of a model that is not found, a schema-0 record and one of the
// user's own input are refused before any rerun, in one line naming the
// file (and record).
func TestRerunRefuses(t *testing.T) {
	mdir, dir, ver, _ := rerunFixture(t)
	with := func(f func(*VerifyRecord)) VerifyRecord {
		r := ver[1]
		f(&r)
		return r
	}
	attacks := writeRecords(t, dir, "attacks.jsonl", attackRec(1, 2))
	for _, tc := range []struct {
		name, path, want string
	}{
		{"attack records", attacks, attacks + ": attack records, not verification records"},
		{"empty", writeRecords[VerifyRecord](t, dir, "empty.jsonl"), "empty.jsonl: no records"},
		{"missing", filepath.Join(dir, "gone.jsonl"), "gone.jsonl"},
		{"model missing", writeRecords(t, dir, "other-model.jsonl", ver[0], with(func(r *VerifyRecord) { r.ModelSHA256 = strings.Repeat("0", 64) })), "other-model.jsonl: record 2: model"},
		{"schema 0", writeRecords(t, dir, "schema0.jsonl", with(func(r *VerifyRecord) { r.ModelSHA256 = "" })), "schema0.jsonl: record 1: a schema-0 record"},
		{"own input", writeRecords(t, dir, "own.jsonl", with(func(r *VerifyRecord) { r.Data.SHA256 = "abc" })), "own.jsonl: record 1: the clean input is the user's own file"},
	} {
		_, err := RerunRecords(context.Background(), Sources{}, []string{tc.path}, rerunTestOptions(10, mdir))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", tc.name, err, tc.want)
		}
	}
}

// TestSelectRerun: the choice takes every file's every verdict before
// any second record of one, the shortest first; a record over the budget
// closes its group; failed records and a key seen before are not chosen;
// the same records give the same choice.
func TestSelectRerun(t *testing.T) {
	rec := func(sample int, verdict string, seconds float64) VerifyRecord {
		r := VerifyRecord{SchemaVersion: SchemaVersion, ModelSHA256: "aaaa", Data: DataRef{Name: "test", Split: "test", Seed: 1}, Sample: sample, Eps: 0.1, K: 1,
			Verdict: verdict, Seconds: seconds}
		if verdict == "failed" {
			r.Verdict, r.Error = "unknown", "solver error"
		}
		return r
	}
	files := []string{"a.jsonl", "b.jsonl"}
	recs := [][]VerifyRecord{{
		rec(0, "robust", 3), rec(1, "robust", 1), rec(2, "robust", 2), rec(3, "vulnerable", 5), rec(4, "unknown", 60), rec(5, "unknown", 61), rec(6, "failed", 1),
	}, {
		rec(1, "robust", 1), // a's record 2's key
		rec(10, "vulnerable", 0.5), rec(11, "vulnerable", 0.2), rec(12, "unknown", 60), rec(13, "robust", 9),
	}}
	type pick struct {
		file   string
		record int
	}
	names := func(ps []RerunPick) []pick {
		var out []pick
		for _, p := range ps {
			out = append(out, pick{p.File, p.Record})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		n      int
		budget float64
		want   []pick // in file order
	}{
		{"one per group", 6, 0, []pick{{"a.jsonl", 2}, {"a.jsonl", 4}, {"a.jsonl", 5}, {"b.jsonl", 3}, {"b.jsonl", 4}, {"b.jsonl", 5}}},
		// A round takes the group whose next record is shortest first.
		{"the shortest groups first", 2, 0, []pick{{"a.jsonl", 2}, {"b.jsonl", 3}}},
		{"a second round", 8, 0, []pick{{"a.jsonl", 2}, {"a.jsonl", 3}, {"a.jsonl", 4}, {"a.jsonl", 5}, {"b.jsonl", 2}, {"b.jsonl", 3}, {"b.jsonl", 4}, {"b.jsonl", 5}}},
		{"all", 100, 0, []pick{{"a.jsonl", 1}, {"a.jsonl", 2}, {"a.jsonl", 3}, {"a.jsonl", 4}, {"a.jsonl", 5}, {"a.jsonl", 6}, {"b.jsonl", 2}, {"b.jsonl", 3}, {"b.jsonl", 4}, {"b.jsonl", 5}}},
		// 81 s hold at most 8 records (0.2 + 0.5 + 1 + 2 + 3 + 5 + 9 + 60
		// = 80.7 s): round 1 takes every group's first but b's unknown,
		// which would leave room for fewer; rounds 2 and 3 the rest.
		{"budget", 100, 81, []pick{{"a.jsonl", 1}, {"a.jsonl", 2}, {"a.jsonl", 3}, {"a.jsonl", 4}, {"a.jsonl", 5}, {"b.jsonl", 2}, {"b.jsonl", 3}, {"b.jsonl", 5}}},
		// 80 s hold 7: a's unknown still leaves room for them.
		{"budget spent", 100, 80, []pick{{"a.jsonl", 2}, {"a.jsonl", 3}, {"a.jsonl", 4}, {"a.jsonl", 5}, {"b.jsonl", 2}, {"b.jsonl", 3}, {"b.jsonl", 5}}},
		// 4 picks in 20 s: the four shortest groups' first records
		// (15.2 s); the unknowns are not reached.
		{"budget and few picks", 4, 20, []pick{{"a.jsonl", 2}, {"a.jsonl", 4}, {"b.jsonl", 3}, {"b.jsonl", 5}}},
		// 5 picks in 12 s: b's 9 s robust record would leave room for
		// one more pick, not two: its group is closed.
		{"a group closed", 5, 12, []pick{{"a.jsonl", 2}, {"a.jsonl", 3}, {"a.jsonl", 4}, {"b.jsonl", 2}, {"b.jsonl", 3}}},
	} {
		got, eligible := SelectRerun(files, recs, tc.n, tc.budget)
		if !slices.Equal(names(got), tc.want) || eligible != 10 {
			t.Errorf("%s: %v (%d eligible), want %v (10)", tc.name, names(got), eligible, tc.want)
		}
		again, _ := SelectRerun(files, recs, tc.n, tc.budget)
		if !slices.EqualFunc(got, again, func(a, b RerunPick) bool { return a.File == b.File && a.Record == b.Record }) {
			t.Errorf("%s: a second choice differs", tc.name)
		}
	}
}

// TestRerunInterrupted: a rerun cancelled after its first sample returns
// the context's error with that sample's row, and reruns no more.
func TestRerunInterrupted(t *testing.T) {
	mdir, dir, ver, _ := rerunFixture(t)
	p := writeRecords(t, dir, "r.jsonl", ver...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opt := rerunTestOptions(100, mdir)
	opt.Progress = func(_ string, done, _ int, _ string) {
		if done == 1 {
			cancel()
		}
	}
	rep, err := RerunRecords(ctx, Sources{}, []string{p}, opt)
	if !errors.Is(err, context.Canceled) || rep == nil || len(rep.Rows) != 1 {
		t.Fatalf("%v, %+v", err, rep)
	}
}

// TestSelectRerunShares: with many short records and a budget that holds
// more than one unknown per group, every group's first record is taken,
// then the short groups in turns while an unknown is over a pick's share
// of the budget left (after round 1, 217.9 s for 51 picks); with 3 picks
// left, the share (67 s) lets the unknowns in again.
func TestSelectRerunShares(t *testing.T) {
	var files []string
	var recs [][]VerifyRecord
	for f := range 3 {
		files = append(files, fmt.Sprintf("%c.jsonl", 'a'+f))
		var rs []VerifyRecord
		for i := range 45 {
			r := VerifyRecord{SchemaVersion: SchemaVersion, ModelSHA256: "aaaa", Data: DataRef{Name: "test", Split: "test", Seed: 1}, Sample: 100*f + i, Eps: 0.1, K: 1}
			switch {
			case i < 20:
				r.Verdict, r.Seconds = "robust", 0.5
			case i < 40:
				r.Verdict, r.Seconds = "vulnerable", 0.2
			default:
				r.Verdict, r.Seconds = "unknown", 60
			}
			rs = append(rs, r)
		}
		recs = append(recs, rs)
	}
	picks, eligible := SelectRerun(files, recs, 60, 400)
	count := map[string]int{}
	total := 0.0
	for _, p := range picks {
		count[p.File+" "+p.Rec.Verdict]++
		total += p.Rec.Seconds
	}
	// Round 1, then 8 rounds of the six short groups (57 picks), then
	// the unknowns: 6·60 + 27·0.2 + 27·0.5 s.
	for _, f := range files {
		if count[f+" unknown"] != 2 || count[f+" vulnerable"] != 9 || count[f+" robust"] != 9 {
			t.Errorf("%s: %d unknown, %d vulnerable, %d robust; want 2, 9, 9", f, count[f+" unknown"], count[f+" vulnerable"], count[f+" robust"])
		}
	}
	if len(picks) != 60 || eligible != 135 || math.Abs(total-378.9) > 1e-9 {
		t.Errorf("%d picks of %d, %g s; want 60 of 135, 378.9 s", len(picks), eligible, total)
	}
}
