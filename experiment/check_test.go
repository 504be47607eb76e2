package experiment

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/mnist"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
)

// checkTestOptions check records of testData's samples against the
// models in dirs.
func checkTestOptions(dirs ...string) CheckOptions {
	return CheckOptions{ModelDirs: dirs, data: func(DataRef, model.InputSpec) (Data, error) { return testData(20), nil }}
}

// vulnerableRun verifies testData's samples 0..4 at δ 1 with K̂ 1 on a
// tiny model (the warm start finds witnesses) into DIR/v.jsonl, and
// returns the model's directory, the model, DIR, the file and its
// vulnerable records.
func vulnerableRun(t *testing.T) (mdir string, m *Model, dir, out string, vul []VerifyRecord) {
	t.Helper()
	mdir = tinyModelDir(t, 6)
	m = loadModel(t, mdir)
	dir = t.TempDir()
	out = filepath.Join(dir, "v.jsonl")
	c := verifyConfig(m, out, []int{0, 1, 2, 3, 4})
	c.Eps, c.Settings.MaxLen, c.Settings.AttackSteps, c.Settings.Solver, c.Settings.BaB = []float64{1}, 1, 50, SolverNone, false
	if err := RunVerify(context.Background(), c, nil); err != nil {
		t.Fatal(err)
	}
	rs, err := ReadVerifyRecords(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Verdict == "vulnerable" {
			vul = append(vul, r)
		}
	}
	if len(vul) == 0 {
		t.Fatal("no vulnerable verdict to check")
	}
	return mdir, m, dir, out, vul
}

// TestCheckRecords: a vulnerable verdict whose witness replays as
// recorded agrees; a wrong claimed length or wrong claimed tokens, or a
// witness moved outside the set, disagree; a missing witness, a model of
// another sha256 or a missing model are not replayable; a robust verdict
// is a proof.
func TestCheckRecords(t *testing.T) {
	ctx := context.Background()
	mdir, m, dir, _, vul := vulnerableRun(t)
	v := vul[0]
	x, err := ReadWitness(v.Witness, m.D64.Input())
	if err != nil {
		t.Fatal(err)
	}
	x0, _ := testData(20).sample(v.Sample)
	// A witness one coordinate outside the ball, inside the input range.
	far := append([]float64(nil), x...)
	far[0] = x0[0] + v.Eps*1.5
	if far[0] > 1 {
		far[0] = x0[0] - v.Eps*1.5
	}
	if math.Abs(far[0]) > 1 {
		t.Fatalf("test set-up: coordinate 0 of sample %d cannot leave the ball inside the range", v.Sample)
	}
	writeWitness := func(name string, x []float64) string {
		p := filepath.Join(dir, name+".safetensors")
		if err := safetensors.WriteFile(p, &safetensors.File{Tensors: []safetensors.Tensor{safetensors.F64("input", m.D64.Input().Shape, x)}}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	farPath := writeWitness("far", far)
	with := func(f func(*VerifyRecord)) VerifyRecord {
		r := v
		f(&r)
		return r
	}
	robust := with(func(r *VerifyRecord) { r.Verdict, r.Witness, r.WitnessLength, r.WitnessTokens = "robust", "", nil, nil })
	for _, tc := range []struct {
		name       string
		rec        VerifyRecord
		dirs       []string
		outcome    string
		reasonPart string
	}{
		{"as recorded", v, []string{mdir}, CheckAgree, ""},
		{"claimed length wrong", with(func(r *VerifyRecord) { l := *r.WitnessLength + 1; r.WitnessLength = &l }), []string{mdir}, CheckDisagree, "the record says"},
		{"outside the set", with(func(r *VerifyRecord) { r.Witness = farPath }), []string{mdir}, CheckDisagree, "outside the perturbation set"},
		{"claimed tokens wrong", with(func(r *VerifyRecord) {
			r.WitnessTokens = slices.Clone(r.WitnessTokens)
			r.WitnessTokens[0] = (r.WitnessTokens[0] + 1) % m.D64.EOS()
		}), []string{mdir}, CheckDisagree, "replays to tokens"},
		{"witness missing", with(func(r *VerifyRecord) { r.Witness = filepath.Join(dir, "gone.safetensors") }), []string{mdir}, CheckNotReplayable, "witness missing"},
		{"model missing", v, []string{filepath.Join(dir, "nothing")}, CheckNotReplayable, "not found here"},
		{"model of another sha256", with(func(r *VerifyRecord) { r.ModelSHA256 = strings.Repeat("0", 64) }), []string{mdir}, CheckNotReplayable, "not found here"},
		{"robust", robust, []string{mdir}, CheckProof, ""},
	} {
		rec := tc.rec
		rec.Model = filepath.Join(dir, "moved") // found by sha256, not path
		p := writeRecords(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl", rec)
		rep, err := CheckRecords(ctx, Sources{}, []string{p}, checkTestOptions(tc.dirs...))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(rep.Records) != 1 {
			t.Fatalf("%s: %d records checked", tc.name, len(rep.Records))
		}
		got := rep.Records[0]
		if got.Outcome != tc.outcome || !strings.Contains(got.Reason, tc.reasonPart) {
			t.Errorf("%s: %s (%s), want %s (…%s…)", tc.name, got.Outcome, got.Reason, tc.outcome, tc.reasonPart)
		}
		if f := rep.Files[0]; f.Claims != 1 || f.Disagree != map[bool]int{true: 1}[tc.outcome == CheckDisagree] || rep.Disagreements() != f.Disagree {
			t.Errorf("%s: row %+v", tc.name, f)
		}
		if tc.outcome == CheckAgree && (got.Length == nil || *got.Length != *v.WitnessLength || got.MinRelMargin == nil || got.Tie) {
			t.Errorf("%s: length %v margin %v tie %v", tc.name, got.Length, got.MinRelMargin, got.Tie)
		}
	}
}

// TestCheckTie: on a model whose logits are all equal every step is a
// tie: an attack record claiming a success there disagrees, and the tie
// is flagged and counted.
func TestCheckTie(t *testing.T) {
	mdir := tinyModelDir(t, 7)
	d, err := model.Load[float64](mdir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Params() {
		clear(p.W.Data)
	}
	if err := model.Save(mdir, d); err != nil {
		t.Fatal(err)
	}
	m := loadModel(t, mdir)
	dir := t.TempDir()
	x0, _ := testData(20).sample(3)
	w := filepath.Join(dir, "w.safetensors")
	if err := safetensors.WriteFile(w, &safetensors.File{Tensors: []safetensors.Tensor{safetensors.F64("input", m.D64.Input().Shape, x0)}}); err != nil {
		t.Fatal(err)
	}
	r, err := model.Decode(context.Background(), m.D64, model.Batch[float64]{X: x0}, 0)
	if err != nil {
		t.Fatal(err)
	}
	rec := AttackRecord{SchemaVersion: SchemaVersion, Model: mdir, ModelSHA256: m.Digest, Data: testData(20).Ref, Sample: 3, Eps: 0.1, Method: MethodPGD,
		Settings: AttackSettings{MaxSteps: 8}, AttackImage: &AttackImage{AdvTokens: r[0].Tokens}, K: len(r[0].Tokens) - 1,
		AdvLength: len(r[0].Tokens), Stopped: r[0].Stopped, Success: true, Witness: w}
	p := writeRecords(t, dir, "a.jsonl", rec)
	rep, err := CheckRecords(context.Background(), Sources{}, []string{p}, checkTestOptions(mdir))
	if err != nil {
		t.Fatal(err)
	}
	got := rep.Records[0]
	if got.Outcome != CheckDisagree || !got.Tie || !strings.Contains(got.Reason, "success false") || rep.Files[0].Ties != 1 || *got.MinRelMargin >= model.RelTieMargin {
		t.Errorf("tie: %+v, row %+v", got, rep.Files[0])
	}
}

// TestCheckWitnessPlaces: a witness is found beside its results file in
// STEM.witnesses/ and in the archive STEM.witnesses.tar.gz, by its name or
// its key; a missing one is made again by --rederive and then agrees.
func TestCheckWitnessPlaces(t *testing.T) {
	ctx := context.Background()
	mdir, _, run, out, vul := vulnerableRun(t)
	shipped := t.TempDir()
	results := filepath.Join(shipped, "v.jsonl")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The records as shipped: witness paths into a run directory that is
	// gone.
	b = bytes.ReplaceAll(b, []byte(run), []byte("/elsewhere"))
	if err := os.WriteFile(results, b, 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(name string, opt CheckOptions) *CheckReport {
		t.Helper()
		opt.ModelDirs, opt.data = []string{mdir}, checkTestOptions().data
		rep, err := CheckRecords(ctx, Sources{}, []string{results}, opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return rep
	}
	if rep := check("nothing shipped", CheckOptions{}); rep.Files[0].NotReplayable != len(vul) {
		t.Fatalf("nothing shipped: %+v", rep.Files[0])
	}
	// The archive beside the results file.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, r := range vul {
		data, err := os.ReadFile(r.Witness)
		if err != nil {
			t.Fatal(err)
		}
		name := "v.witnesses/" + filepath.Base(r.Witness)
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	}
	tw.Close()
	zw.Close()
	archive := filepath.Join(shipped, "v.witnesses.tar.gz")
	if err := os.WriteFile(archive, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep := check("archive", CheckOptions{}); rep.Files[0].Agree != len(vul) || !strings.HasPrefix(rep.Records[0].Witness, archive+":") {
		t.Errorf("archive: %+v, %s", rep.Files[0], rep.Records[0].Reason)
	}
	os.Remove(archive)
	// --witnesses DIR, the files renamed but for their key.
	wdir := t.TempDir()
	for _, r := range vul {
		data, _ := os.ReadFile(r.Witness)
		name := "renamed" + filepath.Base(r.Witness)[strings.LastIndexByte(filepath.Base(r.Witness), '-'):]
		os.WriteFile(filepath.Join(wdir, name), data, 0o644)
	}
	if rep := check("--witnesses by key", CheckOptions{Witnesses: []string{wdir}}); rep.Files[0].Agree != len(vul) {
		t.Errorf("--witnesses: %+v", rep.Files[0])
	}
	// --rederive: the units verified again with their recorded settings.
	red := t.TempDir()
	rep := check("rederive", CheckOptions{Rederive: red})
	if rep.Files[0].Agree != len(vul) {
		t.Errorf("rederive: %+v %v", rep.Files[0], rep.Records)
	}
	if _, err := os.Stat(filepath.Join(red, "v.jsonl")); err != nil {
		t.Errorf("rederive wrote no records: %v", err)
	}
}

// TestShippedWitnessesAgree: the witnesses shipped beside results files
// in docs/runs (STEM.witnesses.tar.gz, re-derived from their records by
// scripts/ship-witnesses.sh) each replay, from the repository alone, to
// the vulnerable verdict of their record: every witness of an archive is
// some record's, and none disagrees.
func TestShippedWitnessesAgree(t *testing.T) {
	dir, err := mnist.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	archives, err := filepath.Glob("../docs/runs/*/*.witnesses.tar.gz")
	if err != nil || len(archives) < 20 {
		t.Fatalf("%d archives: %v", len(archives), err)
	}
	var files []string
	want := map[string]int{}
	for _, a := range archives {
		f := strings.TrimSuffix(a, ".witnesses.tar.gz") + ".jsonl"
		files = append(files, f)
		w := &witnessStore{archive: a, files: map[string]string{}, members: map[string][]byte{}, byKey: map[string]string{}}
		if err := w.readArchive(); err != nil {
			t.Fatal(err)
		}
		want[f] = len(w.members)
	}
	rep, err := CheckRecords(context.Background(), Sources{MNISTDir: dir}, files, CheckOptions{ModelDirs: []string{"../models"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Files {
		if f.Agree != want[f.File] || f.Disagree != 0 {
			t.Errorf("%s: %+v, %d witnesses shipped", f.File, f, want[f.File])
		}
	}
	for _, r := range rep.Records {
		if r.Outcome == CheckAgree && !strings.HasPrefix(r.Witness, strings.TrimSuffix(r.File, ".jsonl")+".witnesses.tar.gz:") {
			t.Errorf("%s record %d: witness read from %s", r.File, r.Record, r.Witness)
		}
	}
}
