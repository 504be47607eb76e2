package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
)

func TestVerifyCLI(t *testing.T) {
	dir := smallModel(t)
	out := filepath.Join(t.TempDir(), "v.jsonl")
	args := []string{"verify", "--model", dir, "--eps", "0.0001,0.5", "--index", "0,1", "--timeout", "20s", "--attack-steps", "20", "--out", out, "-q"}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	words := strings.Fields(stdout)
	if len(words) != 4 {
		t.Fatalf("stdout %q: want one word per sample", stdout)
	}
	recs, err := experiment.ReadVerifyRecords(out)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.Verdict != words[i] {
			t.Fatalf("record %d verdict %q, stdout %q", i, r.Verdict, words[i])
		}
		switch r.Verdict {
		case "vulnerable":
			if r.Witness == "" || r.WitnessLength == nil || *r.WitnessLength <= r.K {
				t.Fatalf("vulnerable record without a replayed witness longer than K̂: %+v", r)
			}
			if _, err := os.Stat(r.Witness); err != nil {
				t.Fatal(err)
			}
		case "robust":
			if r.Stage == "" {
				t.Fatalf("robust without the stage that proved it: %+v", r)
			}
		case "unknown":
		default:
			t.Fatalf("verdict %q", r.Verdict)
		}
	}
	// Resume: nothing left to do.
	code, stdout, _ = runCLI(t, args...)
	if code != 0 || strings.TrimSpace(stdout) != "" {
		t.Fatalf("rerun printed %q", stdout)
	}
}

// TestVerifyExperimentShards: two shards — one from --shard, one from a
// Kubernetes Indexed Job's environment — split the (δ, image) list into
// disjoint halves in their own files; the summary covers both, and their
// merge holds every record once.
func TestVerifyExperimentShards(t *testing.T) {
	dir := smallModel(t)
	out := t.TempDir()
	base := []string{"experiment", "mmnist-verify", "--model", dir, "--out", out, "--images", "3", "--eps", "0.0001,0.5",
		"--no-mip", "--attack-steps", "5", "--timeout", "20s", "-q"}
	if code, _, stderr := runCLI(t, append(base, "--shard", "1/2")...); code != 0 {
		t.Fatalf("shard 1/2: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLIEnv(t, map[string]string{"JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "2"}, append(base, "--json")...)
	if code != 0 {
		t.Fatalf("indexed job 1 of 2: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, " 0.5 |") || !strings.Contains(stdout, `"table"`) {
		t.Fatalf("summary %s", stdout)
	}
	seen := map[string]bool{}
	var files []string
	for _, f := range []string{"verify.shard-1-of-2.jsonl", "verify.shard-2-of-2.jsonl"} {
		p := filepath.Join(out, f)
		files = append(files, p)
		recs, err := experiment.ReadVerifyRecords(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 3 {
			t.Fatalf("%s: %d records, want 3 of the 6", f, len(recs))
		}
		for _, r := range recs {
			k := experiment.VerifyKey(r)
			if seen[k] {
				t.Fatalf("%s: record %s also in the other shard", f, k)
			}
			seen[k] = true
		}
	}
	merged := filepath.Join(out, "merged.jsonl")
	if code, _, stderr := runCLI(t, append([]string{"results", "merge", "--out", merged}, files...)...); code != 0 {
		t.Fatalf("merge: %s", stderr)
	}
	if recs, err := experiment.ReadVerifyRecords(merged); err != nil || len(recs) != 6 {
		t.Fatalf("merged %d records (%v), want 6", len(recs), err)
	}
	// A unit of shard 1 recorded as crashed: a rerun of the shard prints
	// the summary, where it counts as failed, then names the unit and the
	// command that retries it, and exits 1.
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(raw), "\n")
	var rec experiment.VerifyRecord
	if err := json.Unmarshal([]byte(first), &rec); err != nil {
		t.Fatal(err)
	}
	// Edited as text: the key is the record's own JSON text.
	verdict := fmt.Sprintf(`"verdict":%q`, rec.Verdict)
	crashed := `"verdict":"unknown","error":"the process died 2 times while running this sample","crashed":true`
	if err := os.WriteFile(files[0], []byte(strings.Replace(string(raw), verdict, crashed, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, append(base, "--shard", "1/2")...)
	want := fmt.Sprintf("%s: 1 unit recorded as crashed, not run again (sample %d at δ %g); `lenspec results retry %s`, then this command again, redoes them",
		files[0], rec.Sample, rec.Eps, files[0])
	if code != 1 || !strings.Contains(stdout, "| failed |") || !strings.Contains(stderr, want) {
		t.Fatalf("rerun with a crashed unit: exit %d, stdout %s, stderr %q; want 1, the summary, and %q", code, stdout, stderr, want)
	}
	for _, bad := range []string{"0/2", "3/2", "1/0", "a/b", "1/2/3"} {
		if code, _, _ := runCLI(t, "experiment", "mmnist-verify", "--model", dir, "--out", out, "--shard", bad); code != 2 {
			t.Fatalf("--shard %s: exit %d, want 2", bad, code)
		}
	}
}

// TestResultsSummaryOfShippedFiles: the results files of docs/runs, from
// before schema 1, summarise through the CLI.
func TestResultsSummaryOfShippedFiles(t *testing.T) {
	for _, f := range []string{"../../docs/runs/mmnist-attack/attacks.jsonl", "../../docs/runs/verify-rnn/verify.jsonl"} {
		code, stdout, stderr := runCLI(t, "results", "summary", "--out", t.TempDir(), f)
		if code != 0 || !strings.Contains(stdout, " 0.5 |") {
			t.Fatalf("%s: exit %d: %s %s", f, code, stdout, stderr)
		}
	}
}

// TestBoundCommand: bound prints {"lower", "upper"} per sample, certified
// where they meet; with --out it keeps resumable records; bad flags are
// usage errors.
func TestBoundCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "b.jsonl")
	code, stdout, stderr := runCLI(t, "bound", "--model", "../../models/mmnist-rnn-rs", "--eps", "0.01", "--index", "0", "--timeout", "20s", "--json", "-q")
	if code != 0 {
		t.Fatalf("bound: exit %d: %s", code, stderr)
	}
	var b struct {
		Lower     int
		Upper     *int
		Certified bool
	}
	if err := json.Unmarshal([]byte(stdout), &b); err != nil || b.Upper == nil || !b.Certified || *b.Upper != b.Lower || b.Lower < 1 {
		t.Fatalf("bound --json: %q (%v)", stdout, err)
	}
	for i := 0; i < 2; i++ { // the second run resumes: nothing new
		if code, _, stderr := runCLI(t, "bound", "--model", "../../models/mmnist-rnn-rs", "--eps", "0.01", "--index", "0", "--timeout", "20s", "--out", out, "-q"); code != 0 {
			t.Fatalf("bound --out: exit %d: %s", code, stderr)
		}
	}
	recs, err := experiment.ReadVerifyRecords(out)
	if err != nil || len(recs) != 1 || recs[0].Bound == nil || recs[0].Verdict != experiment.VerdictCertified {
		t.Fatalf("records %+v (%v)", recs, err)
	}
	if code, _, stderr := runCLI(t, "bound", "--model", "../../models/mmnist-rnn-rs", "--eps", "0.01", "--index", "0", "--max-len", "-3"); code != 2 {
		t.Fatalf("--max-len -3: exit %d: %s", code, stderr)
	}
}

// tinyBound is what bound --json prints for one sample.
type tinyBound struct {
	Lower int
	Upper *int
}

// saveTiny saves m, a 3-pixel captioner, and the input x as the user's
// own file; it returns the model directory, the model as the CLI loads it
// (weights stored as float32) and the input file.
func saveTiny(t *testing.T, m model.Decoder[float64], x []float64) (dir string, loaded model.Decoder[float64], input string) {
	t.Helper()
	dir = t.TempDir()
	if err := model.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	loaded, err := model.Load[float64](dir)
	if err != nil {
		t.Fatal(err)
	}
	input = filepath.Join(t.TempDir(), "mine.safetensors")
	if err := safetensors.WriteFile(input, &safetensors.File{Tensors: []safetensors.Tensor{safetensors.F64("input", []int{1, 1, 3}, x)}}); err != nil {
		t.Fatal(err)
	}
	return dir, loaded, input
}

// decideTimeout is the time limit of the tiny models' verify and bound
// calls whose verdict a test asserts. It is a cap, not a duration: alone,
// each call decides in seconds, but inside the whole suite on a loaded
// 2-vCPU machine the LSTM case once needed more than the 20 s each call
// had and answered unknown, which is not the behaviour under test.
const decideTimeout = "120s"

// runBound runs bound on the user's input at radius eps and returns its
// answer, which must have an upper end.
func runBound(t *testing.T, dir, input string, eps float64) tinyBound {
	t.Helper()
	code, stdout, stderr := runCLI(t, "bound", "--model", dir, "--eps", fmt.Sprint(eps), "--input", input, "--max-len", "10", "--timeout", decideTimeout, "--json", "-q")
	var b tinyBound
	if err := json.Unmarshal([]byte(stdout), &b); code != 0 || err != nil || b.Upper == nil {
		t.Fatalf("bound --input: exit %d, %q (%v): %s", code, stdout, err, stderr)
	}
	return b
}

// gridLongest is the longest output over a 21³ grid of the ball of radius
// eps around x (clipped to [-1, 1]).
func gridLongest(t *testing.T, m model.Decoder[float64], x []float64, eps float64) int {
	t.Helper()
	longest := 0
	const per = 21
	for i := 0; i < per*per*per; i++ {
		g := make([]float64, 3)
		for c, j := 0, i; c < 3; c, j = c+1, j/per {
			g[c] = math.Min(math.Max(x[c]-eps+2*eps*float64(j%per)/(per-1), -1), 1)
		}
		res, err := model.Decode(context.Background(), m, model.Batch[float64]{X: g}, 12)
		if err != nil {
			t.Fatal(err)
		}
		longest = max(longest, len(res[0].Tokens))
	}
	return longest
}

// verifyAtBoundEnds checks verify against the bound b: robust at K̂ =
// upper, vulnerable just below the lower end.
func verifyAtBoundEnds(t *testing.T, dir, input string, eps float64, b tinyBound) {
	t.Helper()
	verdict := func(k int) string {
		code, stdout, stderr := runCLI(t, "verify", "--model", dir, "--eps", fmt.Sprint(eps), "--input", input, "--max-len", fmt.Sprint(k),
			"--timeout", decideTimeout, "--out", filepath.Join(t.TempDir(), "v.jsonl"), "-q")
		if code != 0 {
			t.Fatalf("verify --input: exit %d: %s", code, stderr)
		}
		return strings.TrimSpace(stdout)
	}
	if v := verdict(*b.Upper); v != "robust" {
		t.Fatalf("verify at K̂ = upper %d: %s", *b.Upper, v)
	}
	if b.Lower > 0 {
		if v := verdict(b.Lower - 1); v != "vulnerable" {
			t.Fatalf("verify at K̂ = lower−1 = %d: %s", b.Lower-1, v)
		}
	}
}

// TestVerifyOwnInput: verify and bound take a user's own input file on a
// model that is not Multi-MNIST-shaped (three pixels, no convolution). The
// bound's upper end is never below what a grid over the box finds, verify
// agrees with it at K̂ = upper (robust) and, below the lower end, finds a
// witness; a file of the wrong shape is refused naming the file.
func TestVerifyOwnInput(t *testing.T) {
	cfg := model.DefaultCaptionerConfig()
	a := cfg.Arch.(*model.CaptionerConfig)
	a.Input = model.InputConfig{Channels: 1, Height: 1, Width: 3, Min: -1, Max: 1}
	a.Conv = nil
	a.FCHidden, a.Embedding, a.Hidden = 4, 3, 5
	cfg.Vocab = []string{"a", "b", "<eos>"}
	cfg.EOS, cfg.MaxSteps = 2, 12
	m, err := model.New[float64](&cfg, rand.New(rand.NewPCG(4, 4)))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 5))
	for _, p := range m.Params() {
		if len(p.W.Shape) == 1 {
			for i := range p.W.Data {
				p.W.Data[i] = 0.3 * rng.NormFloat64()
			}
		}
	}
	x := []float64{0.25, -0.5, 0.125}
	const eps = 0.3
	dir, m, input := saveTiny(t, m, x)
	b := runBound(t, dir, input, eps)
	// A grid over the box: nothing may decode more than upper.
	longest := gridLongest(t, m, x, eps)
	if longest > *b.Upper || b.Lower > *b.Upper {
		t.Fatalf("bound [%d, %d], but the grid finds %d tokens", b.Lower, *b.Upper, longest)
	}
	t.Logf("bound [%d, %d], grid %d", b.Lower, *b.Upper, longest)
	verifyAtBoundEnds(t, dir, input, eps, b)
	// Branch and bound alone (--bab --no-mip) never contradicts the grid,
	// and its records say it ran.
	for _, k := range []int{longest - 1, *b.Upper} {
		if k < 0 {
			continue
		}
		out := filepath.Join(t.TempDir(), "bab.jsonl")
		code, stdout, stderr := runCLI(t, "verify", "--model", dir, "--eps", fmt.Sprint(eps), "--input", input, "--max-len", fmt.Sprint(k),
			"--bab", "--no-mip", "--attack-steps", "0", "--timeout", "20s", "--out", out, "-q")
		v := strings.TrimSpace(stdout)
		if code != 0 || (v == "robust" && k < longest) || (v == "vulnerable" && k >= longest) {
			t.Fatalf("verify --bab --no-mip at K̂ = %d (grid %d): exit %d, %q: %s", k, longest, code, v, stderr)
		}
		raw, _ := os.ReadFile(out)
		if !strings.Contains(string(raw), `"bab":true`) {
			t.Fatalf("record without the bab setting: %s", raw)
		}
	}
	// The same problem as a spec file, and a box inside the ball (one
	// coordinate fixed) whose worst case cannot be longer.
	specDir := t.TempDir()
	writeSpec := func(name, body string) string {
		p := filepath.Join(specDir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ballSpec := writeSpec("ball.json", fmt.Sprintf(`{"model": %q, "input": %q, "eps": %v, "max_len": %d}`, dir, input, eps, *b.Upper))
	if code, stdout, stderr := runCLI(t, "verify", "--spec", ballSpec, "--timeout", decideTimeout, "-q"); code != 0 || strings.TrimSpace(stdout) != "robust" {
		t.Fatalf("verify --spec (ball, K̂ = upper): exit %d: %q %s", code, stdout, stderr)
	}
	boxSpec := writeSpec("box.json", fmt.Sprintf(`{"model": %q, "values": [0.25, -0.5, 0.125], "lower": [-0.05, -0.5, -0.175], "upper": [0.55, -0.5, 0.425], "max_len": 10}`, dir))
	code, stdout, stderr := runCLI(t, "bound", "--spec", boxSpec, "--timeout", decideTimeout, "--json", "-q")
	var bb tinyBound
	if err := json.Unmarshal([]byte(stdout), &bb); code != 0 || err != nil || bb.Upper == nil || *bb.Upper > *b.Upper || bb.Lower > *bb.Upper {
		t.Fatalf("bound --spec (box inside the ball): exit %d: %q %s (ball: [%d, %d])", code, stdout, stderr, b.Lower, *b.Upper)
	}
	for _, c := range []struct{ name, body, want string }{
		{"unknown.json", fmt.Sprintf(`{"model": %q, "values": [0, 0, 0], "eps": 0.1, "radius": 1}`, dir), "radius"},
		{"both.json", fmt.Sprintf(`{"model": %q, "values": [0, 0, 0], "eps": 0.1, "lower": [0, 0, 0], "upper": [0, 0, 0]}`, dir), "exactly one"},
		{"short.json", fmt.Sprintf(`{"model": %q, "values": [0, 0], "eps": 0.1}`, dir), "2 values"},
		{"outside.json", fmt.Sprintf(`{"model": %q, "values": [0, 0, 0], "lower": [0.1, 0, 0], "upper": [0.2, 0, 0]}`, dir), "outside its bounds"},
		// Wider than the input range [−1, 1]: refused as --eps is, below.
		{"wide.json", fmt.Sprintf(`{"model": %q, "values": [0, 0, 0], "eps": 5}`, dir), "radius 5 is wider than the input range [-1, 1]: at most 2"},
		{"nan.json", fmt.Sprintf(`{"model": %q, "values": [0, 0, 0], "eps": -1}`, dir), "radius -1 must be finite and non-negative"},
	} {
		p := writeSpec(c.name, c.body)
		if code, _, stderr := runCLI(t, "verify", "--spec", p); code != 1 || !strings.Contains(stderr, c.name) || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d: %s", c.name, code, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "verify", "--spec", ballSpec, "--eps", "0.1"); code != 2 {
		t.Errorf("--spec with --eps: exit %d: %s", code, stderr)
	}
	for _, cmd := range []string{"verify", "bound", "attack"} {
		code, _, stderr := runCLI(t, cmd, "--model", dir, "--eps", "2.5", "--input", input, "--out", filepath.Join(t.TempDir(), "w.jsonl"))
		if code != 2 || !strings.Contains(stderr, "radius 2.5 is wider than the input range [-1, 1]: at most 2") {
			t.Errorf("%s --eps 2.5: exit %d: %s", cmd, code, stderr)
		}
	}

	bad := filepath.Join(t.TempDir(), "bad.safetensors")
	if err := safetensors.WriteFile(bad, &safetensors.File{Tensors: []safetensors.Tensor{safetensors.F64("input", []int{1, 1, 4}, make([]float64, 4))}}); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "verify", "--model", dir, "--eps", "0.1", "--input", bad, "--out", filepath.Join(t.TempDir(), "v.jsonl")); code != 1 || !strings.Contains(stderr, "bad.safetensors") {
		t.Fatalf("a wrong-shape input: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "verify", "--model", dir, "--eps", "0.1", "--input", input, "--index", "0", "--out", filepath.Join(t.TempDir(), "v.jsonl")); code != 2 || !strings.Contains(stderr, "exactly one") {
		t.Fatalf("--input with --index: exit %d: %s", code, stderr)
	}
}

// TestVerifyRefusesTranslator: verify and bound from a spec file on a
// translator, a model that reads tokens, are refused at once with exit 2
// and one line naming the model directory and saying that verification
// takes image models, not an error about its input range; from flags, a
// radius (--eps) is refused in one line: a translator's search is over
// one substitution.
func TestVerifyRefusesTranslator(t *testing.T) {
	dir, err := filepath.Abs("../../models/nmt-m30k-de-en")
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(spec, []byte(fmt.Sprintf(`{"model": %q, "values": [5, 6, 7], "eps": 0.1, "max_len": 3}`, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "lenspec: " + dir + " is a bilstm-attention-translator, which reads text: verification takes image (continuous-input) models only\n"
	eps := "lenspec: --eps: a translator's search is over one substitution; it takes no radius\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "--model", dir, "--eps", "0.1", "--index", "0", "--out", filepath.Join(t.TempDir(), "v.jsonl")}, eps},
		{[]string{"bound", "--model", dir, "--eps", "0.1", "--index", "0"}, eps},
		{[]string{"verify", "--spec", spec}, want},
		{[]string{"bound", "--spec", spec}, want},
	} {
		if code, stdout, stderr := runCLI(t, append(tc.args, "-q")...); code != 2 || stdout != "" || stderr != tc.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// TestBoundTranslatorOneSubstitution: bound and verify on a translator
// run the exact search over one-substitution neighbours of the sentences
// given: exit 0, one record per sentence with the substitution, its
// float64 replay and the candidate counts, verify's verdict agreeing
// with bound's length; the image verifier's flags are refused with exit 2.
func TestBoundTranslatorOneSubstitution(t *testing.T) {
	// The tiny translator with its eos logit raised: outputs then stop at
	// lengths that vary with the substitution, below the 10-step cap.
	m, err := model.Load[float32](tinyTranslatorDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params() {
		if p.Name == "decoder.out.bias" {
			p.W.Data[m.EOS()] += 7.5
		}
	}
	dir := t.TempDir()
	if err := model.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "b.jsonl")
	code, stdout, stderr := runCLI(t, "bound", "--model", dir, "--text", "die katze", "--out", out, "-q")
	if code != 0 {
		t.Fatalf("bound: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rec experiment.ExhaustRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	s := rec.Substitution
	if rec.Mode != "bound" || s == nil || rec.ReplayLength == nil || *rec.ReplayLength != rec.Length ||
		rec.Candidates == 0 || rec.Decoded+rec.Pruned != rec.Candidates || s.IDs[s.Position] != s.To || rec.SourceIDs[s.Position] != s.From {
		t.Fatalf("record %s", b)
	}
	if !strings.HasPrefix(stdout, fmt.Sprintf("%d (clean %d): position %d ", rec.Length, rec.CleanLength, s.Position)) {
		t.Errorf("stdout %q", stdout)
	}
	// A rerun into the same file skips the sentence it holds.
	if code, stdout, stderr := runCLI(t, "bound", "--model", dir, "--text", "die katze", "--out", out, "-q"); code != 0 || stdout != "" {
		t.Errorf("rerun: exit %d, stdout %q, stderr %q; want 0 and nothing", code, stdout, stderr)
	}
	if again, err := os.ReadFile(out); err != nil || string(again) != string(b) {
		t.Errorf("rerun changed the records: %s", again)
	}
	if !rec.Stopped || rec.Length <= rec.CleanLength {
		t.Fatalf("longest output %d (stopped %v), clean %d: want a longer one, stopped", rec.Length, rec.Stopped, rec.CleanLength)
	}
	// results check replays the witness the record holds; a record whose
	// claimed length is wrong disagrees (exit 1); summary and merge say
	// they do not read these records (exit 1), rather than misread them.
	checked := func(path string) (int, experiment.CheckFile) {
		code, stdout, stderr := runCLI(t, "--json", "results", "check", "--model-dir", filepath.Dir(dir), path)
		var rep experiment.CheckReport
		if err := json.Unmarshal([]byte(stdout), &rep); (code == 0 || code == 1) && (err != nil || len(rep.Files) != 1) {
			t.Fatalf("check %s: exit %d, %v: %s%s", path, code, err, stdout, stderr)
		}
		if len(rep.Files) == 0 {
			return code, experiment.CheckFile{}
		}
		return code, rep.Files[0]
	}
	if code, f := checked(out); code != 0 || f.Claims != 1 || f.Agree != 1 {
		t.Errorf("check: exit %d, %+v; want one claim, agreeing", code, f)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(b), fmt.Sprintf(`"length":%d,`, rec.Length), fmt.Sprintf(`"length":%d,`, rec.Length+1), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, f := checked(bad); code != 1 || f.Disagree != 1 {
		t.Errorf("check of a wrong length: exit %d, %+v; want 1, one disagreeing", code, f)
	}
	for _, args := range [][]string{{"results", "summary", "--out", t.TempDir(), out}, {"results", "merge", "--out", filepath.Join(t.TempDir(), "m.jsonl"), out}} {
		if code, _, stderr := runCLI(t, args...); code != 1 || !strings.Contains(stderr, "one-substitution search records") {
			t.Errorf("%v: exit %d, stderr %q; want 1 saying it does not read them", args[:2], code, stderr)
		}
	}
	for _, k := range []int{rec.CleanLength, rec.Length - 1, rec.Length} {
		want := "vulnerable\n"
		if k >= rec.Length {
			want = "robust\n"
		}
		code, stdout, stderr := runCLI(t, "verify", "--model", dir, "--text", "die katze", "--max-len", fmt.Sprint(k), "-q")
		if code != 0 || stdout != want {
			t.Errorf("verify --max-len %d: exit %d, stdout %q, stderr %q; want 0, %q", k, code, stdout, stderr, want)
		}
	}
	for _, args := range [][]string{
		{"verify", "--model", dir, "--text", "die katze", "--timeout", "1s"},
		{"bound", "--model", dir, "--text", "die katze", "--max-len", "3"},
		{"bound", "--model", dir, "--text", "die katze", "--images", "3"},
	} {
		if code, _, stderr := runCLI(t, append(args, "-q")...); code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, stderr)
		}
	}
}
