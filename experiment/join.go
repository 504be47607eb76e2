package experiment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Record is a results record type: what Join, Merge and the summaries
// take.
type Record interface {
	AttackRecord | VerifyRecord
}

// Conflict says what joining results does with two records of one unit
// (one key) whose results differ.
type Conflict string

const (
	// Refuse refuses them, naming the unit, both records' files and the
	// fields that differ (the default).
	Refuse Conflict = "refuse"
	// Best keeps the better of them by a rule that depends on the
	// records alone, never on the order of the files (see Join); records
	// that contradict each other are refused all the same.
	Best Conflict = "best"
)

// ParseConflict parses a --on-conflict value: "refuse" or "best".
func ParseConflict(s string) (Conflict, error) {
	switch c := Conflict(s); c {
	case Refuse, Best:
		return c, nil
	}
	return "", fmt.Errorf("conflict rule %q: want refuse or best", s)
}

// JoinOptions adjusts Join.
type JoinOptions struct {
	// Conflict is what to do with conflicting records of one unit ("":
	// Refuse).
	Conflict Conflict
}

// RegisterFlags adds Conflict to fs as results merge's and summary's
// --on-conflict, starting at Refuse; see says where its help sends the
// reader for the rule.
func (o *JoinOptions) RegisterFlags(fs *pflag.FlagSet, see string) {
	fs.StringVar((*string)(&o.Conflict), "on-conflict", string(Refuse), "records of one unit that disagree: refuse, or keep the best ("+see+")")
}

// ValidateFlags refuses, as a SettingsError naming --on-conflict, a
// Conflict other than refuse or best.
func (o JoinOptions) ValidateFlags() error {
	if _, err := ParseConflict(string(o.Conflict)); err != nil {
		return SettingsError{fmt.Errorf("--on-conflict %s: want refuse or best", o.Conflict)}
	}
	return nil
}

// Joined is the records of one experiment, each unit once, ordered by δ,
// then sample, then key: never by the order of the files.
type Joined[R Record] struct {
	Records []R
	// Duplicates counts the records dropped as another copy of a unit's
	// result; Resolved those dropped by Best as the worse of a conflict.
	Duplicates, Resolved int
	from                 []origin // of each record
}

// origin is where a record came from: record N (1-based) of Path ("": the
// records given in memory), and whether Merge's output already holds it.
type origin struct {
	Path   string
	N      int
	pinned bool
}

func (o origin) String() string {
	if o.Path == "" {
		return fmt.Sprintf("record %d", o.N)
	}
	return fmt.Sprintf("%s (record %d)", o.Path, o.N)
}

// Join reads results files of one kind and joins their records by the
// rules every merge and summary applies:
//
//   - One experiment: every record has the same model (model_sha256) and
//     data, and the same settings within its method (for text attacks,
//     within its method and δ; one run may give random search another
//     budget at δ = 1). Otherwise Join names the file that mixes two
//     experiments, or the two files that hold different ones, once, with
//     the fields that differ.
//   - One unit once: records with one key (see AttackKey, VerifyKey) are copies of one unit's result when they agree on
//     everything but what legitimately differs between two runs of it:
//     the model's path as given, timings, witness and MPS file paths, an
//     error's wording (not whether the unit failed) and, for
//     verification, how the verdict was reached (the deciding stage,
//     bounds, margins, node and ReLU counts, phases, the witness found —
//     any witness of a vulnerable verdict is one). One copy is kept: one
//     already in Merge's output, else the one whose JSON sorts first.
//   - Conflicts, records of one unit that disagree on anything else (a
//     verdict, a replayed length, whether it failed), are refused naming
//     the unit, both records and what differs; with Conflict Best the
//     better one is kept instead: a record without error over a failed
//     one; for verification a decided verdict (robust, vulnerable,
//     certified) over an undecided one, then for worst-case length
//     searches the smaller proven bound and the larger witnessed length;
//     for attacks a success, then the longer replayed output (one that hit
//     the step cap above any that stopped), then the larger margin; what
//     remains tied by the one whose result sorts first as JSON. Records
//     that contradict each other are refused even then: robust against
//     vulnerable, a witnessed length above a proven bound, or attacks on
//     different inputs (label, K̂ or original output differ).
//
// A file given twice thus counts once.
func Join[R Record](paths []string, opt JoinOptions) (*Joined[R], error) {
	j, _, err := joinFiles[R](paths, nil, nil, opt)
	return j, err
}

// joinFiles reads the records of paths, marking those of pinned, keeps
// those keep selects (all for nil) and joins them, in the units' order.
func joinFiles[R Record](paths []string, pinned map[string]bool, keep func(R) bool, opt JoinOptions) (*Joined[R], []item[R], error) {
	items, err := readItems[R](paths, pinned)
	if err != nil {
		return nil, nil, err
	}
	if keep != nil {
		items = slices.DeleteFunc(items, func(it item[R]) bool { return !keep(it.r) })
	}
	j, err := join(items, opt)
	if err != nil {
		return nil, nil, err
	}
	sortUnits(j)
	return j, items, nil
}

// unique applies Join's rules to records in memory (a summary's), naming
// records by their position.
func unique[R Record](recs []R) ([]R, error) {
	items := make([]item[R], len(recs))
	for i, r := range recs {
		items[i] = item[R]{r, origin{N: i + 1}}
	}
	j, err := join(items, JoinOptions{})
	if err != nil {
		return nil, err
	}
	return j.Records, nil
}

// item is a record and where it came from.
type item[R Record] struct {
	r  R
	at origin
}

// readItems reads the records of paths; those of pinned are marked so.
func readItems[R Record](paths []string, pinned map[string]bool) ([]item[R], error) {
	ops := opsFor[R]()
	var items []item[R]
	for _, p := range paths {
		recs, err := readRecords(p, ops.decode)
		if err != nil {
			return nil, err
		}
		for i, r := range recs {
			items = append(items, item[R]{r, origin{Path: p, N: i + 1, pinned: pinned[p]}})
		}
	}
	return items, nil
}

func join[R Record](items []item[R], opt JoinOptions) (*Joined[R], error) {
	if opt.Conflict == "" {
		opt.Conflict = Refuse
	}
	if _, err := ParseConflict(string(opt.Conflict)); err != nil {
		return nil, err
	}
	ops := opsFor[R]()
	if err := oneExperiment(items, ops); err != nil {
		return nil, err
	}
	j := &Joined[R]{}
	at := map[string]int{} // key → index in j.Records
	var kept []*view
	for _, it := range items {
		k := ops.key(it.r)
		i, seen := at[k]
		v := newView(it.r, ops)
		if !seen {
			at[k] = len(j.Records)
			j.Records, j.from, kept = append(j.Records, it.r), append(j.from, it.at), append(kept, v)
			continue
		}
		prev, pat := kept[i], j.from[i]
		if bytes.Equal(prev.result, v.result) {
			j.Duplicates++
			if copyBefore(v, it.at, prev, pat) {
				j.Records[i], j.from[i], kept[i] = it.r, it.at, v
			}
			continue
		}
		what := diffJSON(prev.result, v.result)
		if why := ops.contradicts(j.Records[i], it.r); why != "" {
			return nil, fmt.Errorf("%s: %s and %s contradict each other (%s): one of the two runs is wrong", ops.unit(it.r), pat, it.at, why)
		}
		if opt.Conflict != Best {
			return nil, fmt.Errorf("%s: %s and %s differ in %s; rerun the unit, or choose the better with --on-conflict best", ops.unit(it.r), pat, it.at, what)
		}
		j.Resolved++
		if c := ops.compare(it.r, j.Records[i]); c > 0 || c == 0 && bytes.Compare(v.result, prev.result) < 0 {
			j.Records[i], j.from[i], kept[i] = it.r, it.at, v
		}
	}
	return j, nil
}

// sortUnits puts j's records in the units' order (δ, sample, key), so
// that nothing depends on the order of the files.
func sortUnits[R Record](j *Joined[R]) {
	ops := opsFor[R]()
	type unit struct {
		eps    float64
		sample int
		key    string
		r      R
		at     origin
	}
	us := make([]unit, len(j.Records))
	for i, r := range j.Records {
		eps, sample := ops.position(r)
		us[i] = unit{eps, sample, ops.key(r), r, j.from[i]}
	}
	slices.SortFunc(us, func(a, b unit) int {
		if c := cmpFloat(a.eps, b.eps); c != 0 {
			return c
		}
		if a.sample != b.sample {
			return a.sample - b.sample
		}
		return strings.Compare(a.key, b.key)
	})
	for i, u := range us {
		j.Records[i], j.from[i] = u.r, u.at
	}
}

// copyBefore reports whether copy a (at oa) of a unit's result is kept
// over copy b: a record already in the output first, then the one whose
// JSON sorts first.
func copyBefore(a *view, oa origin, b *view, ob origin) bool {
	if oa.pinned != ob.pinned {
		return oa.pinned
	}
	return bytes.Compare(a.full, b.full) < 0
}

// view is a record as JSON: whole, and its result (without what differs
// between two runs of one unit).
type view struct{ full, result []byte }

func newView[R Record](r R, ops kindOps[R]) *view {
	full, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("experiment: record does not encode: %v", err)) // plain structs with finite values
	}
	var m map[string]any
	json.Unmarshal(full, &m)
	failed := m["error"] != nil
	for _, f := range ops.details {
		deletePath(m, f)
	}
	delete(m, "error")
	if failed {
		m["failed"] = true
	}
	res, _ := json.Marshal(m) // keys sorted
	var canon any
	json.Unmarshal(full, &canon)
	full, _ = json.Marshal(canon)
	return &view{full, res}
}

// deletePath deletes a dotted path ("bound.steps") from m.
func deletePath(m map[string]any, path string) {
	head, rest, nested := strings.Cut(path, ".")
	if !nested {
		delete(m, head)
		return
	}
	if sub, ok := m[head].(map[string]any); ok {
		deletePath(sub, rest)
	}
}

// oneExperiment checks that items hold one experiment: one model and data
// set, and one set of settings per group.
func oneExperiment[R Record](items []item[R], ops kindOps[R]) error {
	if len(items) == 0 {
		return nil
	}
	first := items[0]
	byGroup := map[string]item[R]{}
	for _, it := range items {
		ref, a, b, within := first, ops.identity(first.r), ops.identity(it.r), ""
		if a.Model == b.Model && a.Data == b.Data {
			g, ok := byGroup[ops.group(it.r)]
			if !ok {
				byGroup[ops.group(it.r)] = it
				continue
			}
			if ref, a = g, ops.identity(g.r); sameJSON(a.Settings, b.Settings) {
				continue
			}
			if name := ops.groupName(it.r); name != "" {
				within = " (" + name + ")"
			}
		} else {
			a.Settings, b.Settings = nil, nil // the model or data say it
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		what := diffJSON(ja, jb)
		if ref.at.Path == it.at.Path {
			name := it.at.Path
			if name == "" {
				name = "the records"
			}
			return fmt.Errorf("%s mixes two experiments%s: %s (records %d and %d); merge or summarise one experiment at a time", name, within, what, ref.at.N, it.at.N)
		}
		return fmt.Errorf("%s holds records of another experiment than %s%s: %s; merge only the shards of one run", it.at.Path, ref.at.Path, within, what)
	}
	return nil
}

// identity is what the records of one experiment share: model and data
// across all of them, settings within a group.
type identity struct {
	Model    string  `json:"model_sha256"`
	Data     DataRef `json:"data"`
	Settings any     `json:"settings,omitempty"`
}

func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// diffJSON lists the fields in which two JSON objects differ, as dotted
// paths with both values ("settings.lr 0.01 vs 0.05"), the first four.
func diffJSON(a, b []byte) string {
	var va, vb any
	json.Unmarshal(a, &va)
	json.Unmarshal(b, &vb)
	var out []string
	var walk func(path string, x, y any)
	walk = func(path string, x, y any) {
		mx, okx := x.(map[string]any)
		my, oky := y.(map[string]any)
		if okx && oky {
			keys := map[string]bool{}
			for k := range mx {
				keys[k] = true
			}
			for k := range my {
				keys[k] = true
			}
			names := make([]string, 0, len(keys))
			for k := range keys {
				names = append(names, k)
			}
			slices.Sort(names)
			for _, k := range names {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, mx[k], my[k])
			}
			return
		}
		if !sameJSON(x, y) {
			out = append(out, fmt.Sprintf("%s %s vs %s", path, short(x), short(y)))
		}
	}
	walk("", va, vb)
	if len(out) > 4 {
		out = append(out[:4], fmt.Sprintf("%d more", len(out)-4))
	}
	return strings.Join(out, ", ")
}

// short is a JSON value for a message, cut to 70 bytes (a sha256 in hex
// fits).
func short(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, _ := json.Marshal(v)
	if len(b) > 70 {
		return string(b[:67]) + "…"
	}
	return string(b)
}

// kindOps is what joining needs to know of a record type.
type kindOps[R Record] struct {
	decode func(json.RawMessage) (R, error)
	key    func(R) string
	// group: records of one group share their settings; groupName says
	// which for a message.
	group, groupName func(R) string
	identity         func(R) identity
	unit             func(R) string
	position         func(R) (eps float64, sample int)
	// details are the JSON fields (dotted paths) that may differ between
	// two runs of one unit.
	details []string
	// compare orders conflicting records for Best (> 0: a is better);
	// contradicts says why two records cannot both be right, or "".
	compare     func(a, b R) int
	contradicts func(a, b R) string
}

func opsFor[R Record]() kindOps[R] {
	var z R
	var ops any
	switch any(z).(type) {
	case AttackRecord:
		ops = attackOps
	case VerifyRecord:
		ops = verifyOps
	}
	return ops.(kindOps[R])
}

// attackOps join attack records of either input kind: a text attack's
// settings are one per method and δ (one run may give random search
// another budget at δ = 1), and its records contradict each other on the
// sentence rather than the label.
var attackOps = kindOps[AttackRecord]{
	decode: decodeAttack, key: AttackKey,
	group: func(r AttackRecord) string {
		if r.IsText() {
			return fmt.Sprintf("%s@%g", r.Method, r.Eps)
		}
		return r.Method
	},
	groupName: func(r AttackRecord) string {
		if r.IsText() {
			return fmt.Sprintf("method %s at δ %g", r.Method, r.Eps)
		}
		return "method " + r.Method
	},
	position: func(r AttackRecord) (float64, int) { return r.Eps, r.Sample },
	identity: func(r AttackRecord) identity {
		return identity{r.ModelSHA256, r.Data, r.Settings}
	},
	unit: func(r AttackRecord) string {
		noun := "sample"
		if r.IsText() {
			noun = "sentence"
		}
		return fmt.Sprintf("%s %d at δ %g (%s)", noun, r.Sample, r.Eps, r.Method)
	},
	details: []string{"model", "seconds", "witness", "witness_png"},
	compare: func(a, b AttackRecord) int {
		return attackOutcome(a.Error, a.Success, a.AdvLength, a.Stopped, a.NonFinite, a.MinRelMargin).compare(
			attackOutcome(b.Error, b.Success, b.AdvLength, b.Stopped, b.NonFinite, b.MinRelMargin))
	},
	contradicts: func(a, b AttackRecord) string {
		if a.Error != "" || b.Error != "" {
			return ""
		}
		if a.IsText() != b.IsText() {
			return "an image attack and a text attack"
		}
		if a.IsText() {
			return differ(map[string][2]any{"src_ids": {a.SrcIDs, b.SrcIDs}, "src_len": {a.SrcLen, b.SrcLen}, "k": {a.K, b.K},
				"orig_output": {a.OrigText, b.OrigText}, "orig_length": {a.OrigLength, b.OrigLength}, "orig_non_finite": {a.OrigNonFinite, b.OrigNonFinite}})
		}
		return differ(map[string][2]any{"label": {a.Label, b.Label}, "k": {a.K, b.K}, "orig_tokens": {a.OrigTokens, b.OrigTokens},
			"orig_non_finite": {a.OrigNonFinite, b.OrigNonFinite}})
	},
}

var verifyOps = kindOps[VerifyRecord]{
	decode: decodeVerify, key: VerifyKey,
	group:     func(VerifyRecord) string { return "" },
	groupName: func(VerifyRecord) string { return "" },
	position:  func(r VerifyRecord) (float64, int) { return r.Eps, r.Sample },
	identity: func(r VerifyRecord) identity {
		return identity{r.ModelSHA256, r.Data, r.Settings}
	},
	unit: func(r VerifyRecord) string {
		return fmt.Sprintf("sample %d at δ %g (K̂ %d)", r.Sample, r.Eps, r.K)
	},
	details: []string{"model", "seconds", "bound_seconds", "stage", "proven_bound", "incumbent", "nodes", "binaries", "relu_binaries",
		"unstable_interval", "unstable", "witness", "witness_length", "witness_tokens", "witness_non_finite", "reason", "mps", "phases", "bound.steps"},
	compare: func(a, b VerifyRecord) int {
		if c := cmpBool(a.Error == "", b.Error == ""); c != 0 {
			return c
		}
		if c := cmpBool(decided(a), decided(b)); c != 0 {
			return c
		}
		if a.Bound != nil && b.Bound != nil {
			if c := -cmpFloat(upper(a), upper(b)); c != 0 {
				return c
			}
			return cmpFloat(float64(a.Bound.Lower), float64(b.Bound.Lower))
		}
		return 0
	},
	contradicts: func(a, b VerifyRecord) string {
		if a.Error != "" || b.Error != "" {
			return ""
		}
		if why := differ(map[string][2]any{"label": {a.Label, b.Label}}); why != "" {
			return why
		}
		if a.Bound != nil && b.Bound != nil {
			if float64(a.Bound.Lower) > upper(b) || float64(b.Bound.Lower) > upper(a) {
				return fmt.Sprintf("a witnessed length above a proven bound: %d/%v vs %d/%v", a.Bound.Lower, upper(a), b.Bound.Lower, upper(b))
			}
			return ""
		}
		if decided(a) && decided(b) && a.Verdict != b.Verdict {
			return fmt.Sprintf("verdict %s vs %s", a.Verdict, b.Verdict)
		}
		return ""
	},
}

// decided reports whether a verification record settles its question.
func decided(r VerifyRecord) bool {
	return r.Verdict == "robust" || r.Verdict == "vulnerable" || r.Verdict == "certified"
}

// upper is a worst-case length search's proven bound, +Inf for none.
func upper(r VerifyRecord) float64 {
	if r.Bound == nil || r.Bound.Upper == nil {
		return math.Inf(1)
	}
	return float64(*r.Bound.Upper)
}

// outcome is what Best compares of two attack records.
type outcome struct {
	ok, success bool
	// rank orders replayed outputs as the attacks do: a stopped one, or
	// one cut short by non-finite logits, by its length; one that hit
	// the step cap above all of them.
	rank   int
	margin float64
}

func attackOutcome(err string, success bool, length int, stopped, nonFinite bool, margin float64) outcome {
	rank := length
	if !stopped && !nonFinite {
		rank++
	}
	return outcome{err == "", success, rank, margin}
}

// compare is > 0 if o is better than p: no error, then a success, then
// the longer output, then the larger margin.
func (o outcome) compare(p outcome) int {
	if c := cmpBool(o.ok, p.ok); c != 0 {
		return c
	}
	if c := cmpBool(o.success, p.success); c != 0 {
		return c
	}
	if o.rank != p.rank {
		return o.rank - p.rank
	}
	return cmpFloat(o.margin, p.margin)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func cmpFloat(a, b float64) int {
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}

// differ names the first of the fields (in name order) whose two values
// differ, with both values, or "".
func differ(fields map[string][2]any) string {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if v := fields[k]; !sameJSON(v[0], v[1]) {
			return fmt.Sprintf("%s %s vs %s", k, short(v[0]), short(v[1]))
		}
	}
	return ""
}
