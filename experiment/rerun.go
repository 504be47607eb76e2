package experiment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lenspec/lenspec/internal/oneline"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/verify"
	"github.com/spf13/pflag"
)

// Outcomes of a rerun sample (RerunRow.Outcome).
const (
	// RerunSame: the rerun reached the recorded verdict (a worst-case
	// length search: the same certified length, or the same open verdict).
	RerunSame = "same"
	// RerunFlip: the verdicts contradict each other: robust against
	// vulnerable, or worst-case length brackets that do not meet. One of
	// the two runs is unsound.
	RerunFlip = "flip"
	// RerunDecidedDifferently: unknown against robust or vulnerable
	// (certified against open): one run decided what the other left open
	// within its time limit. Time limits move these, so they are reported,
	// not failed.
	RerunDecidedDifferently = "decided differently"
	// RerunFailed: the rerun recorded an error, or no record of the
	// record's key (its settings do not reproduce it).
	RerunFailed = "failed"
)

// DefaultRerunBudget is lenspec results rerun's --budget: the recorded
// seconds the chosen samples may add up to.
const DefaultRerunBudget = 1200

// RerunOptions are lenspec results rerun's settings.
type RerunOptions struct {
	// Samples is how many records to rerun (at most).
	Samples int
	// Budget caps the sum of the chosen records' recorded seconds (0: no
	// cap), so a rerun's time is known before it starts.
	Budget float64
	// ModelDirs are model directories, or directories of them, searched
	// for the model a record names by its sha256 (default: "models").
	ModelDirs []string
	// Out, if set, keeps the rerun's records (Out/STEM.jsonl) and
	// witnesses (Out/STEM.witnesses/); a rerun into the same Out resumes
	// from the records there. Empty: a temporary directory, removed.
	Out      string
	Logf     func(format string, args ...any)
	Progress Progress

	// data, if set, replaces the data sets a record's DataRef names
	// (tests).
	data func(ref DataRef, in model.InputSpec) (Data, error)
}

// DefaultRerunOptions are lenspec results rerun's defaults: 300 samples
// (issue 54's count) within DefaultRerunBudget.
func DefaultRerunOptions() RerunOptions {
	return RerunOptions{Samples: 300, Budget: DefaultRerunBudget}
}

// RegisterFlags registers the options' flags on fs, with their current
// values as defaults.
func (o *RerunOptions) RegisterFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Samples, "samples", o.Samples, "how many records to rerun")
	fs.Float64Var(&o.Budget, "budget", o.Budget, "cap on the chosen records' recorded seconds (0: none)")
	fs.StringArrayVar(&o.ModelDirs, "model-dir", o.ModelDirs, "a model directory, or a directory of them, to find records' models in by sha256 (repeatable; default models)")
	fs.StringVar(&o.Out, "out", o.Out, "directory to keep the rerun's records in (default: a temporary one, removed)")
}

// Validate refuses, as SettingsErrors naming their flags, fewer than one
// sample and a budget that is negative or not finite.
func (o RerunOptions) Validate() error {
	var errs []error
	if o.Samples < 1 {
		errs = append(errs, fmt.Errorf("--samples %d: want at least 1", o.Samples))
	}
	if !(o.Budget >= 0) || math.IsInf(o.Budget, 0) {
		errs = append(errs, fmt.Errorf("--budget %v: want seconds ≥ 0 (0: no cap)", o.Budget))
	}
	return settingsErr(errors.Join(errs...))
}

// RerunPick is a record chosen to rerun: its file, 1-based position and
// the record.
type RerunPick struct {
	File   string
	Record int
	Rec    VerifyRecord
}

// RerunRow compares one record with its rerun.
type RerunRow struct {
	File   string  `json:"file"`
	Record int     `json:"record"` // 1-based position in the file
	Sample int     `json:"sample"`
	Eps    float64 `json:"eps"`
	K      int     `json:"k"`
	Old    string  `json:"old_verdict"`
	New    string  `json:"new_verdict"`
	// OldBound and NewBound are what the records prove: a verification's
	// bound on the max-min margin (proven_bound), a worst-case length
	// search's proven length (bound.upper); nil when the record holds none.
	OldBound *float64 `json:"old_bound"`
	NewBound *float64 `json:"new_bound"`
	// OldLower and NewLower are a worst-case length search's witnessed
	// lengths (bound.lower).
	OldLower   *int    `json:"old_lower,omitempty"`
	NewLower   *int    `json:"new_lower,omitempty"`
	OldSeconds float64 `json:"old_seconds"`
	NewSeconds float64 `json:"new_seconds"`
	Outcome    string  `json:"outcome"`
	Reason     string  `json:"reason,omitempty"`
}

// BoundDiff is the largest difference between a recorded and a rerun
// bound, and the record it was seen on.
type BoundDiff struct {
	Value  float64 `json:"value"`
	File   string  `json:"file"`
	Record int     `json:"record"`
}

// RerunReport is lenspec results rerun's report: a row per sample rerun
// and the summary.
type RerunReport struct {
	Files []string `json:"files"`
	// Eligible counts the records that could be chosen: those that
	// claim a verdict (no error), each key once.
	Eligible int `json:"eligible"`
	// Asked is --samples; Chosen the records chosen (fewer when the
	// budget or the eligible records run out); ChosenSeconds their
	// recorded seconds.
	Asked         int        `json:"asked"`
	Chosen        int        `json:"chosen"`
	ChosenSeconds float64    `json:"chosen_seconds"`
	Budget        float64    `json:"budget"`
	Rows          []RerunRow `json:"rows"`
	Flips         int        `json:"flips"`
	DecidedDiff   int        `json:"decided_differently"`
	Failed        int        `json:"failed"`
	// MaxAbs and MaxRel are the largest bound differences, absolute and
	// relative (|new − old| / max(|old|, |new|)), over the rows where both
	// records hold a bound; nil when none does. Decided holds them over
	// the rows whose verdicts are both decided (robust, vulnerable,
	// certified): an unknown's or an open search's bound is where a time
	// limit stopped it, and moves with the machine's speed.
	MaxAbs  *BoundDiff `json:"max_abs_bound_diff"`
	MaxRel  *BoundDiff `json:"max_rel_bound_diff"`
	Decided struct {
		MaxAbs *BoundDiff `json:"max_abs_bound_diff"`
		MaxRel *BoundDiff `json:"max_rel_bound_diff"`
	} `json:"among_decided"`
	// OldSeconds and NewSeconds add up the rows' recorded and rerun
	// seconds; WallSeconds is the rerun's wall time.
	OldSeconds  float64 `json:"old_seconds"`
	NewSeconds  float64 `json:"new_seconds"`
	WallSeconds float64 `json:"wall_seconds"`
	// Out is where the rerun's records were kept ("" when removed).
	Out string `json:"out,omitempty"`
}

// rerunVerdicts is the order of the strata within a file.
var rerunVerdicts = []string{string(verify.Robust), string(verify.Vulnerable), string(verify.Unknown), VerdictCertified, VerdictOpen}

// SelectRerun chooses at most n of the records, files[i]'s records being
// recs[i], deterministically: records that claim a verdict (no error),
// each key once (its first record), are grouped by file and verdict, each
// group ordered by recorded seconds, shortest first (then by position).
// Rounds take the next record of every group in turn until n are chosen,
// the group whose next record is shortest first (ties: files in the order
// given; robust, vulnerable, unknown, certified, open). With budget > 0,
// the chosen records' recorded seconds stay within it, and there are as
// many as it allows (up to n): a record is taken only if as many records
// can still be chosen with it as without it (counting the shortest
// records left), otherwise its group is closed (the records after it are
// no shorter); and after the first round, only if it takes at most an
// equal share of the budget left among those picks, otherwise it waits
// for a later round. So every group's shortest record comes first, the
// long ones (unknowns, which ran to their time limit) only while they
// leave room for the rest, and the short groups fill the rest in turns.
// The chosen records are returned in file order; eligible counts the
// records that could be chosen.
func SelectRerun(files []string, recs [][]VerifyRecord, n int, budget float64) (picks []RerunPick, eligible int) {
	type stratum struct {
		file, verdict int
		picks         []RerunPick
		next          int
	}
	var strata []*stratum
	var all []*RerunPick // every eligible record, shortest first: the reserve
	seen := map[string]bool{}
	for fi, rs := range recs {
		by := map[string]*stratum{}
		for i, r := range rs {
			if r.Error != "" {
				continue
			}
			k := VerifyKey(r)
			if seen[k] {
				continue
			}
			seen[k] = true
			eligible++
			s := by[r.Verdict]
			if s == nil {
				vi := slices.Index(rerunVerdicts, r.Verdict)
				if vi < 0 {
					vi = len(rerunVerdicts)
				}
				s = &stratum{file: fi, verdict: vi}
				by[r.Verdict] = s
				strata = append(strata, s)
			}
			s.picks = append(s.picks, RerunPick{File: files[fi], Record: i + 1, Rec: r})
		}
	}
	byTime := func(a, b RerunPick) int {
		return cmp.Or(cmp.Compare(a.Rec.Seconds, b.Rec.Seconds), strings.Compare(a.File, b.File), cmp.Compare(a.Record, b.Record))
	}
	for _, s := range strata {
		slices.SortStableFunc(s.picks, byTime)
		for i := range s.picks {
			all = append(all, &s.picks[i])
		}
	}
	slices.SortStableFunc(all, func(a, b *RerunPick) int { return byTime(*a, *b) })
	chosen := map[*RerunPick]bool{}
	// fit counts the shortest records not chosen, p aside, that fit in sec
	// seconds, at most k of them.
	fit := func(sec float64, k int, p *RerunPick) int {
		cnt, sum := 0, 0.0
		for _, q := range all {
			if cnt == k {
				break
			}
			if q == p || chosen[q] {
				continue
			}
			if sum+q.Rec.Seconds > sec {
				break
			}
			cnt, sum = cnt+1, sum+q.Rec.Seconds
		}
		return cnt
	}
	total := 0.0
	for round := 0; len(picks) < n; round++ {
		var live []*stratum
		for _, s := range strata {
			if s.next < len(s.picks) {
				live = append(live, s)
			}
		}
		slices.SortStableFunc(live, func(a, b *stratum) int {
			return cmp.Or(cmp.Compare(a.picks[a.next].Rec.Seconds, b.picks[b.next].Rec.Seconds), cmp.Compare(a.file, b.file), cmp.Compare(a.verdict, b.verdict),
				strings.Compare(a.picks[0].Rec.Verdict, b.picks[0].Rec.Verdict))
		})
		taken := 0
		for _, s := range live {
			if len(picks) == n {
				break
			}
			p := &s.picks[s.next]
			if budget > 0 {
				left := budget - total
				target := fit(left, n-len(picks), nil) // the most picks the budget left holds
				if target == 0 || p.Rec.Seconds > left || fit(left-p.Rec.Seconds, target-1, p) < target-1 {
					s.next = len(s.picks) // nor will it fit later
					continue
				}
				if round > 0 && p.Rec.Seconds > left/float64(target) {
					continue // over its share of the budget left, this round
				}
			}
			picks, total, chosen[p] = append(picks, *p), total+p.Rec.Seconds, true
			s.next++
			taken++
		}
		if taken == 0 {
			break
		}
	}
	fileIndex := map[string]int{}
	for i, f := range files {
		if _, ok := fileIndex[f]; !ok {
			fileIndex[f] = i
		}
	}
	slices.SortFunc(picks, func(a, b RerunPick) int {
		return cmp.Or(cmp.Compare(fileIndex[a.File], fileIndex[b.File]), cmp.Compare(a.Record, b.Record))
	})
	return picks, eligible
}

// RerunRecords verifies again a stratified choice of the records of
// verification results files (SelectRerun), each with its record's own
// model (by sha256), data and settings, through RunVerify, and compares
// the verdicts and bounds. It refuses, naming the file and record, a file
// that does not hold verification records, a record of schema 0 (whose
// settings were not all recorded), one whose clean input is not a data
// set sample, and one whose model is not found, before rerunning anything.
// An interrupted rerun returns the rows it finished with ctx's error.
func RerunRecords(ctx context.Context, src Sources, files []string, opt RerunOptions) (*RerunReport, error) {
	t0 := time.Now()
	if len(opt.ModelDirs) == 0 {
		opt.ModelDirs = []string{"models"}
	}
	c := &checker{src: src, opt: CheckOptions{ModelDirs: opt.ModelDirs, Logf: opt.Logf, data: opt.data}, models: map[string]*Model{}, digests: map[string]string{}, data: map[string]Data{}}
	recs := make([][]VerifyRecord, len(files))
	for i, path := range files {
		kind, err := FileKind(path)
		if err != nil {
			return nil, err
		}
		switch kind {
		case "":
			return nil, fmt.Errorf("%s: no records", path)
		case "verify":
		default:
			return nil, fmt.Errorf("%s: %s records, not verification records: only verify's and bound's records are rerun", path, kind)
		}
		if recs[i], err = ReadVerifyRecords(path); err != nil {
			return nil, err
		}
	}
	picks, eligible := SelectRerun(files, recs, opt.Samples, opt.Budget)
	rep := &RerunReport{Files: files, Eligible: eligible, Asked: opt.Samples, Chosen: len(picks), Budget: opt.Budget}
	// Every record that could be chosen is checked first, so a refusal
	// does not depend on --samples and comes before any work.
	for i, path := range files {
		for j, r := range recs[i] {
			if r.Error != "" {
				continue
			}
			if _, _, err := c.rerunnable(ctx, r); err != nil {
				return nil, fmt.Errorf("%s: record %d: %w", path, j+1, err)
			}
		}
	}
	for _, p := range picks {
		rep.ChosenSeconds += p.Rec.Seconds
	}
	c.logf("rerun: %d of %d eligible records chosen from %d files (%.0f s recorded)", len(picks), eligible, len(files), rep.ChosenSeconds)
	dir := opt.Out
	if dir == "" {
		tmp, err := os.MkdirTemp("", "lenspec-rerun-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("--out: %w", err)
		}
		rep.Out = dir
	}
	progress := func(done int) {
		if opt.Progress != nil {
			opt.Progress("rerun", done, len(picks), fmt.Sprintf("flips %d decided differently %d failed %d", rep.Flips, rep.DecidedDiff, rep.Failed))
		}
	}
	progress(0)
	for i, p := range picks {
		m, d, _ := c.rerunnable(ctx, p.Rec) // checked above
		out, wdir := rederivePaths(dir, p.File)
		now, ok, err := rerunUnit(ctx, m, d, p.Rec, out, wdir)
		if ctxErr := ctx.Err(); ctxErr != nil {
			rep.WallSeconds = time.Since(t0).Seconds()
			return rep, ctxErr
		}
		row := compareRerun(p, now, ok, err)
		rep.add(row)
		if row.Outcome != RerunSame {
			c.logf("rerun: %s record %d (sample %d, δ %g): %s → %s: %s%s", p.File, p.Record, p.Rec.Sample, p.Rec.Eps, row.Old, row.New, row.Outcome, reasonSuffix(row.Reason))
		}
		progress(i + 1)
	}
	rep.WallSeconds = time.Since(t0).Seconds()
	return rep, nil
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

// rerunnable finds record r's model and data set, or says why its unit
// cannot be rerun.
func (c *checker) rerunnable(ctx context.Context, r VerifyRecord) (*Model, Data, error) {
	if r.ModelSHA256 == "" {
		return nil, Data{}, errors.New("a schema-0 record (no model sha256): its settings were not all recorded, so it cannot be rerun as it ran")
	}
	m, d, why := c.unitData(ctx, r.Model, r.ModelSHA256, r.Data, r.Sample)
	if why != "" {
		return nil, Data{}, errors.New(why)
	}
	return m, d, nil
}

// rerunUnit verifies record r's unit again with model m, data d and r's
// own settings into the results file out (witnesses into wdir), resuming
// there, and returns the rerun's record of r's key; ok is false when the
// rerun recorded none under that key (the settings do not reproduce it).
func rerunUnit(ctx context.Context, m *Model, d Data, r VerifyRecord, out, wdir string) (rec VerifyRecord, ok bool, err error) {
	cfg := VerifyConfig{Model: m, Data: d, Samples: []int{r.Sample}, Eps: []float64{r.Eps}, Settings: r.Settings, Out: out, WitnessDir: wdir}
	if err := RunVerify(ctx, cfg, nil); err != nil {
		return VerifyRecord{}, false, err
	}
	rs, err := ReadVerifyRecords(out)
	if err != nil {
		return VerifyRecord{}, false, err
	}
	key := VerifyKey(r)
	for _, rr := range rs {
		if VerifyKey(rr) == key {
			return rr, true, nil
		}
	}
	return VerifyRecord{}, false, nil
}

// compareRerun compares pick p's record with its rerun now (ok: found;
// err: the rerun's failure).
func compareRerun(p RerunPick, now VerifyRecord, ok bool, err error) RerunRow {
	old := p.Rec
	row := RerunRow{File: p.File, Record: p.Record, Sample: old.Sample, Eps: old.Eps, K: old.K, Old: old.Verdict, OldSeconds: old.Seconds}
	row.OldBound, row.OldLower = provenBound(old)
	switch {
	case err != nil:
		row.Outcome, row.Reason = RerunFailed, "rerun: "+oneline.Fold(err.Error())
		return row
	case !ok:
		row.Outcome, row.Reason = RerunFailed, "the rerun's record has another key: the record's settings do not reproduce it"
		return row
	}
	row.New, row.NewSeconds = now.Verdict, now.Seconds
	row.NewBound, row.NewLower = provenBound(now)
	if now.Error != "" {
		row.Outcome, row.Reason = RerunFailed, "the rerun failed: "+now.Error
		return row
	}
	switch {
	case old.Bound != nil && now.Bound != nil:
		if contradicts(old.Bound, now.Bound) {
			row.Outcome, row.Reason = RerunFlip, fmt.Sprintf("worst-case length in %s recorded, in %s now", bracket(old.Bound), bracket(now.Bound))
			return row
		}
	case old.Bound != nil || now.Bound != nil:
		row.Outcome, row.Reason = RerunFailed, "one record is a worst-case length search, the other a verification"
		return row
	case old.Verdict != now.Verdict && decided(old) && decided(now): // robust against vulnerable
		row.Outcome = RerunFlip
		return row
	}
	row.Outcome = RerunSame
	if old.Verdict != now.Verdict {
		row.Outcome = RerunDecidedDifferently
	}
	return row
}

// provenBound is what a record proves: a worst-case length search's
// proven length and witnessed length, or a verification's bound on the
// max-min margin.
func provenBound(r VerifyRecord) (*float64, *int) {
	if r.Bound == nil {
		return r.ProvenBound, nil
	}
	lo := r.Bound.Lower
	if r.Bound.Upper == nil {
		return nil, &lo
	}
	up := float64(*r.Bound.Upper)
	return &up, &lo
}

// contradicts reports whether two worst-case length brackets [lower,
// upper] do not meet: both cannot hold.
func contradicts(a, b *BoundResult) bool {
	return (a.Upper != nil && b.Lower > *a.Upper) || (b.Upper != nil && a.Lower > *b.Upper)
}

func bracket(b *BoundResult) string {
	if b.Upper == nil {
		return fmt.Sprintf("[%d, ∞)", b.Lower)
	}
	return fmt.Sprintf("[%d, %d]", b.Lower, *b.Upper)
}

// add counts row into the report.
func (rep *RerunReport) add(row RerunRow) {
	rep.Rows = append(rep.Rows, row)
	switch row.Outcome {
	case RerunFlip:
		rep.Flips++
	case RerunDecidedDifferently:
		rep.DecidedDiff++
	case RerunFailed:
		rep.Failed++
	}
	rep.OldSeconds += row.OldSeconds
	rep.NewSeconds += row.NewSeconds
	if row.OldBound == nil || row.NewBound == nil {
		return
	}
	o, n := *row.OldBound, *row.NewBound
	abs := math.Abs(n - o)
	rel := 0.0
	if d := max(math.Abs(o), math.Abs(n)); d > 0 {
		rel = abs / d
	}
	larger := func(m **BoundDiff, v float64) {
		if *m == nil || v > (*m).Value {
			*m = &BoundDiff{v, row.File, row.Record}
		}
	}
	larger(&rep.MaxAbs, abs)
	larger(&rep.MaxRel, rel)
	if decided(VerifyRecord{Verdict: row.Old}) && decided(VerifyRecord{Verdict: row.New}) {
		larger(&rep.Decided.MaxAbs, abs)
		larger(&rep.Decided.MaxRel, rel)
	}
}

// Problems counts the rows that fail the rerun: flips and failed reruns.
func (rep *RerunReport) Problems() int { return rep.Flips + rep.Failed }

// WriteText writes a row per sample, then the summary: the samples
// rerun, every flip, the samples decided differently, failures, the
// largest bound differences and the time recorded against the time now.
func (rep *RerunReport) WriteText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "file\trecord\tsample\tδ\tK̂\trecorded\tnow\trecorded bound\tbound now\trecorded s\ts now\toutcome")
	for _, r := range rep.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%g\t%d\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t%s\n", r.File, r.Record, r.Sample, r.Eps, r.K, r.Old, dash(r.New),
			boundText(r.OldBound, r.OldLower), boundText(r.NewBound, r.NewLower), r.OldSeconds, r.NewSeconds, r.Outcome)
	}
	tw.Flush()
	counts := map[string]int{}
	for _, r := range rep.Rows {
		counts[r.Old]++
	}
	var by []string
	for _, v := range rerunVerdicts {
		if n := counts[v]; n > 0 {
			by = append(by, fmt.Sprintf("%s %d", v, n))
		}
	}
	fmt.Fprintf(w, "samples rerun: %d of %d asked (%s), from %d eligible records of %d files\n", len(rep.Rows), rep.Asked, strings.Join(by, ", "), rep.Eligible, len(rep.Files))
	if rep.Chosen < rep.Asked && rep.Chosen < rep.Eligible {
		fmt.Fprintf(w, "  the budget of %g s of recorded time (--budget) left no room for more\n", rep.Budget)
	}
	fmt.Fprintf(w, "verdict flips: %d\n", rep.Flips)
	for _, r := range rep.Rows {
		if r.Outcome == RerunFlip {
			fmt.Fprintf(w, "  flip: %s record %d (sample %d, δ %g, K̂ %d): %s recorded, %s now%s\n", r.File, r.Record, r.Sample, r.Eps, r.K, r.Old, r.New, reasonSuffix(r.Reason))
		}
	}
	fmt.Fprintf(w, "decided differently: %d (unknown against a verdict, or open against certified: time limits move these)\n", rep.DecidedDiff)
	for _, r := range rep.Rows {
		if r.Outcome == RerunDecidedDifferently {
			fmt.Fprintf(w, "  %s record %d (sample %d, δ %g): %s recorded, %s now\n", r.File, r.Record, r.Sample, r.Eps, r.Old, r.New)
		}
	}
	if rep.Failed > 0 {
		fmt.Fprintf(w, "failed: %d\n", rep.Failed)
		for _, r := range rep.Rows {
			if r.Outcome == RerunFailed {
				fmt.Fprintf(w, "  %s record %d (sample %d, δ %g): %s\n", r.File, r.Record, r.Sample, r.Eps, r.Reason)
			}
		}
	}
	diff := func(what string, abs, rel *BoundDiff) {
		if abs == nil {
			fmt.Fprintf(w, "largest bound difference, %s: no sample's records both hold a bound\n", what)
			return
		}
		fmt.Fprintf(w, "largest bound difference, %s: %.6g absolute (%s record %d), %.3g relative (%s record %d)\n",
			what, abs.Value, abs.File, abs.Record, rel.Value, rel.File, rel.Record)
	}
	diff("decided verdicts", rep.Decided.MaxAbs, rep.Decided.MaxRel)
	diff("all (an unknown's or open search's bound moves with the time it had)", rep.MaxAbs, rep.MaxRel)
	ratio := ""
	if rep.OldSeconds > 0 {
		ratio = fmt.Sprintf(" (%.2f×)", rep.NewSeconds/rep.OldSeconds)
	}
	fmt.Fprintf(w, "time: %.1f s recorded, %.1f s now%s; %.1f s wall\n", rep.OldSeconds, rep.NewSeconds, ratio, rep.WallSeconds)
	if rep.Out != "" {
		fmt.Fprintf(w, "the rerun's records: %s\n", rep.Out)
	}
}

func dash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// boundText is a row's bound: a worst-case length bracket, or a margin
// bound.
func boundText(b *float64, lower *int) string {
	switch {
	case lower != nil && b == nil:
		return fmt.Sprintf("[%d, ∞)", *lower)
	case lower != nil:
		return fmt.Sprintf("[%d, %g]", *lower, *b)
	case b == nil:
		return "—"
	}
	return fmt.Sprintf("%.6g", *b)
}
