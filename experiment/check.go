package experiment

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/internal/oneline"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/results"
	"github.com/lenspec/lenspec/safetensors"
	"github.com/lenspec/lenspec/spec"
	"github.com/lenspec/lenspec/verify"
)

// Outcomes of a checked claim (CheckedRecord.Outcome).
const (
	// CheckAgree: the witness lies in the record's perturbation set and
	// replays in float64 to the tokens, length and verdict recorded.
	CheckAgree = "agree"
	// CheckDisagree: the witness lies outside the set, or replays to
	// another output, or does not support the verdict (a tie on its path).
	CheckDisagree = "disagree"
	// CheckNotReplayable: no witness, model or clean input to replay it
	// with (Reason says which).
	CheckNotReplayable = "not replayable"
	// CheckProof: a robust verdict or a proven worst-case length, which no
	// witness shows: only rerunning the verifier re-derives it.
	CheckProof = "proof"
)

// CheckOptions are lenspec results check's settings.
type CheckOptions struct {
	// Witnesses are further directories to look for witness files in
	// (by file name, directly or under STEM.witnesses/ for a results file
	// STEM.jsonl).
	Witnesses []string
	// ModelDirs are model directories, or directories of them, searched for
	// the model a record names by its sha256 (default: "models").
	ModelDirs []string
	// Rederive, if set, is a directory where a vulnerable verdict's
	// missing witness is made again: the record's unit is rerun with the
	// record's own model, data and settings (RunVerify) into
	// Rederive/STEM.jsonl, its witnesses into Rederive/STEM.witnesses/,
	// which the check then reads. Attack records and worst-case length
	// searches (minutes each) are not rerun.
	Rederive string
	Logf     func(format string, args ...any)

	// data, if set, replaces the data sets a record's DataRef names
	// (tests).
	data func(ref DataRef, in model.InputSpec) (Data, error)
}

// CheckedRecord is one record's claim and how its replay compares.
type CheckedRecord struct {
	File   string  `json:"file"`
	Record int     `json:"record"` // 1-based position in the file
	Kind   string  `json:"kind"`   // attack, text-attack, verify, bound or exhaust
	Sample int     `json:"sample"`
	Eps    float64 `json:"eps"`
	Method string  `json:"method,omitempty"`
	// Claim is what the record says: a replayed length, a verdict.
	Claim   string `json:"claim"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	// Witness is where the witness was read (a file, or ARCHIVE:NAME).
	Witness string `json:"witness,omitempty"`
	// Length is the replayed output's length, MinRelMargin the smallest
	// relative top-2 logit margin on its path (Tie: below
	// model.RelTieMargin).
	Length       *int     `json:"length,omitempty"`
	MinRelMargin *float64 `json:"min_rel_margin,omitempty"`
	Tie          bool     `json:"tie,omitempty"`
}

// CheckFile counts one results file's outcomes.
type CheckFile struct {
	File          string `json:"file"`
	Claims        int    `json:"claims"`
	Agree         int    `json:"agree"`
	Disagree      int    `json:"disagree"`
	NotReplayable int    `json:"not_replayable"`
	Proofs        int    `json:"proofs"`
	Ties          int    `json:"ties"`
}

// CheckReport is lenspec results check's report: a row per file and
// every checked record.
type CheckReport struct {
	Files   []CheckFile     `json:"files"`
	Records []CheckedRecord `json:"records"`
}

// Disagreements counts the records whose replay contradicts them.
func (r *CheckReport) Disagreements() int {
	n := 0
	for _, f := range r.Files {
		n += f.Disagree
	}
	return n
}

// WriteText writes the table, every disagreement, and the reasons
// records were not replayable with their counts.
func (r *CheckReport) WriteText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "file\tclaims\tagree\tdisagree\tnot replayable\tproofs\tties")
	var tot CheckFile
	for _, f := range r.Files {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", f.File, f.Claims, f.Agree, f.Disagree, f.NotReplayable, f.Proofs, f.Ties)
		tot.Claims, tot.Agree, tot.Disagree, tot.NotReplayable, tot.Proofs, tot.Ties = tot.Claims+f.Claims, tot.Agree+f.Agree,
			tot.Disagree+f.Disagree, tot.NotReplayable+f.NotReplayable, tot.Proofs+f.Proofs, tot.Ties+f.Ties
	}
	if len(r.Files) > 1 {
		fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t%d\t%d\n", tot.Claims, tot.Agree, tot.Disagree, tot.NotReplayable, tot.Proofs, tot.Ties)
	}
	tw.Flush()
	reasons := map[string]int{}
	for _, c := range r.Records {
		switch c.Outcome {
		case CheckDisagree:
			fmt.Fprintf(w, "disagree: %s record %d (sample %d, δ %g): %s; %s\n", c.File, c.Record, c.Sample, c.Eps, c.Claim, c.Reason)
		case CheckNotReplayable:
			reasons[c.Reason]++
		}
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if reasons[keys[i]] != reasons[keys[j]] {
			return reasons[keys[i]] > reasons[keys[j]]
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		fmt.Fprintf(w, "not replayable (%d): %s\n", reasons[k], k)
	}
	if tot.Proofs > 0 {
		fmt.Fprintln(w, "proofs (robust verdicts, proven bounds) have no witness: rerun lenspec verify to re-derive them")
	}
}

// CheckRecords checks every claim in the results files: a witness file a
// record names (an image attack's adversarial input, a vulnerable
// verdict's or a worst-case length search's witness) is found, checked to
// lie in the record's perturbation set (exactly: the L∞ ball around the
// clean input, within the input range) and replayed in float64 through
// the model the record names by its sha256, and its output compared with
// the record's. src gives the clean inputs.
func CheckRecords(ctx context.Context, src Sources, files []string, opt CheckOptions) (*CheckReport, error) {
	if len(opt.ModelDirs) == 0 {
		opt.ModelDirs = []string{"models"}
	}
	c := &checker{src: src, opt: opt, models: map[string]*Model{}, digests: map[string]string{}, data: map[string]Data{}}
	rep := &CheckReport{}
	for _, path := range files {
		kind, err := FileKind(path)
		if err != nil {
			return nil, err
		}
		row := CheckFile{File: path}
		var recs []CheckedRecord
		switch kind {
		case "verify":
			recs, err = checkFile(ctx, path, ReadVerifyRecords, func(w *witnessStore, r VerifyRecord) (CheckedRecord, bool) {
				return c.verifyRecord(ctx, path, w, r)
			}, c)
		case "attack", "text-attack":
			recs, err = checkFile(ctx, path, ReadAttackRecords, func(w *witnessStore, r AttackRecord) (CheckedRecord, bool) {
				return c.attackRecord(ctx, w, r)
			}, c)
		case exhaustKind:
			recs, err = checkFile(ctx, path, results.Read[ExhaustRecord], func(_ *witnessStore, r ExhaustRecord) (CheckedRecord, bool) {
				return c.exhaustRecord(ctx, r)
			}, c)
		}
		if err != nil {
			return nil, err
		}
		for _, cr := range recs {
			row.Claims++
			switch cr.Outcome {
			case CheckAgree:
				row.Agree++
			case CheckDisagree:
				row.Disagree++
			case CheckNotReplayable:
				row.NotReplayable++
			case CheckProof:
				row.Proofs++
			}
			if cr.Tie {
				row.Ties++
			}
		}
		c.logf("check: %s: %d claims, %d agree, %d disagree, %d not replayable, %d proofs", path, row.Claims, row.Agree, row.Disagree, row.NotReplayable, row.Proofs)
		rep.Files = append(rep.Files, row)
		rep.Records = append(rep.Records, recs...)
	}
	return rep, nil
}

// checkFile checks the claims of the records read reads from path.
func checkFile[R any](ctx context.Context, path string, read func(string) ([]R, error), check func(*witnessStore, R) (CheckedRecord, bool), c *checker) ([]CheckedRecord, error) {
	rs, err := read(path)
	if err != nil {
		return nil, err
	}
	w := c.witnesses(path)
	var recs []CheckedRecord
	for i, r := range rs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if cr, ok := check(w, r); ok {
			cr.File, cr.Record = path, i+1
			recs = append(recs, cr)
		}
	}
	return recs, nil
}

// checker holds what the check of several files shares: the models by
// digest and the data sets.
type checker struct {
	src     Sources
	opt     CheckOptions
	models  map[string]*Model // by digest
	digests map[string]string // model directory → digest ("" unreadable)
	data    map[string]Data
}

func (c *checker) logf(format string, args ...any) {
	if c.opt.Logf != nil {
		c.opt.Logf(format, args...)
	}
}

// verifyRecord checks a verification record's claim: a vulnerable
// verdict's witness, a worst-case length search's witnessed lower bound;
// robust verdicts and proven bounds are proofs. ok is false for a record
// that claims nothing (unknown, failed).
func (c *checker) verifyRecord(ctx context.Context, path string, w *witnessStore, r VerifyRecord) (CheckedRecord, bool) {
	cr := CheckedRecord{Kind: "verify", Sample: r.Sample, Eps: r.Eps}
	if r.Bound != nil {
		cr.Kind = "bound"
	}
	switch {
	case r.Error != "":
		return cr, false
	case r.Verdict == string(verify.Robust), r.Bound != nil && r.WitnessLength == nil && r.Bound.Upper != nil:
		cr.Claim, cr.Outcome = r.Verdict, CheckProof
		return cr, true
	case r.WitnessLength == nil:
		return cr, false
	}
	l := *r.WitnessLength
	if r.Bound != nil {
		cr.Claim = fmt.Sprintf("a witness of %d tokens (worst-case length ≥ %d)", l, r.Bound.Lower)
	} else {
		cr.Claim = fmt.Sprintf("vulnerable: a witness of %d tokens > K̂ %d", l, r.K)
	}
	m, x0, why := c.unit(ctx, r.Model, r.ModelSHA256, r.Data, r.Sample)
	if why != "" {
		return notReplayable(cr, why), true
	}
	name, kh := filepath.Base(r.Witness), keyHash(VerifyKey(r))
	x, where, err := w.find(r.Witness, name, kh, m.D64.Input())
	rerun := ""
	if err == nil && where == "" && c.opt.Rederive != "" && r.Bound == nil {
		rerun = c.rederive(ctx, path, m, r)
		w.refresh()
		x, where, err = w.find(r.Witness, name, kh, m.D64.Input())
	}
	if why := witnessProblem(where, err); why != "" {
		if rerun != "" {
			why += " (" + rerun + ")"
		}
		return notReplayable(cr, why), true
	}
	cr.Witness = where
	maxSteps := r.Settings.MaxSteps
	full, ok := c.replay(ctx, &cr, m, x0, x, r.Eps, maxSteps)
	if !ok {
		return cr, true
	}
	var problems []string
	if r.Bound == nil {
		// The verifier's own test of a witness (verify.replayCandidate):
		// more than K̂ tokens within the first K̂ + 1 steps, no tie there.
		head, err := model.Decode(ctx, m.D64, model.Batch[float64]{X: x}, min(stepCap(maxSteps, m), r.K+1))
		if err != nil {
			return notReplayable(cr, "replay: "+oneline.Fold(err.Error())), true
		}
		if !spec.Exceeds(head[0], r.K) || head[0].Tie() {
			problems = append(problems, fmt.Sprintf("not vulnerable: %d tokens within the first %d steps, relative margin %.3g", len(head[0].Tokens), r.K+1, head[0].MinRelMargin))
		}
	} else if l < r.Bound.Lower {
		problems = append(problems, fmt.Sprintf("the witness's %d tokens are fewer than the lower bound %d", l, r.Bound.Lower))
	}
	problems = append(problems, compareOutput(full, l, r.WitnessTokens, nil, r.WitnessNonFinite)...)
	return judge(cr, problems), true
}

// attackRecord checks an attack record's replayed output against its
// witness. ok is false for a record that names no witness and claims no
// success (a failed search leaves nothing to replay).
func (c *checker) attackRecord(ctx context.Context, w *witnessStore, r AttackRecord) (CheckedRecord, bool) {
	cr := CheckedRecord{Kind: "attack", Sample: r.Sample, Eps: r.Eps, Method: r.Method}
	if r.IsText() {
		cr.Kind = "text-attack"
	}
	if r.Error != "" || (r.Witness == "" && !r.Success) {
		return cr, false
	}
	cr.Claim = fmt.Sprintf("%d tokens", r.AdvLength)
	if !r.Stopped {
		cr.Claim = fmt.Sprintf("≥ %d tokens (no eos)", r.AdvLength)
	}
	if r.Success {
		cr.Claim += fmt.Sprintf(" > K̂ %d", r.K)
	}
	switch {
	case r.IsText():
		return notReplayable(cr, "a text attack: not checked (its adversarial source needs the corpus's sentence, which a redacted record leaves out)"), true
	case r.Witness == "":
		return notReplayable(cr, "the record names no witness"), true
	}
	m, x0, why := c.unit(ctx, r.Model, r.ModelSHA256, r.Data, r.Sample)
	if why != "" {
		return notReplayable(cr, why), true
	}
	x, where, err := w.find(r.Witness, filepath.Base(r.Witness), keyHash(AttackKey(r)), m.D64.Input())
	if why := witnessProblem(where, err); why != "" {
		return notReplayable(cr, why), true
	}
	cr.Witness = where
	full, ok := c.replay(ctx, &cr, m, x0, x, r.Eps, r.Settings.MaxSteps)
	if !ok {
		return cr, true
	}
	problems := compareOutput(full, r.AdvLength, r.AdvTokens, &r.Stopped, r.NonFinite)
	if success := spec.Exceeds(full, r.K) && !full.Tie(); success != r.Success {
		problems = append(problems, fmt.Sprintf("success %v, the record says %v", success, r.Success))
	}
	return judge(cr, problems), true
}

// exhaustRecord checks a translator's one-substitution search: its
// witness (the substituted source, in the record) must differ from the
// sentence in exactly the recorded position, by a token that is not a
// special one, and decode in float64 to the recorded length; a vulnerable
// verdict must exceed K̂ with no tie. A robust verdict, or a bound with no
// substitution longer than the sentence's own output, is a proof: only
// rerunning the search re-derives it.
func (c *checker) exhaustRecord(ctx context.Context, r ExhaustRecord) (CheckedRecord, bool) {
	cr := CheckedRecord{Kind: exhaustKind, Sample: r.Sample, Method: r.Mode}
	if r.Error != "" {
		return cr, false
	}
	if r.Substitution == nil {
		cr.Claim, cr.Outcome = fmt.Sprintf("%s: no substitution found", r.Mode), CheckProof
		if r.Verdict != "" {
			cr.Claim = r.Verdict
		}
		return cr, true
	}
	cr.Claim = fmt.Sprintf("%d tokens", r.Length)
	if r.Verdict != "" {
		cr.Claim = fmt.Sprintf("%s: %d tokens > K̂ %d", r.Verdict, r.Length, *r.MaxLen)
		if r.Verdict == string(verify.Robust) {
			cr.Claim, cr.Outcome = r.Verdict, CheckProof
			return cr, true
		}
	}
	m, why := c.model(r.Model, r.ModelSHA256)
	if why != "" {
		return notReplayable(cr, why), true
	}
	sub, x := r.Substitution, r.Substitution.IDs
	var problems []string
	diff := 0
	for i := range x {
		if i < len(r.SourceIDs) && x[i] != r.SourceIDs[i] {
			diff++
		}
	}
	in := m.D64.Input()
	switch {
	case len(x) != len(r.SourceIDs) || diff != 1 || sub.Position < 0 || sub.Position >= len(x) || x[sub.Position] != sub.To || r.SourceIDs[sub.Position] != sub.From:
		problems = append(problems, fmt.Sprintf("the witness is not the sentence with token %d at position %d", sub.To, sub.Position))
	case sub.To < 0 || sub.To >= in.Vocab || slices.Contains(in.Special, sub.To):
		problems = append(problems, fmt.Sprintf("token %d is not one a substitution may use", sub.To))
	}
	if len(problems) > 0 {
		return judge(cr, problems), true
	}
	res, err := model.Decode(ctx, m.D64, model.Batch[float64]{Tokens: [][]int{x}}, r.MaxSteps)
	if err != nil {
		return notReplayable(cr, "replay: "+oneline.Fold(err.Error())), true
	}
	l, mr := len(res[0].Tokens), margin(res[0].MinRelMargin)
	cr.Length, cr.MinRelMargin, cr.Tie = &l, &mr, res[0].Tie()
	problems = compareOutput(res[0], r.Length, nil, &r.Stopped, r.NonFinite > 0)
	if r.Verdict == string(verify.Vulnerable) && (l <= *r.MaxLen || res[0].Tie()) {
		problems = append(problems, fmt.Sprintf("vulnerable, but the witness replays to %d tokens against K̂ %d (tie %v)", l, *r.MaxLen, res[0].Tie()))
	}
	return judge(cr, problems), true
}

// replay checks x lies in S(x0, eps) ∩ [min, max]ⁿ exactly and decodes it
// in float64 with the step cap maxSteps (0: the model's), recording the
// length and margins in cr. ok is false when cr is decided already
// (outside the set: disagree; a decoding failure: not replayable).
func (c *checker) replay(ctx context.Context, cr *CheckedRecord, m *Model, x0, x []float64, eps float64, maxSteps int) (model.Result, bool) {
	in := m.D64.Input()
	ball, err := spec.NewBall(x0, eps, in.Min, in.Max)
	if err != nil {
		*cr = notReplayable(*cr, "the record's set: "+oneline.Fold(err.Error()))
		return model.Result{}, false
	}
	if !ball.Contains(x) {
		cr.Outcome, cr.Reason = CheckDisagree, "the witness lies outside the perturbation set ("+ball.Describe()+"): "+outside(ball, x)
		return model.Result{}, false
	}
	res, err := model.Decode(ctx, m.D64, model.Batch[float64]{X: x}, stepCap(maxSteps, m))
	if err != nil {
		*cr = notReplayable(*cr, "replay: "+oneline.Fold(err.Error()))
		return model.Result{}, false
	}
	l, mr := len(res[0].Tokens), margin(res[0].MinRelMargin)
	cr.Length, cr.MinRelMargin, cr.Tie = &l, &mr, res[0].Tie()
	return res[0], true
}

// outside names the first coordinate of x outside ball, and by how much.
func outside(ball spec.Ball, x []float64) string {
	for i, v := range x {
		if lo, hi := ball.Bounds(i); !(v >= lo && v <= hi) {
			return fmt.Sprintf("value %d is %v, outside [%v, %v]", i, v, lo, hi)
		}
	}
	return "its size differs"
}

// stepCap is the step cap a record ran with (0: the model's).
func stepCap(maxSteps int, m *Model) int {
	if maxSteps <= 0 {
		return m.D64.MaxSteps()
	}
	return maxSteps
}

// compareOutput lists how a replay differs from the recorded output:
// length, tokens (nil: not recorded), whether it stopped (nil: not
// recorded) and whether it met non-finite logits.
func compareOutput(r model.Result, length int, tokens []int, stopped *bool, nonFinite bool) []string {
	var p []string
	if len(r.Tokens) != length {
		p = append(p, fmt.Sprintf("replays to %d tokens, the record says %d", len(r.Tokens), length))
	} else if tokens != nil && !slices.Equal(r.Tokens, tokens) {
		p = append(p, fmt.Sprintf("replays to tokens %v, the record says %v", r.Tokens, tokens))
	}
	if stopped != nil && r.Stopped != *stopped {
		p = append(p, fmt.Sprintf("eos reached %v, the record says %v", r.Stopped, *stopped))
	}
	if r.NonFinite != nonFinite {
		p = append(p, fmt.Sprintf("non-finite logits %v, the record says %v", r.NonFinite, nonFinite))
	}
	return p
}

func judge(cr CheckedRecord, problems []string) CheckedRecord {
	cr.Outcome = CheckAgree
	if len(problems) > 0 {
		cr.Outcome, cr.Reason = CheckDisagree, strings.Join(problems, "; ")
	}
	return cr
}

func notReplayable(cr CheckedRecord, why string) CheckedRecord {
	cr.Outcome, cr.Reason = CheckNotReplayable, why
	return cr
}

// witnessProblem says why a witness cannot be replayed: missing
// (where == ""), or unreadable.
func witnessProblem(where string, err error) string {
	switch {
	case err != nil:
		return "witness unreadable: " + oneline.Fold(err.Error())
	case where == "":
		return "witness missing"
	}
	return ""
}

// unit finds the model a record names (by digest) and its clean input;
// why says what is missing.
func (c *checker) unit(ctx context.Context, path, digest string, ref DataRef, sample int) (m *Model, x0 []float64, why string) {
	m, d, why := c.unitData(ctx, path, digest, ref, sample)
	if why != "" {
		return nil, nil, why
	}
	x0, _ = d.sample(sample)
	return m, x0, ""
}

// unitData finds the model a record names (by digest) and the data set
// its sample is in; why says what is missing.
func (c *checker) unitData(ctx context.Context, path, digest string, ref DataRef, sample int) (*Model, Data, string) {
	m, why := c.model(path, digest)
	if why != "" {
		return nil, Data{}, why
	}
	d, why := c.dataFor(ctx, m, ref)
	if why != "" {
		return nil, Data{}, why
	}
	if sample < 0 || sample >= d.Source.Len() {
		return nil, Data{}, fmt.Sprintf("sample %d outside the %s split of %d", sample, ref.Split, d.Source.Len())
	}
	return m, d, ""
}

// model returns the model of digest: the record's own path if it holds
// that model, else one of ModelDirs (a model directory or a directory of
// them). A schema-0 record has no digest: its path, or a model of that
// base name in ModelDirs, is taken as it is.
func (c *checker) model(path, digest string) (*Model, string) {
	if m, ok := c.models[digest]; ok && digest != "" {
		return m, ""
	}
	cands := []string{path}
	for _, dir := range c.opt.ModelDirs {
		if isModelDir(dir) {
			cands = append(cands, dir)
			continue
		}
		if digest == "" {
			cands = append(cands, filepath.Join(dir, filepath.Base(path)))
			continue
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				cands = append(cands, filepath.Join(dir, e.Name()))
			}
		}
	}
	for _, dir := range cands {
		if !isModelDir(dir) {
			continue
		}
		d, ok := c.digests[dir]
		if !ok {
			d, _ = model.Digest(dir)
			c.digests[dir] = d
		}
		if d == "" || (digest != "" && d != digest) {
			continue
		}
		if m, ok := c.models[d]; ok { // a schema-0 record's model, loaded for an earlier record
			return m, ""
		}
		m, err := LoadModel(dir)
		if err != nil {
			return nil, fmt.Sprintf("model %s: %s", dir, oneline.Fold(err.Error()))
		}
		c.models[d] = m
		return m, ""
	}
	if digest == "" {
		return nil, fmt.Sprintf("model %s not found (a schema-0 record: no sha256)", path)
	}
	return nil, fmt.Sprintf("model %s (sha256 %s…) not found here", path, digest[:min(12, len(digest))])
}

func isModelDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "config.json"))
	return err == nil
}

// dataFor is the data set a record's samples come from, for model m.
func (c *checker) dataFor(ctx context.Context, m *Model, ref DataRef) (Data, string) {
	if ref.SHA256 != "" {
		return Data{}, "the clean input is the user's own file, not a data set"
	}
	in := m.D64.Input()
	key := fmt.Sprintf("%s/%s/%d/%v", ref.Name, ref.Split, ref.Seed, in)
	if d, ok := c.data[key]; ok {
		return d, ""
	}
	if in.Kind != model.Continuous {
		return Data{}, fmt.Sprintf("a %v model's inputs are not checked", in.Kind)
	}
	get := func() (Data, error) { return c.src.ImageData(ctx, in, ref.Seed, ref.Split) }
	if c.opt.data != nil {
		get = func() (Data, error) { return c.opt.data(ref, in) }
	}
	d, err := get()
	if err != nil {
		return Data{}, "clean input: " + oneline.Fold(err.Error())
	}
	if d.Ref.Name != ref.Name {
		return Data{}, fmt.Sprintf("data set %q: this model runs on %q", ref.Name, d.Ref.Name)
	}
	c.data[key] = d
	return d, ""
}

// rederive reruns a verification record's unit with its own settings,
// into opt.Rederive/STEM.jsonl and its witnesses beside it (a rerun
// resumes there), and says how the rerun ended when it found no witness.
func (c *checker) rederive(ctx context.Context, path string, m *Model, r VerifyRecord) string {
	d, why := c.dataFor(ctx, m, r.Data)
	if why != "" {
		return "not re-derived: " + why
	}
	out, wdir := rederivePaths(c.opt.Rederive, path)
	rr, ok, err := rerunUnit(ctx, m, d, r, out, wdir)
	switch {
	case err != nil:
		return "not re-derived: " + oneline.Fold(err.Error())
	case !ok:
		return fmt.Sprintf("re-derived in %s: the rerun's record has another key (the settings do not reproduce it)", out)
	}
	return fmt.Sprintf("re-derived in %s: verdict %s, %s", out, rr.Verdict, rr.Reason)
}

// rederivePaths are where rederive writes the records and witnesses of
// the results file path: DIR/STEM.jsonl and DIR/STEM.witnesses.
func rederivePaths(dir, path string) (out, witnesses string) {
	s := filepath.Join(dir, filepath.Base(stem(path)))
	return s + ".jsonl", s + ".witnesses"
}

// witnessStore finds the witnesses of one results file STEM.jsonl: in
// STEM.witnesses/ or the archive STEM.witnesses.tar.gz beside it, in the
// directories CheckOptions names (and their STEM.witnesses/), and at the
// path the record gives, as given or relative to the results file.
type witnessStore struct {
	dir     string   // the results file's directory
	dirs    []string // directories holding witness files
	archive string
	files   map[string]string // file name → path
	members map[string][]byte // file name → an archive member's bytes
	byKey   map[string]string // key hash → file name
	err     error             // the archive's, reported on lookup
}

func (c *checker) witnesses(path string) *witnessStore {
	base := filepath.Base(stem(path))
	dir := filepath.Dir(path)
	w := &witnessStore{dir: dir, archive: filepath.Join(dir, base+".witnesses.tar.gz")}
	for _, d := range c.opt.Witnesses {
		w.dirs = append(w.dirs, d, filepath.Join(d, base+".witnesses"))
	}
	if c.opt.Rederive != "" {
		_, wd := rederivePaths(c.opt.Rederive, path)
		w.dirs = append(w.dirs, wd)
	}
	w.dirs = append(w.dirs, filepath.Join(dir, base+".witnesses"))
	w.members = map[string][]byte{}
	w.refresh()
	w.err = w.readArchive() // once: nothing the check writes goes into it
	return w
}

// refresh lists the directories again (a rerun may have written a witness
// into one), files first, then the archive's members no file shadows.
func (w *witnessStore) refresh() {
	w.files, w.byKey = map[string]string{}, map[string]string{}
	for _, d := range w.dirs {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if n := e.Name(); strings.HasSuffix(n, ".safetensors") && !e.IsDir() {
				if _, ok := w.files[n]; !ok {
					w.files[n] = filepath.Join(d, n)
					w.index(n)
				}
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(w.members)) {
		if _, ok := w.files[n]; !ok {
			w.index(n)
		}
	}
}

// index files a witness name under its record key's hash, the last part
// of the name witnessName gives.
func (w *witnessStore) index(name string) {
	s := strings.TrimSuffix(name, ".safetensors")
	if i := strings.LastIndexByte(s, '-'); i >= 0 {
		if _, ok := w.byKey[s[i+1:]]; !ok {
			w.byKey[s[i+1:]] = name
		}
	}
}

// maxArchive caps an archive of witnesses read into memory.
const maxArchive = 1 << 30

func (w *witnessStore) readArchive() error {
	f, err := fileio.Open(w.archive)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", w.archive, err)
	}
	tr := tar.NewReader(zr)
	total := int64(0)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", w.archive, err)
		}
		n := filepath.Base(h.Name)
		if h.Typeflag != tar.TypeReg || !strings.HasSuffix(n, ".safetensors") {
			continue
		}
		if total += h.Size; total > maxArchive {
			return fmt.Errorf("%s: more than %d bytes of witnesses", w.archive, maxArchive)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", w.archive, h.Name, err)
		}
		if _, ok := w.files[n]; !ok {
			if _, ok := w.members[n]; !ok {
				w.members[n] = b
				w.index(n)
			}
		}
	}
}

// find reads the witness a record names (recorded: its path as recorded;
// name: its file name) or, failing that, the one of its key's hash, and
// checks its shape against in (its values are checked against the set by
// the caller). where is "" when there is none.
func (w *witnessStore) find(recorded, name, key string, in model.InputSpec) (x []float64, where string, err error) {
	in.Min, in.Max = math.Inf(-1), math.Inf(1) // the set's test is exact, and the caller's
	for _, p := range []string{recorded, filepath.Join(w.dir, recorded)} {
		if recorded != "" && fileExists(p) {
			x, err := ReadWitness(p, in)
			return x, p, err
		}
	}
	if _, ok := w.files[name]; !ok {
		if _, ok := w.members[name]; !ok {
			name = w.byKey[key]
		}
	}
	if p, ok := w.files[name]; ok {
		x, err := ReadWitness(p, in)
		return x, p, err
	}
	if b, ok := w.members[name]; ok {
		where = w.archive + ":" + name
		f, err := safetensors.Read(bytes.NewReader(b))
		if err != nil {
			return nil, where, fmt.Errorf("%s: %w", where, err)
		}
		x, err := witnessInput(where, f, in)
		return x, where, err
	}
	return nil, "", w.err
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
