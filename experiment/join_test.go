package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// writeRecords writes recs as a results file in dir and returns its path.
func writeRecords[R any](t *testing.T, dir, name string, recs ...R) string {
	t.Helper()
	var b bytes.Buffer
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// attackRec is a PGD record of sample i at δ 0.1 whose adversarial output
// has n tokens.
func attackRec(i, n int) AttackRecord {
	r := AttackRecord{SchemaVersion: SchemaVersion, Model: "models/m", ModelSHA256: "aaaa", Data: DataRef{Name: "test", Split: "test", Seed: 1},
		Sample: i, Eps: 0.1, Method: MethodPGD, Settings: AttackSettings{MaxLen: -1, MaxSteps: 20, Budget: 30, Seed: 1, Loss: "margin"},
		AttackImage: &AttackImage{Label: []int{1}, OrigTokens: []int{1}}, K: 1, OrigLength: 1, Stopped: true, MinRelMargin: 0.5, Evals: 30, Seconds: 1}
	r.AdvLength, r.AdvTokens, r.Success = n, make([]int, n), n > 1
	return r
}

func verifyRec(i int, verdict string) VerifyRecord {
	return VerifyRecord{SchemaVersion: SchemaVersion, Model: "models/m", ModelSHA256: "aaaa", Data: DataRef{Name: "test", Split: "test", Seed: 1},
		Sample: i, Eps: 0.1, K: 1, Settings: VerifySettings{MaxLen: -1, MaxSteps: 20, Bounds: "crown", Timeout: 10, Solver: "cbc"},
		Label: []int{1}, Verdict: verdict, Stage: "bab", Seconds: 2}
}

// mergeBoth merges inputs into two fresh files, in the given order and
// reversed, and checks that the two results are byte for byte the same:
// the order of the files never decides what is kept.
func mergeBoth(t *testing.T, opt JoinOptions, inputs ...string) (*MergeReport, []byte, error) {
	t.Helper()
	dir := t.TempDir()
	var outs [2][]byte
	var rep *MergeReport
	var errs [2]error
	for k := range 2 {
		in := append([]string(nil), inputs...)
		if k == 1 {
			for i, j := 0, len(in)-1; i < j; i, j = i+1, j-1 {
				in[i], in[j] = in[j], in[i]
			}
		}
		out := filepath.Join(dir, []string{"ab.jsonl", "ba.jsonl"}[k])
		r, err := Merge(out, in, opt)
		errs[k] = err
		if k == 0 {
			rep = r
		}
		outs[k], _ = os.ReadFile(out)
	}
	if (errs[0] == nil) != (errs[1] == nil) {
		t.Fatalf("merge in two orders: %v and %v", errs[0], errs[1])
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Fatalf("the order of the files changed the merge:\n%s\n%s", outs[0], outs[1])
	}
	return rep, outs[0], errs[0]
}

// TestMergeRules: equal copies of a unit are written once whatever the
// order of the files; copies that differ only in what differs between two
// runs (timings, paths) are copies too; records of one unit that disagree
// are refused naming the unit, both files and the fields, or with Best
// resolved the same way in either order; contradictions are refused even
// then.
func TestMergeRules(t *testing.T) {
	dir := t.TempDir()
	slow := attackRec(2, 3)
	slow.Seconds, slow.Model, slow.Witness = 9, "/elsewhere/m", "/elsewhere/w.safetensors"
	a := writeRecords(t, dir, "a.jsonl", attackRec(1, 2), attackRec(2, 3))
	b := writeRecords(t, dir, "b.jsonl", slow, attackRec(3, 1))
	rep, out, err := mergeBoth(t, JoinOptions{}, a, b)
	if err != nil || rep.Records != 3 || rep.Duplicates != 1 {
		t.Fatalf("copies: %+v, %v", rep, err)
	}
	if bytes.Count(out, []byte("\n")) != 3 {
		t.Fatalf("merged:\n%s", out)
	}

	// A conflict: sample 2's replayed output differs.
	longer := attackRec(2, 5)
	c := writeRecords(t, dir, "c.jsonl", longer)
	_, _, err = mergeBoth(t, JoinOptions{}, a, c)
	for _, want := range []string{"sample 2 at δ 0.1 (pgd)", "a.jsonl (record 2)", "c.jsonl (record 1)", "adv_length 3 vs 5", "--on-conflict best"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("conflict: %v, want it to mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error on two lines: %q", err)
	}
	// Best keeps the longer output, in either order.
	rep, out, err = mergeBoth(t, JoinOptions{Conflict: Best}, a, c)
	if err != nil || rep.Resolved != 1 || rep.Records != 2 || !bytes.Contains(out, []byte(`"adv_length":5`)) || bytes.Contains(out, []byte(`"adv_length":3`)) {
		t.Fatalf("best: %+v, %v:\n%s", rep, err, out)
	}
	// A failed record loses to a result under Best, and is a conflict
	// otherwise.
	failed := attackRec(2, 0)
	failed.Error, failed.AdvTokens, failed.Success = "solver crashed", nil, false
	f := writeRecords(t, dir, "f.jsonl", failed)
	if _, _, err := mergeBoth(t, JoinOptions{}, a, f); err == nil || !strings.Contains(err.Error(), "failed (absent) vs true") {
		t.Fatalf("failed against ok: %v", err)
	}
	if _, out, err := mergeBoth(t, JoinOptions{Conflict: Best}, a, f); err != nil || bytes.Contains(out, []byte("solver crashed")) {
		t.Fatalf("best of failed and ok: %v:\n%s", err, out)
	}
	// Attacks on different inputs contradict each other.
	other := attackRec(2, 5)
	other.Label = []int{7}
	o := writeRecords(t, dir, "o.jsonl", other)
	if _, _, err := mergeBoth(t, JoinOptions{Conflict: Best}, a, o); err == nil || !strings.Contains(err.Error(), "contradict") || !strings.Contains(err.Error(), "label [1] vs [7]") {
		t.Fatalf("contradiction: %v", err)
	}
	// Merging into an out that holds the worse record replaces it.
	out2 := filepath.Join(t.TempDir(), "out.jsonl")
	if _, err := Merge(out2, []string{a}, JoinOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(out2, []string{c}, JoinOptions{}); err == nil {
		t.Fatal("a conflict with out's record accepted")
	}
	rep, err = Merge(out2, []string{c}, JoinOptions{Conflict: Best})
	if err != nil || rep.Replaced != 1 {
		t.Fatalf("best against out: %+v, %v", rep, err)
	}
	got := readAttacks(t, out2)
	if len(got) != 2 || got[2].AdvLength != 5 {
		t.Fatalf("out after best: %+v", got)
	}
	if recs, _ := ReadAttackRecords(out2); len(recs) != 2 {
		t.Fatalf("out holds %d records, want 2", len(recs))
	}
}

// TestMergeVerifyRules: two runs of one verification unit that reach one
// verdict by other stages, bounds and times are copies; robust against
// unknown is a conflict (Best keeps robust); robust against vulnerable is
// a contradiction.
func TestMergeVerifyRules(t *testing.T) {
	dir := t.TempDir()
	bound := 0.5
	other := verifyRec(1, "robust")
	other.Stage, other.Seconds, other.ProvenBound, other.Nodes, other.Model = "mip", 7, &bound, 12, "elsewhere"
	a := writeRecords(t, dir, "a.jsonl", verifyRec(1, "robust"), verifyRec(2, "unknown"))
	b := writeRecords(t, dir, "b.jsonl", other, verifyRec(2, "robust"))
	if _, _, err := mergeBoth(t, JoinOptions{}, a, b); err == nil || !strings.Contains(err.Error(), "sample 2 at δ 0.1 (K̂ 1)") || !strings.Contains(err.Error(), `verdict "unknown" vs "robust"`) {
		t.Fatalf("unknown against robust: %v", err)
	}
	rep, out, err := mergeBoth(t, JoinOptions{Conflict: Best}, a, b)
	if err != nil || rep.Records != 2 || rep.Duplicates != 1 || rep.Resolved != 1 || bytes.Contains(out, []byte("unknown")) {
		t.Fatalf("best: %+v, %v:\n%s", rep, err, out)
	}
	v := writeRecords(t, dir, "v.jsonl", verifyRec(1, "vulnerable"))
	if _, _, err := mergeBoth(t, JoinOptions{Conflict: Best}, a, v); err == nil || !strings.Contains(err.Error(), "verdict robust vs vulnerable") {
		t.Fatalf("robust against vulnerable: %v", err)
	}
}

// TestMergeNamesExperiments: a file that mixes two experiments is named
// once, with what differs; two files of different experiments are both
// named, with what differs.
func TestMergeNamesExperiments(t *testing.T) {
	dir := t.TempDir()
	capped := attackRec(2, 3)
	capped.Settings.MaxSteps = 40
	mixed := writeRecords(t, dir, "mixed.jsonl", attackRec(1, 2), capped)
	_, err := Merge(filepath.Join(dir, "out.jsonl"), []string{mixed}, JoinOptions{})
	if err == nil || strings.Count(err.Error(), "mixed.jsonl") != 1 || !strings.Contains(err.Error(), "mixed.jsonl mixes two experiments (method pgd): settings.max_steps 20 vs 40 (records 1 and 2)") {
		t.Fatalf("mixed file: %v", err)
	}
	newer := attackRec(3, 2)
	newer.ModelSHA256 = "bbbb"
	a := writeRecords(t, dir, "a.jsonl", attackRec(1, 2))
	b := writeRecords(t, dir, "b.jsonl", newer)
	_, err = Merge(filepath.Join(dir, "out2.jsonl"), []string{a, b}, JoinOptions{})
	if err == nil || !strings.Contains(err.Error(), `b.jsonl holds records of another experiment than `+a+`: model_sha256 "aaaa" vs "bbbb"`) {
		t.Fatalf("two models: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out2.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("a refused merge wrote its output (%v)", err)
	}
	// Methods may differ in settings; model and data may not.
	random := attackRec(2, 2)
	random.Method, random.Settings = MethodRandom, random.Settings.Normalize(MethodRandom)
	random.Settings.Budget = 1000
	r := writeRecords(t, dir, "r.jsonl", random)
	if _, err := Merge(filepath.Join(dir, "out3.jsonl"), []string{a, r}, JoinOptions{}); err != nil {
		t.Fatalf("two methods of one run: %v", err)
	}
}

// TestSummaryCountsUnitsOnce: a file given twice, or shards given beside
// their merge, count every unit once; shards of two models are refused
// rather than summarised as one row.
func TestSummaryCountsUnitsOnce(t *testing.T) {
	dir := t.TempDir()
	a := writeRecords(t, dir, "a.jsonl", attackRec(1, 2), attackRec(2, 3), attackRec(3, 1))
	j, err := Join[AttackRecord]([]string{a, a}, JoinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := SummariseAttacks(j.Records, t.TempDir(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Rows) != 1 || sum.Rows[0].Samples != 3 || j.Duplicates != 3 {
		t.Fatalf("rows %+v (%d duplicates), want one row of 3 samples", sum.Rows, j.Duplicates)
	}
	// The summaries themselves refuse records that repeat a unit
	// inconsistently or mix experiments.
	twice := append(append([]AttackRecord(nil), j.Records...), attackRec(1, 9))
	if _, err := SummariseAttacks(twice, t.TempDir(), "t"); err == nil || !strings.Contains(err.Error(), "sample 1") {
		t.Fatalf("conflicting records summarised: %v", err)
	}
	newer := attackRec(4, 2)
	newer.ModelSHA256 = "bbbb"
	b := writeRecords(t, dir, "b.jsonl", newer)
	if _, err := Join[AttackRecord]([]string{a, b}, JoinOptions{}); err == nil || !strings.Contains(err.Error(), "model_sha256") {
		t.Fatalf("two models joined: %v", err)
	}
	if _, err := SummariseAttacks(append(j.Records, newer), t.TempDir(), "t"); err == nil || !strings.Contains(err.Error(), "model_sha256") {
		t.Fatalf("two models summarised: %v", err)
	}
	// A run's output merged from its shards, the shards still beside it.
	out := filepath.Join(dir, "run.jsonl")
	s1 := writeRecords(t, dir, "run.shard-1-of-2.jsonl", attackRec(1, 2), attackRec(3, 1))
	s2 := writeRecords(t, dir, "run.shard-2-of-2.jsonl", attackRec(2, 3))
	if _, err := Merge(out, []string{s1, s2}, JoinOptions{}); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadRun[AttackRecord](out)
	if err != nil || len(recs) != 3 {
		t.Fatalf("run read as %d records (%v), want 3", len(recs), err)
	}
}

// TestJoinOptionsFlags: --on-conflict starts at refuse, its help sends
// the reader where the command says, and anything but refuse or best is
// refused as a SettingsError naming the flag.
func TestJoinOptionsFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want Conflict
		err  string
	}{
		{nil, Refuse, ""},
		{[]string{"--on-conflict", "best"}, Best, ""},
		{[]string{"--on-conflict", "refuse"}, Refuse, ""},
		{[]string{"--on-conflict", "Best"}, "", "--on-conflict Best: want refuse or best"},
		{[]string{"--on-conflict", ""}, "", "--on-conflict : want refuse or best"},
	} {
		var o JoinOptions
		fs := pflag.NewFlagSet("merge", pflag.ContinueOnError)
		o.RegisterFlags(fs, "see above")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if u := fs.Lookup("on-conflict").Usage; u != "records of one unit that disagree: refuse, or keep the best (see above)" {
			t.Fatalf("help %q", u)
		}
		err := o.ValidateFlags()
		switch {
		case tc.err == "" && (err != nil || o.Conflict != tc.want):
			t.Errorf("%q: %q, %v; want %q", tc.args, o.Conflict, err, tc.want)
		case tc.err != "" && (err == nil || err.Error() != tc.err || !errors.As(err, new(SettingsError))):
			t.Errorf("%q: got %v, want %q", tc.args, err, tc.err)
		}
	}
}
