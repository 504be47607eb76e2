package experiment

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/report"
)

// AttackSummary is the figure and table of an attack experiment, made from
// records only, so it can be regenerated from the JSONL at any time.
type AttackSummary struct {
	FigurePNG string       `json:"figure_png"`
	FigureSVG string       `json:"figure_svg"`
	TableFile string       `json:"table_file"`
	Table     string       `json:"table"`
	Rows      []SummaryRow `json:"rows"`
}

// SummaryRow is one (radius, method) line of an attack summary. As in
// every summary, its counts, rates, means and times are over the units
// that completed (Samples); Failed counts the others, in no other field.
type SummaryRow struct {
	Eps         float64 `json:"eps"`
	Method      string  `json:"method"`
	Samples     int     `json:"samples"`
	MeanRatio   float64 `json:"mean_length_ratio"`
	SuccessRate float64 `json:"success_rate"`
	Longest     int     `json:"longest"`
	Unstopped   int     `json:"unstopped"`
	Ties        int     `json:"ties"`
	Failed      int     `json:"failed"`
	// NoRatio counts the completed units whose original output is empty:
	// they have no length ratio, so MeanRatio is over the others.
	NoRatio int     `json:"no_ratio,omitempty"`
	Evals   int64   `json:"evals"`
	Seconds float64 `json:"seconds"`
}

// Text is the summary for a terminal.
func (s *AttackSummary) Text() string {
	return fmt.Sprintf("figure: %s, %s\n\n%s", s.FigurePNG, s.FigureSVG, s.Table)
}

// Of keeps the records of the given runs only: same model, data and
// settings, and a sample and radius the run asked for. A results file
// may hold other experiments (reruns with other settings); a summary must
// not mix them.
func Of[R any](recs []R, match ...func(R) bool) []R {
	var out []R
	for _, r := range recs {
		for _, m := range match {
			if m(r) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// Match reports whether r belongs to the run c (with its settings
// resolved as Validate resolves them).
func (c *AttackConfig) Match(r AttackRecord) bool {
	v := *c
	v.Validate()
	b := v.base()
	return r.SchemaVersion == b.SchemaVersion && r.ModelSHA256 == b.ModelSHA256 && r.Data == b.Data && r.Method == b.Method &&
		r.Settings == b.Settings && slices.Contains(c.Samples, r.Sample) && slices.Contains(c.Eps, r.Eps)
}

// Match reports whether r belongs to the run c (with its settings
// resolved as Validate resolves them).
func (c *VerifyConfig) Match(r VerifyRecord) bool {
	v := *c
	v.Validate()
	b := v.base()
	return r.SchemaVersion == b.SchemaVersion && r.ModelSHA256 == b.ModelSHA256 && r.Data == b.Data &&
		sameVerifySettings(r.Settings, b.Settings) && slices.Contains(c.Samples, r.Sample) && slices.Contains(c.Eps, r.Eps)
}

// sameVerifySettings compares settings as their keys do: by their JSON.
func sameVerifySettings(a, b VerifySettings) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// SummariseAttacks draws the length-distribution figure and writes the
// table of recs into outDir. recs are joined by Join's rules first, as
// every summary's: copies of a unit count once, and records of one unit
// that disagree, or of several experiments, are refused.
func SummariseAttacks(recs []AttackRecord, outDir, title string) (*AttackSummary, error) {
	recs, err := unique(recs)
	if err != nil {
		return nil, fmt.Errorf("summary: %w", err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("no attack records to summarise")
	}
	pts, keys, groups := groupAttacks(recs, func(r AttackRecord) string { return r.Method }, imageOrder)
	sum := &AttackSummary{
		FigurePNG: filepath.Join(outDir, "attack-lengths.png"),
		FigureSVG: filepath.Join(outDir, "attack-lengths.svg"),
		TableFile: filepath.Join(outDir, "attack-table.md"),
	}
	if len(pts) > 0 {
		if err := report.LengthFigure(pts, title, sum.FigurePNG, sum.FigureSVG); err != nil {
			return nil, err
		}
	}
	var rows [][]string
	for _, k := range keys {
		g := groups[k]
		t := tallyAttacks(g)
		row := SummaryRow{Eps: k.eps, Method: k.method, Samples: t.completed, MeanRatio: t.meanRatio, SuccessRate: t.lengthened,
			Longest: t.longest, Unstopped: t.unstopped, Ties: t.ties, Failed: t.failed, NoRatio: t.noRatio, Evals: t.evals, Seconds: t.seconds}
		sum.Rows = append(sum.Rows, row)
		longest := fmt.Sprint(row.Longest)
		if row.Unstopped > 0 {
			longest = fmt.Sprintf("≥%d (%d without eos)", row.Longest, row.Unstopped)
		}
		cells := []string{fmt.Sprint(k.eps), k.method, fmt.Sprint(row.Samples), over(row.Samples, "%.3f", row.MeanRatio),
			over(row.Samples, "%.0f%%", 100*row.SuccessRate), longest, fmt.Sprint(row.Ties), fmt.Sprint(row.Evals), fmt.Sprintf("%.0f", row.Seconds)}
		rows = append(rows, cells)
	}
	header := []string{"δ", "method", "images", "mean length ratio", "success (> original)", "longest", "ties", "evaluations", "seconds"}
	sum.Table = attackTable(header, rows, func(i int) int { return sum.Rows[i].Failed }, func(i int) int { return sum.Rows[i].NoRatio })
	if err := fileio.WriteFileAtomic(sum.TableFile, []byte(sum.Table)); err != nil {
		return nil, err
	}
	return sum, nil
}

// lengthGroup is one group of an attack table: a radius and a method
// (its label: a method run several ways is several groups).
type lengthGroup struct {
	eps    float64
	method string
}

// imageOrder orders an image attack table's groups: by radius, then
// random before pgd (and its variants).
func imageOrder(a, b lengthGroup) bool {
	if a.eps != b.eps {
		return a.eps < b.eps
	}
	return a.method > b.method
}

// groupAttacks groups recs by radius and label, in the order less gives,
// and collects the length figure's points: each sample's original once,
// every attacked output.
func groupAttacks(recs []AttackRecord, label func(AttackRecord) string, less func(a, b lengthGroup) bool) ([]report.LengthPoint, []lengthGroup, map[lengthGroup][]AttackRecord) {
	var pts []report.LengthPoint
	orig := map[int]bool{}
	groups := map[lengthGroup][]AttackRecord{}
	for _, r := range recs {
		k := lengthGroup{r.Eps, label(r)}
		groups[k] = append(groups[k], r)
		if r.Error != "" {
			continue
		}
		if !orig[r.Sample] {
			orig[r.Sample] = true
			pts = append(pts, report.LengthPoint{Method: "original", Delta: 0, Length: r.OrigLength, Stopped: true})
		}
		pts = append(pts, report.LengthPoint{Method: strings.ReplaceAll(k.method, " ", "-"), Delta: r.Eps, Length: r.AdvLength, Stopped: r.Stopped})
	}
	keys := make([]lengthGroup, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return less(keys[i], keys[j]) })
	return pts, keys, groups
}

// attackTally is what the attack tables count in a group of records:
// failed units only as failed, everything else over the completed ones.
type attackTally struct {
	completed, failed, ties, unstopped, longest int
	// noRatio counts the completed units whose original output is empty
	// (no length ratio).
	noRatio int
	evals   int64
	seconds float64
	// meanRatio is the mean of adversarial over original length (of the
	// completed units whose original output is not empty); lengthened the
	// fraction of the completed units made longer with no tie: an image's
	// output longer than the original's, a sentence's a success (longer
	// than K̂). Both are 0 where no unit counts.
	meanRatio, lengthened float64
	// medianEvals is the median evaluations of a unit; long counts
	// outputs longer than LongOutput, sampledLong random search's draws
	// that were among all sampledTotal draws.
	medianEvals               int64
	long                      int
	sampledLong, sampledTotal int64
	// pickSample and pickArgmax count which final sentence of the Gumbel
	// attack won.
	pickSample, pickArgmax int
}

// tallyAttacks counts a group of records; failed records count only as
// failed.
func tallyAttacks(g []AttackRecord) attackTally {
	var t attackTally
	var ratios, evals []float64
	succ := 0
	for _, r := range g {
		if r.Error != "" {
			t.failed++
			continue
		}
		if r.OrigLength > 0 {
			ratios = append(ratios, float64(r.AdvLength)/float64(r.OrigLength))
		} else {
			t.noRatio++
		}
		evals = append(evals, float64(r.Evals))
		tie := r.MinRelMargin < model.RelTieMargin
		if success := r.AdvLength > r.OrigLength; (r.IsText() && r.Success || !r.IsText() && success) && !tie {
			succ++
		}
		if tie {
			t.ties++
		}
		if !r.Stopped {
			t.unstopped++
		}
		if r.AdvLength > LongOutput {
			t.long++
		}
		total, long := sampledOver(r.LengthCounts, LongOutput)
		t.sampledTotal, t.sampledLong = t.sampledTotal+total, t.sampledLong+long
		if r.IsText() {
			switch r.Pick {
			case "sample":
				t.pickSample++
			case "argmax":
				t.pickArgmax++
			}
		}
		t.longest = max(t.longest, r.AdvLength)
		t.evals += r.Evals
		t.seconds += r.Seconds
	}
	t.completed = len(g) - t.failed
	if len(ratios) > 0 {
		t.meanRatio = report.Mean(ratios)
	}
	if t.completed > 0 {
		t.lengthened = float64(succ) / float64(t.completed)
	}
	if len(evals) > 0 {
		t.medianEvals = int64(report.Quantile(evals, 0.5))
	}
	return t
}

// sampledOver sums a histogram of random search's draws by length
// (LengthCounts): all draws, and those whose output was longer than n.
func sampledOver(counts []int64, n int) (total, over int64) {
	for l, c := range counts {
		total += c
		if l > n {
			over += c
		}
	}
	return total, over
}

// failedTable is the Markdown table of header and rows, with a "failed"
// column (failed(i): row i's units recorded with an error or as crashed)
// and the rule every summary follows said under it when any unit failed:
// a failed unit counts in that column only, and every other count, rate,
// mean and time is over the units that completed, so that a failure is
// never read as a lower success rate, nor a rate and a mean of one row
// taken over different units.
func failedTable(header []string, rows [][]string, failed func(i int) int) string {
	n := 0
	for i := range rows {
		n += failed(i)
	}
	if n == 0 {
		return report.Markdown(header, rows)
	}
	for i := range rows {
		rows[i] = append(rows[i], fmt.Sprint(failed(i)))
	}
	return report.Markdown(append(header, "failed"), rows) + "\n" + failedRule + "\n"
}

// failedRule says under a table with failed units how they are counted.
const failedRule = "Failed units (an error or a crash; their records say why) count only under \"failed\": every other count, rate, mean and time is over the units that completed."

// attackTable is an attack summary's table: failedTable, then the note of
// how many completed units (noRatio(i) of row i) have no length ratio.
func attackTable(header []string, rows [][]string, failed, noRatio func(i int) int) string {
	n := 0
	for i := range rows {
		n += noRatio(i)
	}
	return failedTable(header, rows, failed) + ratioNote(n)
}

// ratioNote says under an attack table that n completed units, whose
// original output is empty, are left out of the mean length ratio (an
// empty line if none are).
func ratioNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("\n%d completed units have an empty original output, hence no length ratio: the mean length ratio is over the others.\n", n)
}

// number formats v, or "–" where it is undefined (NaN: no unit to take it
// over).
func number(format string, v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

// over formats v, a rate or mean over n units, or "–" if n is 0 (a
// row's values are then 0, which JSON can hold where NaN cannot).
func over(n int, format string, v float64) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

// VerifySummary is the verdict figure and table of a verification
// experiment.
type VerifySummary struct {
	FigurePNG string `json:"figure_png"`
	FigureSVG string `json:"figure_svg"`
	TableFile string `json:"table_file"`
	Table     string `json:"table"`
}

// Text is the summary for a terminal.
func (s *VerifySummary) Text() string {
	return fmt.Sprintf("figure: %s, %s\n\n%s", s.FigurePNG, s.FigureSVG, s.Table)
}

// SummariseVerify draws the verdict chart and writes the tables of recs
// into outDir: per δ the verdicts, the time per sample (median, p90,
// max: a limit holds within 5 %), the unstable ReLUs, which stage decided
// each sample and the margin bound the unknowns were left with (the
// property needs it below 0); then, for the unknowns, where their time
// went (median seconds per stage).
func SummariseVerify(recs []VerifyRecord, outDir, title string) (*VerifySummary, error) {
	recs, err := unique(recs)
	if err != nil {
		return nil, fmt.Errorf("summary: %w", err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("no verification records to summarise")
	}
	by := map[float64][]VerifyRecord{}
	for _, r := range recs {
		if r.Bound != nil {
			return nil, fmt.Errorf("sample %d at δ %v is a worst-case length search (SummariseBound), not a verification record", r.Sample, r.Eps)
		}
		by[r.Eps] = append(by[r.Eps], r)
	}
	eps := slices.Sorted(maps.Keys(by))
	var counts []report.VerdictCount
	var rows [][]string
	spent := map[float64]map[string][]float64{} // δ → stage → unknowns' seconds
	var stageNames []string
	failed := map[float64]int{}
	for _, e := range eps {
		vc := report.VerdictCount{Delta: e}
		var secs, unstI, unstC, open []float64
		decided := map[string]int{}
		spent[e] = map[string][]float64{}
		for _, r := range by[e] {
			if r.Error != "" { // failed: in its own column only
				failed[e]++
				continue
			}
			switch r.Verdict {
			case "robust":
				vc.Robust++
			case "vulnerable":
				vc.Vulnerable++
			default:
				vc.Unknown++
			}
			if r.Verdict == "robust" || r.Verdict == "vulnerable" {
				decided[r.Stage]++
			}
			secs = append(secs, r.Seconds)
			if r.Stage != "attack" { // the attack settles it before any bound
				unstI = append(unstI, float64(r.UnstableInterval))
				unstC = append(unstC, float64(r.Unstable))
			}
			if r.Verdict != "unknown" {
				continue
			}
			if r.ProvenBound != nil && !math.IsInf(*r.ProvenBound, 0) {
				open = append(open, *r.ProvenBound)
			}
			// The bounds, the stages in the order they ran (a stage run
			// twice summed), and the rest: the warm start, setup, replays.
			names, per := []string{"bounds"}, map[string]float64{"bounds": r.BoundSeconds}
			rest := r.Seconds - r.BoundSeconds
			for _, ph := range r.Phases {
				if _, ok := per[ph.Name]; !ok {
					names = append(names, ph.Name)
				}
				per[ph.Name] += ph.Seconds
				rest -= ph.Seconds
			}
			names, per[restStage] = append(names, restStage), max(rest, 0)
			for _, name := range names {
				if !slices.Contains(stageNames, name) {
					stageNames = append(stageNames, name)
				}
				spent[e][name] = append(spent[e][name], per[name])
			}
		}
		n := len(by[e]) - failed[e]
		if n > 0 { // a δ whose every unit failed has no bar
			counts = append(counts, vc)
		}
		med := func(xs []float64) string { return number("%.0f", report.Quantile(xs, 0.5)) }
		margin := "–"
		if len(open) > 0 {
			margin = fmt.Sprintf("%.3g (%.3g–%.3g)", report.Quantile(open, 0.5), slices.Min(open), slices.Max(open))
		}
		rows = append(rows, []string{fmt.Sprint(e), fmt.Sprint(n), fmt.Sprint(vc.Robust), fmt.Sprint(vc.Vulnerable), fmt.Sprint(vc.Unknown),
			over(n, "%.0f%%", 100*float64(vc.Unknown)/float64(max(n, 1))),
			number("%.2f", report.Quantile(secs, 0.5)), number("%.2f", report.Quantile(secs, 0.9)), number("%.2f", report.Quantile(secs, 1)),
			med(unstI) + " → " + med(unstC), stageCounts(decided), margin})
	}
	sum := &VerifySummary{
		FigurePNG: filepath.Join(outDir, "verify-verdicts.png"),
		FigureSVG: filepath.Join(outDir, "verify-verdicts.svg"),
		TableFile: filepath.Join(outDir, "verify-table.md"),
	}
	if len(counts) > 0 {
		if err := report.VerdictFigure(counts, title, sum.FigurePNG, sum.FigureSVG); err != nil {
			return nil, err
		}
	}
	sum.Table = failedTable([]string{"δ", "samples", "robust", "vulnerable", "unknown", "unknown %", "median s", "p90 s", "max s",
		"median unstable ReLUs, interval → CROWN", "decided by", "unknowns' margin bound: median (range)"}, rows, func(i int) int { return failed[eps[i]] })
	sum.Table += "\n" + timeTable(eps, spent, stageNames)
	if err := fileio.WriteFileAtomic(sum.TableFile, []byte(sum.Table)); err != nil {
		return nil, err
	}
	return sum, nil
}

// stageCounts lists how many samples each stage decided, most first.
func stageCounts(n map[string]int) string {
	names := slices.Collect(maps.Keys(n))
	slices.SortFunc(names, func(a, b string) int {
		if n[a] != n[b] {
			return n[b] - n[a]
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, s := range names {
		parts = append(parts, fmt.Sprintf("%s %d", s, n[s]))
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, ", ")
}

// restStage names the time of a sample outside its bounds and stages.
const restStage = "warm start, other"

// timeTable is the median seconds an unknown sample spent in each stage,
// per δ (stages in the order they first appear; "bounds" first).
func timeTable(eps []float64, spent map[float64]map[string][]float64, names []string) string {
	// The rest last, whatever order the records gave.
	names = append(slices.DeleteFunc(slices.Clone(names), func(s string) bool { return s == restStage }), restStage)
	var rows [][]string
	for _, e := range eps {
		n := 0
		for _, v := range spent[e] {
			n = max(n, len(v))
		}
		if n == 0 {
			continue
		}
		row := []string{fmt.Sprint(e), fmt.Sprint(n)}
		for _, name := range names {
			v := spent[e][name]
			if len(v) == 0 {
				row = append(row, "–")
				continue
			}
			row = append(row, fmt.Sprintf("%.1f", report.Quantile(v, 0.5)))
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return "No unknown sample.\n"
	}
	return "Where the unknown samples' time went (median seconds per stage):\n\n" +
		report.Markdown(append([]string{"δ", "unknown"}, names...), rows)
}

// SummariseBound draws the certified worst-case length curves of the
// records of a worst-case length search (`lenspec bound`) and writes their
// table into outDir: per δ, how many images are certified (witnessed =
// proven), the median and maximum proven and witnessed lengths (an image
// with no proven bound counting as unbounded: "–" where a statistic falls
// on one), and how many have no proven bound up to the largest K̂ tried.
func SummariseBound(recs []VerifyRecord, outDir, title string) (*VerifySummary, error) {
	recs, err := unique(recs)
	if err != nil {
		return nil, fmt.Errorf("summary: %w", err)
	}
	by := map[float64][]VerifyRecord{}
	failed := map[float64]int{}
	for _, r := range recs {
		switch {
		case r.Error != "" && r.Settings.Bound: // failed: in its own column only
			failed[r.Eps]++
		case r.Bound == nil:
			return nil, fmt.Errorf("sample %d at δ %v is a verification record, not a worst-case length search", r.Sample, r.Eps)
		default:
			by[r.Eps] = append(by[r.Eps], r)
		}
	}
	if len(by) == 0 {
		return nil, fmt.Errorf("no completed worst-case length records to summarise (%d failed)", len(recs))
	}
	eps := slices.Sorted(maps.Keys(by))
	var points []report.BoundPoint
	var secs [][]float64 // per δ, in eps order
	for _, e := range eps {
		p := report.BoundPoint{Delta: e}
		var sec []float64
		for _, r := range by[e] {
			up := -1
			if r.Bound.Upper != nil {
				up = *r.Bound.Upper
			}
			p.Lower, p.Upper = append(p.Lower, r.Bound.Lower), append(p.Upper, up)
			sec = append(sec, r.Seconds)
		}
		points, secs = append(points, p), append(secs, sec)
	}
	sum := &VerifySummary{
		FigurePNG: filepath.Join(outDir, "bound-lengths.png"),
		FigureSVG: filepath.Join(outDir, "bound-lengths.svg"),
		TableFile: filepath.Join(outDir, "bound-table.md"),
	}
	stats, err := report.BoundFigure(points, title, sum.FigurePNG, sum.FigureSVG)
	if err != nil {
		return nil, err
	}
	var rows [][]string
	for i, s := range stats { // sorted by δ, as eps
		rows = append(rows, []string{fmt.Sprint(s.Delta), fmt.Sprint(s.Images), fmt.Sprint(s.Certified), fmt.Sprint(s.Images - s.Proven),
			number("%g", s.MedianUpper), number("%g", s.MaxUpper), number("%g", s.MedianLower), number("%g", s.MaxLower),
			fmt.Sprintf("%.2f", report.Quantile(secs[i], 0.5)), fmt.Sprintf("%.2f", report.Quantile(secs[i], 0.9))})
	}
	// A δ whose every unit failed has no row: its failures are counted
	// under the table.
	var lost []string
	for _, e := range slices.Sorted(maps.Keys(failed)) {
		if by[e] == nil {
			lost = append(lost, fmt.Sprintf("%d at δ %g", failed[e], e))
		}
	}
	sum.Table = failedTable([]string{"δ", "images", "certified", "no upper proven", "median proven", "max proven", "median witnessed", "max witnessed", "median s", "p90 s"}, rows, func(i int) int { return failed[stats[i].Delta] })
	if len(lost) > 0 {
		sum.Table += fmt.Sprintf("\nEvery unit failed at some radii, which have no row: %s.\n", strings.Join(lost, ", "))
		if !slices.ContainsFunc(stats, func(s report.BoundStats) bool { return failed[s.Delta] > 0 }) { // failedTable said it already
			sum.Table += failedRule + "\n"
		}
	}
	if err := fileio.WriteFileAtomic(sum.TableFile, []byte(sum.Table)); err != nil {
		return nil, err
	}
	return sum, nil
}

// IsBound reports whether recs are a worst-case length search's records
// (by their settings: a failed unit's record has no Bound).
func IsBound(recs []VerifyRecord) bool {
	return len(recs) > 0 && (recs[0].Bound != nil || recs[0].Settings.Bound)
}
