package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/results"
)

// tinyModelDir writes a random tiny captioner reading 1×4×6 images.
func tinyModelDir(t testing.TB, seed uint64) string {
	return modelDir(t, seed, func(c *model.Config, a *model.CaptionerConfig) {
		a.Input = model.InputConfig{Channels: 1, Height: 4, Width: 6, Min: -1, Max: 1}
		a.Conv = []model.ConvConfig{{OutChannels: 3, Kernel: 3, Stride: 2, Padding: 1}}
		a.FCHidden, a.Embedding, a.Hidden = 6, 4, 5
	}, func(d model.Decoder[float64]) {
		// Non-zero biases avoid all-tie outputs of dead states.
		rng := rand.New(rand.NewPCG(seed, 12))
		for _, p := range d.Params() {
			if len(p.W.Shape) == 1 {
				for i := range p.W.Data {
					p.W.Data[i] = 0.3 * rng.NormFloat64()
				}
			}
		}
	})
}

// wideModelDir writes a random LSTM captioner of the shipped models'
// widths (wide) reading 1×8×16 images.
func wideModelDir(t testing.TB, seed uint64) string {
	return modelDir(t, seed, wide(model.CellLSTM), nil)
}

// wide gives a captioner the shipped models' widths (a 512-value feature
// map, FC 256, hidden 128) on 1×8×16 images: OpenBLAS rounds a row of a
// product by the rows beside it at sizes like these, not at tiny ones.
func wide(cell string) func(*model.Config, *model.CaptionerConfig) {
	return func(_ *model.Config, a *model.CaptionerConfig) {
		a.Input = model.InputConfig{Channels: 1, Height: 8, Width: 16, Min: -1, Max: 1}
		a.Conv = []model.ConvConfig{{OutChannels: 16, Kernel: 3, Stride: 2, Padding: 1}}
		a.FCHidden, a.Embedding, a.Hidden, a.Cell = 256, 64, 128, cell
	}
}

// modelDir writes a random captioner with the words a, b, c and a step cap
// of 8, its configuration set by configure and its weights changed by
// tweak (if set).
func modelDir(t testing.TB, seed uint64, configure func(*model.Config, *model.CaptionerConfig), tweak func(model.Decoder[float64])) string {
	t.Helper()
	c := model.DefaultCaptionerConfig()
	c.Vocab = []string{"a", "b", "c", "<eos>"}
	c.EOS, c.MaxSteps = 3, 8
	configure(&c, c.Arch.(*model.CaptionerConfig))
	d, err := model.New[float64](&c, rand.New(rand.NewPCG(seed, 11)))
	if err != nil {
		t.Fatal(err)
	}
	if tweak != nil {
		tweak(d)
	}
	dir := t.TempDir()
	if err := model.Save(dir, d); err != nil {
		t.Fatal(err)
	}
	return dir
}

// testSource is a data set of random images with short labels.
type testSource struct {
	n, size int
	panicOn int // sample index whose input makes Batch panic (−1: none)
}

func (s testSource) Len() int { return s.n }

func (s testSource) Batch(idx []int, _ *rand.Rand) ([]float64, [][]int, [][]int) {
	var x []float64
	var labels [][]int
	for _, i := range idx {
		if i == s.panicOn {
			panic("test source: poisoned sample")
		}
		rng := rand.New(rand.NewPCG(99, uint64(i)))
		for k := 0; k < s.size; k++ {
			x = append(x, 2*rng.Float64()-1)
		}
		labels = append(labels, []int{i % 3})
	}
	return x, nil, labels
}

func testData(n int) Data {
	return Data{Ref: DataRef{Name: "test", Split: "test", Seed: 1}, Source: testSource{n: n, size: 24, panicOn: -1}}
}

func loadModel(t testing.TB, dir string) *Model {
	t.Helper()
	m, err := LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func pgdConfig(m *Model, out string, samples []int, batch int) AttackConfig {
	return AttackConfig{Model: m, Data: testData(20), Samples: samples, Eps: []float64{0.3}, Method: MethodPGD, Batch: batch,
		Settings: AttackSettings{MaxLen: -1, Budget: 30, Seed: 5, Loss: "margin", LR: 0.01, Clip: 1, Restarts: 3, EarlyStop: true}, Out: out}
}

func readAttacks(t testing.TB, path string) map[int]AttackRecord {
	t.Helper()
	recs, err := ReadAttackRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]AttackRecord{}
	for _, r := range recs {
		out[r.Sample] = r
	}
	return out
}

// sameOutcome compares what an attack found, not how long it took.
func sameOutcome(a, b AttackRecord) bool {
	a.Seconds, b.Seconds, a.Witness, b.Witness, a.WitnessPNG, b.WitnessPNG = 0, 0, "", "", "", ""
	return reflect.DeepEqual(a, b)
}

// TestAttackRecordsReproduce: a unit's record (witness values included,
// time and paths aside) is the same run in a batch of 1 or 50, alone,
// in a shard, on one core or two, and after an interrupted run resumed,
// for PGD and random search, on a tiny model and on one of the shipped
// models' widths (where OpenBLAS rounds a row by the rows beside it).
func TestAttackRecordsReproduce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dir    func(testing.TB, uint64) string
		size   int
		method string
	}{
		{"tiny pgd", tinyModelDir, 24, MethodPGD},
		{"wide pgd", wideModelDir, 128, MethodPGD},
		{"wide random", wideModelDir, 128, MethodRandom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := loadModel(t, tc.dir(t, 1))
			ctx := context.Background()
			samples := []int{0, 3, 4, 7, 9, 12}
			dir := t.TempDir()
			config := func(name string, samples []int, batch int) AttackConfig {
				c := pgdConfig(m, filepath.Join(dir, name+".jsonl"), samples, batch)
				c.Data = Data{Ref: DataRef{Name: "test", Split: "test", Seed: 1}, Source: testSource{n: 20, size: tc.size, panicOn: -1}}
				if tc.method == MethodRandom {
					c.Method, c.Settings = MethodRandom, AttackSettings{MaxLen: -1, Budget: 600, Seed: 5}
				}
				return c
			}
			one, fifty, alone := config("b1", samples, 1), config("b50", samples, 50), config("alone", []int{7}, 50)
			for _, c := range []AttackConfig{one, fifty, alone} {
				if err := RunAttack(ctx, c, nil); err != nil {
					t.Fatal(err)
				}
			}
			func() {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
				if err := RunAttack(ctx, config("procs1", samples, 50), nil); err != nil {
					t.Fatal(err)
				}
			}()
			shard := config("shard", samples, 50)
			shard.Shard = Shard{2, 3}
			if err := RunAttack(ctx, shard, nil); err != nil {
				t.Fatal(err)
			}
			// Interrupted after two records, then resumed.
			resumed := config("resumed", samples, 2)
			cctx, cancel := context.WithCancel(ctx)
			n := 0
			err := RunAttack(cctx, resumed, func(AttackRecord) error {
				if n++; n == 2 {
					cancel()
				}
				return nil
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted run returned %v", err)
			}
			if got := len(readAttacks(t, resumed.Out)); got != 2 {
				t.Fatalf("interrupted run left %d records, want 2", got)
			}
			if err := RunAttack(ctx, resumed, nil); err != nil {
				t.Fatal(err)
			}
			ref := readAttacks(t, one.Out)
			if len(ref) != len(samples) {
				t.Fatalf("%d records of %d samples", len(ref), len(samples))
			}
			for _, run := range []string{"b50", "alone", "procs1", "shard.shard-2-of-3", "resumed"} {
				recs := readAttacks(t, filepath.Join(dir, run+".jsonl"))
				if len(recs) == 0 {
					t.Fatalf("%s: no records", run)
				}
				for s, r := range recs {
					if r.Arithmetic == "" || r.Arithmetic != Arithmetic() {
						t.Fatalf("%s: sample %d ran on %q, the process on %q", run, s, r.Arithmetic, Arithmetic())
					}
					if !sameOutcome(ref[s], r) || !sameWitness(t, ref[s], r) {
						t.Fatalf("sample %d: batch 1 %+v\n%s %+v", s, ref[s], run, r)
					}
				}
			}
			// The interrupted attempts ended cleanly: nothing counts as a crash.
			f, err := results.Open(resumed.Out, attackKey)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, u := range resumed.units() {
				if f.Attempts(u.key) > 1 {
					t.Fatalf("sample %d: %d attempts after a clean interruption", u.sample, f.Attempts(u.key))
				}
			}
		})
	}
}

// sameWitness reports whether two records' witnesses hold the same values
// (both without one counts as the same).
func sameWitness(t testing.TB, a, b AttackRecord) bool {
	t.Helper()
	if (a.Witness == "") != (b.Witness == "") {
		return false
	}
	if a.Witness == "" {
		return true
	}
	wa, err := os.ReadFile(a.Witness)
	if err != nil {
		t.Fatal(err)
	}
	wb, err := os.ReadFile(b.Witness)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(wa, wb)
}

// TestSecondWriterRefused: while one run holds a results file, another is
// refused with a clear error and the first's records are intact.
func TestSecondWriterRefused(t *testing.T) {
	m := loadModel(t, tinyModelDir(t, 2))
	out := filepath.Join(t.TempDir(), "r.jsonl")
	c := pgdConfig(m, out, []int{1, 2}, 50)
	holder, err := results.Open(out, attackKey)
	if err != nil {
		t.Fatal(err)
	}
	err = RunAttack(context.Background(), c, nil)
	if !errors.Is(err, results.ErrLocked) || !strings.Contains(err.Error(), out) {
		t.Fatalf("second writer: %v, want ErrLocked naming %s", err, out)
	}
	holder.Close()
	if err := RunAttack(context.Background(), c, nil); err != nil {
		t.Fatal(err)
	}
}

// TestChangedSettingsRedoWork: a rerun that changes anything that changes
// a result does the work instead of skipping it; one that changes only
// speed settings skips; summaries select the experiment asked for.
func TestChangedSettingsRedoWork(t *testing.T) {
	dir := tinyModelDir(t, 3)
	out := filepath.Join(t.TempDir(), "r.jsonl")
	ctx := context.Background()
	base := pgdConfig(loadModel(t, dir), out, []int{1, 2}, 50)
	count := func(c AttackConfig) int {
		t.Helper()
		n := 0
		if err := RunAttack(ctx, c, func(AttackRecord) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(base); n != 2 {
		t.Fatalf("first run: %d records", n)
	}
	for name, change := range map[string]func(*AttackConfig){
		"max steps": func(c *AttackConfig) { c.Settings.MaxSteps = 5 },
		"max len":   func(c *AttackConfig) { c.Settings.MaxLen = 2 },
		"lr":        func(c *AttackConfig) { c.Settings.LR = 0.02 },
		"loss":      func(c *AttackConfig) { c.Settings.Loss = "eos-logprob" },
		"restarts":  func(c *AttackConfig) { c.Settings.Restarts = 1 },
		"seed":      func(c *AttackConfig) { c.Settings.Seed = 6 },
		"budget":    func(c *AttackConfig) { c.Settings.Budget = 10 },
		"data seed": func(c *AttackConfig) { d := c.Data.(Data); d.Ref.Seed = 2; c.Data = d },
	} {
		c := base
		change(&c)
		if n := count(c); n != 2 {
			t.Errorf("%s changed: %d records written, want 2", name, n)
		}
	}
	// Speed only: skipped.
	c := base
	c.Batch = 1
	if n := count(c); n != 0 {
		t.Errorf("batch changed: %d records written, want 0", n)
	}
	// The same model by another path: one model, skipped.
	c.Model = loadModel(t, dir+"/.")
	if n := count(c); n != 0 {
		t.Errorf("same model by another path: %d records written, want 0", n)
	}
	// New weights at the same path: another model.
	d, err := model.Load[float64](dir)
	if err != nil {
		t.Fatal(err)
	}
	d.Params()[0].W.Data[0] += 0.5
	if err := model.Save(dir, d); err != nil {
		t.Fatal(err)
	}
	c.Model = loadModel(t, dir)
	if n := count(c); n != 2 {
		t.Errorf("new weights at the same path: %d records written, want 2", n)
	}
	all, err := ReadAttackRecords(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(Of(all, base.Match)); got != 2 {
		t.Fatalf("the base experiment's summary would hold %d records, want 2 (file holds %d)", got, len(all))
	}
	// Witnesses of records with different settings never share a file.
	seen := map[string]string{}
	for _, r := range all {
		if r.Witness == "" {
			continue
		}
		k := AttackKey(r)
		if other, dup := seen[r.Witness]; dup && other != k {
			t.Fatalf("two records share witness %s", r.Witness)
		}
		seen[r.Witness] = k
	}
}

// TestFailuresAreData: a sample that fails is recorded with its error and
// the others complete; a sample that killed the process twice is recorded
// as crashed without running.
func TestFailuresAreData(t *testing.T) {
	m := loadModel(t, tinyModelDir(t, 4))
	out := filepath.Join(t.TempDir(), "r.jsonl")
	c := pgdConfig(m, out, []int{1, 2, 5, 6}, 50)
	src := testSource{n: 20, size: 24, panicOn: -1}
	c.Data = Data{Ref: c.Data.Reference(), Source: src}
	// Sample 6 "crashed" twice: two attempts, no record.
	f, err := results.Open(out, attackKey)
	if err != nil {
		t.Fatal(err)
	}
	var key6 string
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, u := range c.units() {
		if u.sample == 6 {
			key6 = u.key
		}
	}
	f.BeginAttempt(key6)
	f.BeginAttempt(key6)
	f.Close()
	poisoned := testSource{n: 20, size: 24, panicOn: 5}
	c.Data = Data{Ref: c.Data.Reference(), Source: poisonAfterLabels{poisoned}}
	// The run does every other unit, then names the crashed one (not the
	// failed one: rerunning does not redo either, but only a crash is
	// worth retrying as it is) and the command that retries it.
	wantCrashed := func(err error) {
		t.Helper()
		var ce *CrashedError
		if !errors.As(err, &ce) || ce.Results != out || !slices.Equal(ce.Units, []CrashedUnit{{Sample: 6, Eps: 0.3, Method: "pgd margin"}}) ||
			!strings.Contains(err.Error(), "sample 6 at δ 0.3 (pgd margin)") || !strings.Contains(err.Error(), "`lenspec results retry "+out+"`") {
			t.Fatalf("got %v, want a CrashedError naming sample 6 and the retry", err)
		}
	}
	wantCrashed(RunAttack(context.Background(), c, nil))
	recs := readAttacks(t, out)
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	if !strings.Contains(recs[5].Error, "poisoned sample") {
		t.Fatalf("sample 5: error %q, want the panic", recs[5].Error)
	}
	if !strings.Contains(recs[6].Error, "died 2 times") || !recs[6].Crashed || recs[5].Crashed {
		t.Fatalf("sample 6: error %q crashed %v (sample 5 crashed %v), want a crash record", recs[6].Error, recs[6].Crashed, recs[5].Crashed)
	}
	for _, s := range []int{1, 2} {
		if recs[s].Error != "" || recs[s].Evals == 0 {
			t.Fatalf("sample %d did not complete: %+v", s, recs[s])
		}
	}

	// A plain rerun runs nothing, says so on resuming, and still fails.
	var logged []string
	c.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	wantCrashed(RunAttack(context.Background(), c, func(r AttackRecord) error { t.Fatalf("rerun ran sample %d", r.Sample); return nil }))
	if len(logged) != 1 || !strings.Contains(logged[0], "4 records already done, 1 of this run's units recorded as crashed") {
		t.Fatalf("resume log %q", logged)
	}
	c.Logf = nil

	// Retry goes by the crashed field, not the message (reworded here).
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, bytes.ReplaceAll(raw, []byte(crashPrefix), []byte("ended ")), 0o644); err != nil {
		t.Fatal(err)
	}
	// Retry removes the crashed unit (and, with all, the failed one); a
	// rerun redoes exactly those.
	for _, all := range []bool{false, true} {
		if n, err := Retry(out, all); err != nil || n != 1 {
			t.Fatalf("retry (all %v): %d removed, %v", all, n, err)
		}
	}
	c.Data = Data{Ref: c.Data.Reference(), Source: src}
	var redone []int
	if err := RunAttack(context.Background(), c, func(r AttackRecord) error { redone = append(redone, r.Sample); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(redone)
	if recs := readAttacks(t, out); len(recs) != 4 || !slices.Equal(redone, []int{5, 6}) || recs[5].Error != "" || recs[6].Error != "" {
		t.Fatalf("after retry: redone %v, records %+v", redone, recs)
	}
}

// poisonAfterLabels panics only when the input is asked for with the
// label (as the attack does), not for the label alone.
type poisonAfterLabels struct{ testSource }

func (p poisonAfterLabels) Batch(idx []int, rng *rand.Rand) ([]float64, [][]int, [][]int) {
	return p.testSource.Batch(idx, rng)
}

func TestShards(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want Shard
		ok   bool
		bad  bool
	}{
		{map[string]string{}, Whole, false, false},
		{map[string]string{"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "4"}, Shard{1, 4}, true, false},
		{map[string]string{"JOB_COMPLETION_INDEX": "3", "JOB_COMPLETIONS": "4"}, Shard{4, 4}, true, false},
		{map[string]string{"JOB_COMPLETION_INDEX": "4", "JOB_COMPLETIONS": "4"}, Shard{}, false, true},
		{map[string]string{"JOB_COMPLETION_INDEX": "1"}, Shard{}, false, true},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "10"}, Shard{2, 10}, true, false},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "10", "SLURM_ARRAY_TASK_COUNT": "10", "SLURM_ARRAY_TASK_MIN": "1"}, Shard{10, 10}, true, false},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "10"}, Shard{}, false, true},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4"}, Shard{3, 4}, true, false},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"}, Shard{4, 4}, true, false},
		// Some tasks of an array rerun as a new job (sbatch --array=2, 2-3,
		// 1): the new array's count and first index are not the run's, and
		// would name another shard (--array=2: the whole run).
		{map[string]string{"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "1", "SLURM_ARRAY_TASK_MIN": "2", "SLURM_ARRAY_TASK_MAX": "2"}, Shard{}, false, true},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "2", "SLURM_ARRAY_TASK_MIN": "2", "SLURM_ARRAY_TASK_MAX": "3"}, Shard{}, false, true},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "1", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "1"}, Shard{}, false, true},
		// Not consecutive (--array=1-7:2): task 3 would be shard 3 of 4.
		{map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "7"}, Shard{}, false, true},
	} {
		s, ok, err := ShardFromEnv(func(k string) string { return c.env[k] })
		if (err != nil) != c.bad || ok != c.ok || (!c.bad && s != c.want) {
			t.Errorf("env %v: %v %v %v, want %v %v (error %v)", c.env, s, ok, err, c.want, c.ok, c.bad)
		}
	}
	for _, bad := range []string{"0/2", "3/2", "1/0", "a/b", "1/2/3", "01/2"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	if got := (Shard{2, 4}).Path("runs/x.jsonl"); got != "runs/x.shard-2-of-4.jsonl" {
		t.Errorf("shard path %s", got)
	}
}

// TestShardsMerge: shards split the units disjointly, and their merge
// equals the unsharded run; merging records of different experiments is
// refused.
func TestShardsMerge(t *testing.T) {
	m := loadModel(t, tinyModelDir(t, 5))
	ctx := context.Background()
	dir := t.TempDir()
	samples := []int{0, 1, 2, 3, 4}
	whole := pgdConfig(m, filepath.Join(dir, "whole.jsonl"), samples, 50)
	whole.Eps = []float64{0.1, 0.3}
	if err := RunAttack(ctx, whole, nil); err != nil {
		t.Fatal(err)
	}
	var shards []string
	for k := 1; k <= 3; k++ {
		c := whole
		c.Out, c.Shard, c.WitnessDir = filepath.Join(dir, "run.jsonl"), Shard{k, 3}, ""
		if err := RunAttack(ctx, c, nil); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, c.Shard.Path(c.Out))
	}
	rep, err := Merge(filepath.Join(dir, "merged.jsonl"), shards, JoinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 10 || rep.Duplicates != 0 {
		t.Fatalf("merge report %+v", rep)
	}
	got, _ := ReadAttackRecords(filepath.Join(dir, "merged.jsonl"))
	want, _ := ReadAttackRecords(whole.Out)
	key := func(r AttackRecord) string { return AttackKey(r) }
	gm, wm := map[string]AttackRecord{}, map[string]AttackRecord{}
	for _, r := range got {
		gm[key(r)] = r
	}
	for _, r := range want {
		wm[key(r)] = r
	}
	if len(gm) != 10 || len(wm) != 10 {
		t.Fatalf("%d merged, %d whole", len(gm), len(wm))
	}
	for k, r := range wm {
		if !sameOutcome(r, gm[k]) {
			t.Fatalf("%s: whole %+v, merged %+v", k, r, gm[k])
		}
	}
	// Merging twice adds nothing.
	if rep, err := Merge(filepath.Join(dir, "merged.jsonl"), shards, JoinOptions{}); err != nil || rep.Records != 0 || rep.Duplicates != 10 {
		t.Fatalf("second merge: %+v, %v", rep, err)
	}
	// Another experiment's file is refused.
	other := whole
	other.Out, other.Settings.LR = filepath.Join(dir, "other.jsonl"), 0.05
	if err := RunAttack(ctx, other, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(filepath.Join(dir, "mixed.jsonl"), append(shards, other.Out), JoinOptions{}); err == nil || !strings.Contains(err.Error(), "another experiment") {
		t.Fatalf("mixed merge: %v", err)
	}
}

// TestShippedRecordsSummarise: the results files behind docs/results.md,
// written before schema 1, are read through the migration and summarise
// to exactly the tables the docs show.
func TestShippedRecordsSummarise(t *testing.T) {
	doc, err := os.ReadFile("../docs/results.md")
	if err != nil {
		t.Fatal(err)
	}
	atk, err := ReadAttackRecords("../docs/runs/mmnist-attack/attacks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(atk) != 1200 || atk[0].Sample != 7360 || atk[0].Data.Split != "test" || atk[0].SchemaVersion != SchemaVersion {
		t.Fatalf("%d records, first %+v", len(atk), atk[0])
	}
	as, err := SummariseAttacks(atk, t.TempDir(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), as.Table) {
		t.Fatalf("attack table differs from docs/results.md:\n%s", as.Table)
	}
	// The shipped rs run, the batched engine's headline.
	for _, f := range []string{"verify-rs/verify-rs.jsonl", "verify-rs/verify-batched-rs.jsonl", "verify-rnn/verify-batched-rnn.jsonl", "verify-crown/verify-crown-e12.jsonl", "verify-crown/verify-crown-e12-eps0.13.jsonl", "verify-crown/verify-crown-e12-eps0.13-wide-radii.jsonl", "verify-crown/verify-crown-eps0.25-w2.5e-4-eight-radii.jsonl", "verify-crown/verify-crown-eps0.25.jsonl", "showtell-verify/showtell-verify-100.jsonl"} {
		recs, err := ReadVerifyRecords("../docs/runs/" + f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := SummariseVerify(recs, t.TempDir(), "t")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), s.Table) {
			t.Fatalf("%s: verification table differs from docs/results.md:\n%s", f, s.Table)
		}
	}
	// The Multi30k translator's attacks.
	nmt, err := ReadAttackRecords("../docs/runs/nmt-m30k-attack/nmt-m30k-attacks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	m30k, err := filepath.Glob("../docs/runs/nmt-m30k-attack/nmt-m30k-*.jsonl")
	if err != nil || len(m30k) < 2 {
		t.Fatalf("Multi30k record files: %v (%v)", m30k, err)
	}
	for _, f := range m30k {
		recs, err := ReadAttackRecords(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if !r.Redacted || r.SrcText != "" || r.RefText != "" || r.SrcIDs != nil || r.AdvText != "" {
				t.Fatalf("%s: a Multi30k record quotes the corpus: sample %d, %s δ = %g", f, r.Sample, r.Method, r.Eps)
			}
		}
	}
	ns, err := SummariseTextAttacks(nmt, t.TempDir(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), ns.Table) {
		t.Fatalf("NMT table differs from docs/results.md:\n%s", ns.Table)
	}
	// A newer schema is refused, naming the file.
	p := filepath.Join(t.TempDir(), "new.jsonl")
	os.WriteFile(p, []byte(`{"schema_version":99}`+"\n"), 0o644)
	if _, err := ReadAttackRecords(p); err == nil || !strings.Contains(err.Error(), "schema_version 99") {
		t.Fatalf("schema 99: %v", err)
	}
}

func TestPickSamples(t *testing.T) {
	a, err := PickSamples(5, nil, 100, 1)
	if err != nil || len(a) != 5 {
		t.Fatal(a, err)
	}
	b, _ := PickSamples(5, nil, 100, 1)
	if !slices.Equal(a, b) {
		t.Fatal("same seed, other samples")
	}
	for _, c := range []struct {
		n       int
		indices []int
	}{{-5, []int{3}}, {0, nil}, {2, []int{1}}, {0, []int{100}}, {101, nil}} {
		if _, err := PickSamples(c.n, c.indices, 100, 1); err == nil {
			t.Errorf("PickSamples(%d, %v) accepted", c.n, c.indices)
		}
	}
}

func TestRecordsEncode(t *testing.T) {
	r := AttackRecord{SchemaVersion: SchemaVersion, MinRelMargin: margin(math.Inf(1))}
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("an infinite margin does not encode: %v", err)
	}
}

// TestResolveShard: --shard's k/n wins over the environment, which names
// the shard otherwise (an Indexed Job's 0-based index, one more); with
// neither the run is whole; either malformed is a SettingsError.
func TestResolveShard(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	job := env(map[string]string{"JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "4"})
	for _, tc := range []struct {
		spec   string
		getenv func(string) string
		want   Shard
	}{
		{"", env(nil), Whole},
		{"3/5", env(nil), Shard{3, 5}},
		{"3/5", job, Shard{3, 5}},
		{"", job, Shard{2, 4}},
	} {
		if got, err := ResolveShard(tc.spec, tc.getenv); err != nil || got != tc.want {
			t.Errorf("%q: %v, %v; want %v", tc.spec, got, err, tc.want)
		}
	}
	for _, bad := range []struct {
		spec   string
		getenv func(string) string
	}{{"5/3", env(nil)}, {"x", env(nil)}, {"", env(map[string]string{"JOB_COMPLETION_INDEX": "7", "JOB_COMPLETIONS": "4"})}} {
		if _, err := ResolveShard(bad.spec, bad.getenv); !errors.As(err, new(SettingsError)) {
			t.Errorf("%q: %v, want a SettingsError", bad.spec, err)
		}
	}
}
