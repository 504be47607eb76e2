package experiment

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/report"
)

// LongOutput is the length the paper's NMT figures and counts single out:
// outputs longer than 100 tokens.
const LongOutput = 100

// TextSummary is the figure, tables and highlights of a text attack
// experiment, made from records only.
type TextSummary struct {
	FigurePNG string        `json:"figure_png"`
	FigureSVG string        `json:"figure_svg"`
	TableFile string        `json:"table_file"`
	Table     string        `json:"table"`
	Rows      []TextRow     `json:"rows"`
	Longest   *TextExample  `json:"longest,omitempty"`
	MaxRatio  *TextExample  `json:"max_ratio,omitempty"`
	Examples  []TextExample `json:"examples"`
}

// TextRow is one (δ, method) line of a text attack summary: its counts,
// rates, means and times are over the sentences that completed
// (Sentences); Failed counts the others, in no other field.
type TextRow struct {
	Eps       float64 `json:"eps"`
	Method    string  `json:"method"`
	Sentences int     `json:"sentences"`
	// EvalsPerSentence is the median evaluations spent per sentence.
	EvalsPerSentence int64   `json:"evals_per_sentence"`
	MeanRatio        float64 `json:"mean_length_ratio"`
	SuccessRate      float64 `json:"success_rate"`
	// Long counts sentences whose best output is longer than LongOutput
	// tokens; SampledLong the sampled outputs longer than that among all
	// of random search's draws (SampledTotal).
	Long         int   `json:"long"`
	SampledLong  int64 `json:"sampled_long,omitempty"`
	SampledTotal int64 `json:"sampled_total,omitempty"`
	Longest      int   `json:"longest"`
	Unstopped    int   `json:"unstopped"`
	Ties         int   `json:"ties"`
	Failed       int   `json:"failed"`
	// NoRatio counts the completed sentences whose original output is
	// empty: they have no length ratio, so MeanRatio is over the others.
	NoRatio int     `json:"no_ratio,omitempty"`
	Seconds float64 `json:"seconds"`
	// PickSample and PickArgmax count which final sentence of the Gumbel
	// attack won.
	PickSample int `json:"pick_sample,omitempty"`
	PickArgmax int `json:"pick_argmax,omitempty"`
}

// TextExample is an (I, O, I′, O′) example: a source, its translation, an
// adversarial source and its translation.
type TextExample struct {
	Method    string  `json:"method"`
	Eps       float64 `json:"eps"`
	Sample    int     `json:"sample"`
	Src       string  `json:"src"`
	SrcTokens int     `json:"src_tokens"`
	Out       string  `json:"out"`
	Adv       string  `json:"adv"`
	AdvOut    string  `json:"adv_out"`
	AdvLength int     `json:"adv_length"`
	Stopped   bool    `json:"stopped"`
	Ratio     float64 `json:"ratio"`
	// AdvSubs are a redacted record's substitutions ([position, token
	// id] into the corpus sentence), which stand in for Adv's text.
	AdvSubs [][2]int `json:"adv_subs,omitempty"`
	// Redacted says Src and Adv describe the sentence rather than quote
	// it: the corpus's text may not be copied.
	Redacted bool `json:"redacted,omitempty"`
}

func example(r AttackRecord) *TextExample {
	e := &TextExample{Method: r.Method, Eps: r.Eps, Sample: r.Sample, Src: r.SrcText, SrcTokens: r.SrcLen,
		Out: r.OrigText, Adv: r.AdvText, AdvOut: r.AdvOutput, AdvLength: r.AdvLength, Stopped: r.Stopped}
	if r.Redacted {
		e.Redacted = true
		e.Src = fmt.Sprintf("%s sentence %d", r.Data.Split, r.Sample)
		e.AdvSubs = r.AdvSubs
		e.Adv = r.RedactedSource()
	}
	e.Ratio = lengthRatio(r)
	return e
}

// lengthRatio is r's output/input length ratio (0 for an empty source).
func lengthRatio(r AttackRecord) float64 {
	if r.SrcLen == 0 {
		return 0
	}
	return float64(r.AdvLength) / float64(r.SrcLen)
}

// SummariseTextAttacks draws the output-length figure (binned by tens with
// a "> 100" bin, one panel per δ, one bar colour per method) and writes
// the table of recs into outDir, recs joined by Join's rules first.
func SummariseTextAttacks(recs []AttackRecord, outDir, title string) (*TextSummary, error) {
	recs, err := unique(recs)
	if err != nil {
		return nil, fmt.Errorf("summary: %w", err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("no text attack records to summarise")
	}
	for _, r := range recs {
		if !r.IsText() {
			return nil, fmt.Errorf("sample %d at δ %v is an image attack record (SummariseAttacks), not a text attack's", r.Sample, r.Eps)
		}
	}
	// A method run with several budgets is one row per budget, labelled
	// "method@budget".
	budgets := map[string]map[int]bool{}
	for _, r := range recs {
		if budgets[r.Method] == nil {
			budgets[r.Method] = map[int]bool{}
		}
		budgets[r.Method][r.Settings.Budget] = true
	}
	label := func(r AttackRecord) string {
		if len(budgets[r.Method]) > 1 {
			return fmt.Sprintf("%s@%d", r.Method, r.Settings.Budget)
		}
		return r.Method
	}
	order := func(m string) int {
		if i := slices.Index(TextMethods, strings.Split(m, "@")[0]); i >= 0 {
			return i
		}
		return len(TextMethods)
	}
	pts, keys, groups := groupAttacks(recs, label, func(a, b lengthGroup) bool {
		if a.eps != b.eps {
			return a.eps < b.eps
		}
		if oa, ob := order(a.method), order(b.method); oa != ob {
			return oa < ob
		}
		return a.method < b.method
	})
	sum := &TextSummary{
		FigurePNG: filepath.Join(outDir, "nmt-attack-lengths.png"),
		FigureSVG: filepath.Join(outDir, "nmt-attack-lengths.svg"),
		TableFile: filepath.Join(outDir, "nmt-attack-table.md"),
	}
	var longest, maxRatio *AttackRecord
	for _, r := range recs {
		if r.Error != "" || !hasSentence(r) { // the embedding attack has no sentence
			continue
		}
		if longest == nil || r.AdvLength > longest.AdvLength || (r.AdvLength == longest.AdvLength && !r.Stopped && longest.Stopped) {
			longest = &r
		}
		if maxRatio == nil || lengthRatio(r) > lengthRatio(*maxRatio) {
			maxRatio = &r
		}
	}
	if longest != nil {
		sum.Longest, sum.MaxRatio = example(*longest), example(*maxRatio)
	}
	if len(pts) > 0 {
		if err := report.BinnedLengthFigure(pts, 10, LongOutput, "number of sentences", title, sum.FigurePNG, sum.FigureSVG); err != nil {
			return nil, err
		}
	}
	var rows [][]string
	for _, k := range keys {
		g := groups[k]
		t := tallyAttacks(g)
		row := TextRow{Eps: k.eps, Method: k.method, Sentences: t.completed, EvalsPerSentence: t.medianEvals, MeanRatio: t.meanRatio,
			SuccessRate: t.lengthened, Long: t.long, SampledLong: t.sampledLong, SampledTotal: t.sampledTotal, Longest: t.longest,
			Unstopped: t.unstopped, Ties: t.ties, Failed: t.failed, NoRatio: t.noRatio, Seconds: t.seconds, PickSample: t.pickSample, PickArgmax: t.pickArgmax}
		sum.Rows = append(sum.Rows, row)
		longest := fmt.Sprint(row.Longest)
		if row.Unstopped > 0 {
			longest = fmt.Sprintf("≥%d (%d at the cap)", row.Longest, row.Unstopped)
		}
		sampled := "—"
		if row.SampledTotal > 0 {
			sampled = fmt.Sprintf("%d of %d", row.SampledLong, row.SampledTotal)
		}
		rows = append(rows, []string{fmt.Sprint(k.eps), k.method, fmt.Sprint(row.Sentences), fmt.Sprint(row.EvalsPerSentence),
			over(row.Sentences, "%.2f", row.MeanRatio), over(row.Sentences, "%.0f%%", 100*row.SuccessRate), fmt.Sprint(row.Long), sampled,
			longest, fmt.Sprint(row.Ties), fmt.Sprintf("%.0f", row.Seconds)})
	}
	header := []string{"δ", "method", "sentences", "evaluations / sentence", "mean length ratio", "success (> original)",
		fmt.Sprintf("outputs > %d", LongOutput), fmt.Sprintf("sampled outputs > %d", LongOutput), "longest", "ties", "seconds"}
	var b strings.Builder
	b.WriteString(attackTable(header, rows, func(i int) int { return sum.Rows[i].Failed }, func(i int) int { return sum.Rows[i].NoRatio }))
	for _, r := range sum.Rows {
		if r.PickSample+r.PickArgmax > 0 {
			fmt.Fprintf(&b, "\nGumbel PGD at δ = %g: the final sentence drawn from softmax(π) won %d times, the argmax %d times.", r.Eps, r.PickSample, r.PickArgmax)
		}
	}
	if l := sum.Longest; l != nil {
		from := fmt.Sprintf("the %d-token input %q (original %q)", l.SrcTokens, l.Adv, l.Src)
		if l.Redacted {
			from = l.Adv + " (substitutions in the record)"
		}
		fmt.Fprintf(&b, "\n\nLongest output: %d tokens%s (%s, δ = %g) from %s.",
			l.AdvLength, map[bool]string{true: "", false: " without eos"}[l.Stopped], l.Method, l.Eps, from)
	}
	if sum.MaxRatio != nil {
		fmt.Fprintf(&b, "\nLargest output/input ratio: %.1f× (%d tokens from %d; %s, δ = %g).",
			sum.MaxRatio.Ratio, sum.MaxRatio.AdvLength, sum.MaxRatio.SrcTokens, sum.MaxRatio.Method, sum.MaxRatio.Eps)
	}
	b.WriteString("\n")
	sum.Table = b.String()
	sum.Examples = textExamples(recs, 6)
	if err := fileio.WriteFileAtomic(sum.TableFile, []byte(sum.Table)); err != nil {
		return nil, err
	}
	return sum, nil
}

// textExamples picks up to n examples, the longest successful outputs of
// the discrete methods, one per sentence.
func textExamples(recs []AttackRecord, n int) []TextExample {
	var cand []AttackRecord
	for _, r := range recs {
		if r.Error == "" && r.Success && hasSentence(r) {
			cand = append(cand, r)
		}
	}
	sort.SliceStable(cand, func(i, j int) bool { return cand[i].AdvLength > cand[j].AdvLength })
	seen := map[int]bool{}
	var out []TextExample
	for _, r := range cand {
		if len(out) == n {
			break
		}
		if !seen[r.Sample] {
			seen[r.Sample] = true
			out = append(out, *example(r))
		}
	}
	return out
}

// hasSentence reports whether r holds an adversarial sentence (the
// embedding attack's witness is embeddings), quoted or as substitutions.
func hasSentence(r AttackRecord) bool { return r.AdvText != "" || r.AdvSubs != nil }
