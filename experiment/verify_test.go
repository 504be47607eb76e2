package experiment

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/mip/cbc"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/results"
	"github.com/lenspec/lenspec/verify"
)

// failingSolver fails every solve: with an error, or with a panic.
type failingSolver struct{ panics bool }

func (s failingSolver) Solve(context.Context, *mip.Model, mip.Options) (*mip.Result, error) {
	if s.panics {
		panic("solver exploded")
	}
	return nil, errors.New("solver error: CoinError in ClpSimplex")
}

func verifyConfig(m *Model, out string, samples []int) VerifyConfig {
	s := DefaultVerifySettings()
	s.Timeout, s.AttackSteps, s.Tokens, s.Abstract = 5, 0, false, false
	return VerifyConfig{Model: m, Data: testData(20), Samples: samples, Eps: []float64{0.5}, Settings: s, Out: out}
}

// TestVerifyFailuresAreData: samples whose solver fails or panics are
// recorded as unknown with the error, and the run completes every sample.
func TestVerifyFailuresAreData(t *testing.T) {
	m := loadModel(t, tinyModelDir(t, 6))
	for _, panics := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "v.jsonl")
		c := verifyConfig(m, out, []int{0, 1, 2, 3})
		c.Settings.MaxLen = 5 // far above what bounds can settle at δ = 0.5 on random weights? the MIP must run
		c.solver = failingSolver{panics}
		if err := RunVerify(context.Background(), c, nil); err != nil {
			t.Fatal(err)
		}
		recs, err := ReadVerifyRecords(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 4 {
			t.Fatalf("%d records, want 4", len(recs))
		}
		failed := 0
		for _, r := range recs {
			if r.Error != "" {
				failed++
				want := "CoinError"
				if panics {
					want = "solver exploded"
				}
				if r.Verdict != "unknown" || !strings.Contains(r.Error, want) {
					t.Fatalf("failed record %+v", r)
				}
			}
		}
		if failed == 0 {
			t.Fatalf("panics=%v: no sample reached the solver; the test checks nothing: %+v", panics, recs)
		}
	}
}

// TestVerifyResumesAndRedoes: a rerun skips what is done; a changed
// timeout or K̂ is another experiment and runs.
func TestVerifyResumesAndRedoes(t *testing.T) {
	m := loadModel(t, tinyModelDir(t, 7))
	out := filepath.Join(t.TempDir(), "v.jsonl")
	c := verifyConfig(m, out, []int{0, 1})
	c.Settings.Solver = SolverNone
	count := func(c VerifyConfig) int {
		n := 0
		if err := RunVerify(context.Background(), c, func(VerifyRecord) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(c); n != 2 {
		t.Fatalf("first run: %d", n)
	}
	if n := count(c); n != 0 {
		t.Fatalf("rerun: %d", n)
	}
	c2 := c
	c2.Settings.Timeout = 6
	if n := count(c2); n != 2 {
		t.Fatalf("another timeout: %d", n)
	}
	c3 := c
	c3.Settings.MaxLen = 1
	if n := count(c3); n != 2 {
		t.Fatalf("another K̂: %d", n)
	}
	recs, _ := ReadVerifyRecords(out)
	if got := len(Of(recs, c.Match)); got != 2 {
		t.Fatalf("summary of the first experiment holds %d records", got)
	}
}

// TestVerifyProgressStartsAtOnce: a verification says it has started
// before its first sample is verified (a sample may take its whole time
// limit), and a resumed run starts from the samples already done.
func TestVerifyProgressStartsAtOnce(t *testing.T) {
	m := loadModel(t, tinyModelDir(t, 7))
	out := filepath.Join(t.TempDir(), "v.jsonl")
	for _, tc := range []struct {
		indices   []int
		wantFirst int
	}{{[]int{0}, 0}, {[]int{0, 1, 2}, 1}} {
		c := verifyConfig(m, out, tc.indices)
		c.Settings.Solver = SolverNone
		var calls []int
		records := 0
		c.Progress = func(stage string, done, total int, _ string) {
			if len(calls) == 0 && records != 0 {
				t.Errorf("%v: the first progress report came after %d records", tc.indices, records)
			}
			if total != len(tc.indices) {
				t.Errorf("%v: total %d", tc.indices, total)
			}
			calls = append(calls, done)
		}
		if err := RunVerify(context.Background(), c, func(VerifyRecord) error { records++; return nil }); err != nil {
			t.Fatal(err)
		}
		if len(calls) == 0 || calls[0] != tc.wantFirst || calls[len(calls)-1] != len(tc.indices) {
			t.Errorf("%v: progress %v, want it to start at %d and end at %d", tc.indices, calls, tc.wantFirst, len(tc.indices))
		}
	}
}

// TestVerifyRecordsReproduce: a sample's verdict record (its witness's
// values included, time and paths aside) is the same verified alone, among
// others, in a shard, on one core or two, and resumed, with the falsifier
// on (its targeted continuations batch one target per token) on a model
// of the shipped widths with 20 words: nothing the verifier does with one
// sample depends on another, or on the cores.
func TestVerifyRecordsReproduce(t *testing.T) {
	m := loadModel(t, modelDir(t, 3, func(c *model.Config, a *model.CaptionerConfig) {
		wide(model.CellReLU)(c, a)
		c.Vocab = append(slices.Clone(model.DefaultCaptionerConfig().Vocab[:10]), "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "<eos>")
		c.EOS = 20
	}, func(d model.Decoder[float64]) {
		for _, p := range d.Params() {
			if p.Name == "decoder.out.bias" {
				p.W.Data[20] = 3 // outputs that stop, some of which the plain falsifier cannot lengthen
			}
		}
	}))
	dir := t.TempDir()
	ctx := context.Background()
	samples := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	config := func(name string, samples []int) VerifyConfig {
		c := verifyConfig(m, filepath.Join(dir, name+".jsonl"), samples)
		c.Data = Data{Ref: DataRef{Name: "test", Split: "test", Seed: 1}, Source: testSource{n: 20, size: 128, panicOn: -1}}
		c.Eps = []float64{0.2}
		c.Settings.Solver, c.Settings.BaB, c.Settings.Timeout = SolverNone, false, 600
		c.Settings.AttackSteps, c.Settings.AttackRestarts, c.Settings.AttackTargeted, c.Settings.MaxLen = 10, 2, true, 3
		return c
	}
	run := func(c VerifyConfig, procs int) {
		t.Helper()
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		if err := RunVerify(ctx, c, nil); err != nil {
			t.Fatal(err)
		}
	}
	run(config("all", samples), 2)
	run(config("alone", []int{3}), 2)
	run(config("procs1", samples), 1)
	shard := config("shard", samples)
	shard.Shard = Shard{2, 2}
	run(shard, 2)
	resumed := config("resumed", samples)
	cctx, cancel := context.WithCancel(ctx)
	n := 0
	if err := RunVerify(cctx, resumed, func(VerifyRecord) error {
		if n++; n == 2 {
			cancel()
		}
		return nil
	}); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run returned %v", err)
	}
	run(resumed, 2)
	read := func(name string) map[int]VerifyRecord {
		t.Helper()
		recs, err := ReadVerifyRecords(filepath.Join(dir, name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		out := map[int]VerifyRecord{}
		for _, r := range recs {
			w := r.Witness
			r.Seconds, r.BoundSeconds, r.Witness = 0, 0, ""
			for i := range r.Phases {
				r.Phases[i].Seconds = 0
			}
			if w != "" {
				b, err := os.ReadFile(w)
				if err != nil {
					t.Fatal(err)
				}
				r.Witness = string(b)
			}
			out[r.Sample] = r
		}
		return out
	}
	ref := read("all")
	verdicts := map[string]int{}
	for _, r := range ref {
		verdicts[r.Verdict]++
	}
	if len(ref) != len(samples) || verdicts["vulnerable"] == 0 {
		t.Fatalf("verdicts %v of %d samples: the test needs a witness to compare", verdicts, len(samples))
	}
	for _, name := range []string{"alone", "procs1", "shard.shard-2-of-2", "resumed"} {
		recs := read(name)
		if len(recs) == 0 {
			t.Fatalf("%s: no records", name)
		}
		for s, r := range recs {
			if !reflect.DeepEqual(ref[s], r) {
				t.Fatalf("sample %d: among others %+v\n%s %+v", s, ref[s], name, r)
			}
		}
	}
}

func TestVerifyConfigValidate(t *testing.T) {
	m := loadModel(t, tinyModelDir(t, 8))
	for name, change := range map[string]func(*VerifySettings){
		"relax gap": func(s *VerifySettings) { s.RelaxGap = -1 },
		"timeout":   func(s *VerifySettings) { s.Timeout = 0 },
		"solver":    func(s *VerifySettings) { s.Solver = "gurobi" },
		"max len":   func(s *VerifySettings) { s.MaxLen = 1e6 },
		"steps":     func(s *VerifySettings) { s.MaxSteps = 1e6 },
		"attack lr": func(s *VerifySettings) { s.AttackSteps, s.AttackLR = 10, 0 },
		"bounds":    func(s *VerifySettings) { s.Bounds = "magic" },
	} {
		c := verifyConfig(m, filepath.Join(t.TempDir(), "v.jsonl"), []int{0})
		change(&c.Settings)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestSummariseBound: the worst-case length table counts certified images
// and images with no proven bound, counts those as unbounded in the proven
// median and maximum, and refuses verification records.
func TestSummariseBound(t *testing.T) {
	up := func(v int) *int { return &v }
	recs := []VerifyRecord{
		{Sample: 1, Eps: 0.05, Seconds: 1, Bound: &BoundResult{Lower: 2, Upper: up(2), Certified: true}},
		{Sample: 2, Eps: 0.05, Seconds: 3, Bound: &BoundResult{Lower: 3, Upper: up(5)}},
		{Sample: 3, Eps: 0.05, Seconds: 9, Bound: &BoundResult{Lower: 2}},
		{Sample: 1, Eps: 0.01, Seconds: 1, Bound: &BoundResult{Lower: 2, Upper: up(2), Certified: true}},
	}
	dir := t.TempDir()
	sum, err := SummariseBound(recs, dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"| 0.01 |      1 |         1 |               0 |             2 | 2          |                2 |             2 |",
		"| 0.05 |      3 |         1 |               1 |             5 | –          |                2 |             3 |",
	} {
		if !strings.Contains(sum.Table, row) {
			t.Errorf("table lacks %q:\n%s", row, sum.Table)
		}
	}
	if _, err := SummariseVerify(recs, dir, "t"); err == nil {
		t.Error("SummariseVerify took worst-case length records")
	}
	recs = append(recs, VerifyRecord{Sample: 4, Eps: 0.05, Verdict: "robust"})
	if _, err := SummariseBound(recs, dir, "t"); err == nil {
		t.Error("SummariseBound took a verification record")
	}
}

// TestDefaultVerifyOptions: the CLI's settings are verify.DefaultOptions
// for what verify holds (one copy of those defaults), and
// DefaultVerifyOptions, built from them, wires what verify cannot import:
// CBC, its LP for the token search, the 300-step warm start of 2 runs and
// the wide falsifier of 32.
func TestDefaultVerifyOptions(t *testing.T) {
	lib := verify.DefaultOptions()
	s := DefaultVerifySettings()
	if s.Bounds != string(lib.Bounds) || s.Timeout != lib.TimeLimit.Seconds() || s.Threads != lib.Threads || s.Safety != lib.Safety ||
		s.Optimize == lib.Decision || s.Abstract != lib.Abstract || s.RelaxGap != lib.RelaxGap || s.BaB != lib.BaB {
		t.Fatalf("settings %+v differ from verify.DefaultOptions %+v", s, lib)
	}
	m := loadModel(t, tinyModelDir(t, 6))
	o := DefaultVerifyOptions(m)
	if _, ok := o.Solver.(cbc.Solver); !ok || o.NewLP == nil || !o.BaB || !o.Abstract || !o.Decision || o.TimeLimit != lib.TimeLimit || o.MaxSteps != m.D64.MaxSteps() {
		t.Fatalf("DefaultVerifyOptions %+v", o)
	}
	warm, ok1 := o.Falsifier.(attack.Falsifier)
	wide, ok2 := o.Search.(attack.Falsifier)
	if !ok1 || !ok2 || warm.PGD.Steps != 300 || warm.PGD.Restarts != 2 || warm.PGD.LR != 0.01 || wide.PGD.Steps != 300 || wide.PGD.Restarts != 32 {
		t.Fatalf("falsifiers %+v, %+v", o.Falsifier, o.Search)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestRunVerifyExperiment: the run's records are written and summarised
// (only this run's: another experiment's records in the same file are
// left out), as SummariseVerify summarises them; bad settings are a
// SettingsError before any work.
func TestRunVerifyExperiment(t *testing.T) {
	m := loadModel(t, tinyModelDir(t, 7))
	dir := t.TempDir()
	out := filepath.Join(dir, "v.jsonl")
	other := verifyConfig(m, out, []int{3})
	other.Settings.Solver, other.Settings.Timeout = SolverNone, 6
	if err := RunVerify(context.Background(), other, nil); err != nil {
		t.Fatal(err)
	}
	c := verifyConfig(m, out, []int{0, 1})
	c.Settings.Solver = SolverNone
	sum, err := RunVerifyExperiment(context.Background(), c, dir, "toy")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ReadVerifyRecords(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records in the file, want 3", len(recs))
	}
	var mine []VerifyRecord
	for _, r := range recs {
		if r.Settings.Timeout == 5 {
			mine = append(mine, r)
		}
	}
	want, err := SummariseVerify(mine, t.TempDir(), "toy")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Table != want.Table || !strings.HasPrefix(sum.FigurePNG, dir) {
		t.Fatalf("summary\n%s\nwant\n%s", sum.Table, want.Table)
	}
	bad := c
	bad.Eps = []float64{-1}
	if _, err := RunVerifyExperiment(context.Background(), bad, dir, "toy"); !errors.As(err, new(SettingsError)) {
		t.Fatalf("δ −1: %v, want a SettingsError", err)
	}
}

// TestVerifyExperimentNamesCrashedUnits: a unit that killed its process
// twice is recorded as crashed, the experiment summarises the rest and
// returns its summary with a CrashedError naming the unit, and so does a
// rerun, until Retry removes it.
func TestVerifyExperimentNamesCrashedUnits(t *testing.T) {
	m := loadModel(t, tinyModelDir(t, 6))
	dir := t.TempDir()
	out := filepath.Join(dir, "v.jsonl")
	c := verifyConfig(m, out, []int{0, 1})
	c.solver = failingSolver{}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	f, err := results.Open(out, verifyKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range c.units() {
		if u.sample == 1 {
			f.BeginAttempt(u.key)
			f.BeginAttempt(u.key)
		}
	}
	f.Close()
	for run := 0; run < 2; run++ {
		sum, err := RunVerifyExperiment(context.Background(), c, dir, "t")
		var ce *CrashedError
		if !errors.As(err, &ce) || !slices.Equal(ce.Units, []CrashedUnit{{Sample: 1, Eps: 0.5}}) || sum == nil {
			t.Fatalf("run %d: %v (summary %v), want the summary and a CrashedError naming sample 1", run, err, sum)
		}
		// One sample completed; the crashed one is counted as failed only.
		if cells := strings.Join(strings.Fields(sum.Table), " "); !strings.Contains(cells, "| 0.5 | 1 |") || !strings.Contains(sum.Table, failedRule) {
			t.Fatalf("run %d: the table does not show the crashed unit as failed:\n%s", run, sum.Table)
		}
	}
	if n, err := Retry(out, false); err != nil || n != 1 {
		t.Fatalf("retry: %d, %v", n, err)
	}
}
