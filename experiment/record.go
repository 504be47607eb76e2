package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/lenspec/lenspec/attack"
	"github.com/lenspec/lenspec/results"
	"github.com/lenspec/lenspec/verify"
)

// SchemaVersion is the version of the records written now. Version 0 is
// the CLI's records from before this package (no schema_version field).
const SchemaVersion = 1

// DataRef identifies the data set a sample comes from.
type DataRef struct {
	Name  string `json:"name"`
	Split string `json:"split"`
	Seed  uint64 `json:"seed"`
	// SHA256 identifies data given as files (Inputs): their values.
	SHA256 string `json:"sha256,omitempty"`
}

// AttackSettings are the settings that change an attack's result, besides
// the model, data, sample, radius and method, for images and text alike.
// Settings a method does not read are zero (Normalize), so changing them
// does not redo its work; unread settings are left out of the JSON, which
// keeps every record's key what it was when image and text attacks had
// settings of their own.
type AttackSettings struct {
	// MaxLen is K̂ (−1: the original output's length).
	MaxLen   int    `json:"max_len"`
	MaxSteps int    `json:"max_steps"`
	Budget   int    `json:"budget"` // samples, iterations or evaluations
	Seed     uint64 `json:"seed"`
	// Loss is the relaxed attacks' objective (attack.Loss). A method with
	// Method.MarginEmpty records the paper's margin J̃ as empty, so text
	// records from before the field keep their keys.
	Loss string  `json:"loss,omitempty"`
	LR   float64 `json:"lr,omitempty"`
	// Tau is the Gumbel-softmax temperature.
	Tau  float64 `json:"tau,omitempty"`
	Clip float64 `json:"clip,omitempty"`
	// Restarts is PGD's runs per image.
	Restarts int `json:"restarts,omitempty"`
	// Horizon caps the decoding steps a gradient unrolls (0: MaxSteps).
	Horizon   int  `json:"horizon,omitempty"`
	EarlyStop bool `json:"early_stop,omitempty"`
	// Beam and Swaps are flip's beam and substitutions per round; Loop
	// adds its targeted continuations (attack.FlipOptions.Loop).
	Beam  int  `json:"beam,omitempty"`
	Swaps int  `json:"swaps,omitempty"`
	Loop  bool `json:"loop,omitempty"`
}

// Normalize returns the settings method reads, the rest zero: the form
// records are keyed by, so a setting a method ignores cannot split its
// results. An unknown method reads none of them.
func (s AttackSettings) Normalize(method string) AttackSettings {
	m, _ := LookupMethod(method)
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if !slices.Contains(everyMethodReads, name) && !slices.Contains(m.Reads, name) {
			v.Field(i).SetZero()
		}
	}
	if m.MarginEmpty && s.Loss == string(attack.LossMargin) {
		s.Loss = ""
	}
	return s
}

// everyMethodReads are the settings every method reads, by their JSON
// names.
var everyMethodReads = []string{"max_len", "max_steps", "budget", "seed"}

// AttackRecord is one line of an attack results file: one (sample,
// radius, method), of an image or of a sentence. Lengths are float64
// replays. The input kind's own fields are in Image or Text, exactly one
// of which is set: a record's JSON holds the fields of its kind only.
type AttackRecord struct {
	SchemaVersion int            `json:"schema_version"`
	Model         string         `json:"model"` // the path given, for people
	ModelSHA256   string         `json:"model_sha256"`
	Data          DataRef        `json:"data"`
	Sample        int            `json:"sample"`
	Eps           float64        `json:"eps"`
	Method        string         `json:"method"`
	Settings      AttackSettings `json:"settings"`
	*AttackImage
	*AttackText
	K          int `json:"k"`
	OrigLength int `json:"orig_length"`
	// AdvLength is the replayed output length; with Stopped false the
	// output had no eos within the step cap and AdvLength is the cap
	// (ℓ ≥ cap).
	AdvLength    int     `json:"adv_length"`
	Stopped      bool    `json:"stopped"`
	Success      bool    `json:"success"` // replayed ℓ > K, no tie on the path
	MinRelMargin float64 `json:"min_rel_margin"`
	Found32      int     `json:"found_float32_length"`
	Evals        int64   `json:"evals"`
	Seconds      float64 `json:"seconds"`
	// Witness is the adversarial input's file (safetensors): an image's,
	// or the embedding attack's input rows.
	Witness string `json:"witness,omitempty"`
	// Arithmetic is the float32 arithmetic the search ran on (Arithmetic):
	// where it is the same, a rerun finds the same witness. Not part of the
	// key; empty in failed records and those written before issue 53.
	Arithmetic string `json:"arithmetic,omitempty"`
	// LengthCounts[ℓ] counts random samples by float32 output length; the
	// last entry counts samples that did not stop.
	LengthCounts []int64 `json:"length_counts,omitempty"`
	// Error, if set, says why the unit failed; the other results are then
	// empty.
	Error string `json:"error,omitempty"`
	// Crashed marks a failure that killed the process (CrashError): the
	// unit was recorded without running, and results retry redoes it.
	Crashed bool `json:"crashed,omitempty"`

	// NonFinite marks an adversarial output whose decoding met
	// non-finite logits after AdvLength tokens, without eos
	// (model.Result.NonFinite: the state overflowed; ℓ ≥ AdvLength, and
	// Stopped is false); OrigNonFinite the same for the original output.
	// Records from before these fields read as false.
	NonFinite     bool `json:"non_finite,omitempty"`
	OrigNonFinite bool `json:"orig_non_finite,omitempty"`
}

// AttackImage is an image attack record's own part: the label and the
// output tokens.
type AttackImage struct {
	Label      []int `json:"label"`
	OrigTokens []int `json:"orig_tokens"`
	AdvTokens  []int `json:"adv_tokens"`
	Steps      int   `json:"pgd_steps,omitempty"`
	// WitnessPNG shows a one-channel witness to people.
	WitnessPNG string `json:"witness_png,omitempty"`
}

// AttackText is a text attack record's own part: the sentence, its
// translations and the adversarial source. Ids are the model's source
// token ids.
type AttackText struct {
	SrcText string `json:"src_text"`
	SrcIDs  []int  `json:"src_ids,omitempty"`
	RefText string `json:"ref_text"`
	// SrcLen is the source's length in tokens.
	SrcLen int `json:"src_len"`
	// Redacted is set for a corpus whose text may not be copied
	// (TextData.Redact): src_text, ref_text, src_ids and adv_text are
	// left out, and the adversarial source is AdvSubs, its substitutions
	// [position, token id] into sentence Sample's source ids, which the
	// corpus restores (ApplySubs).
	Redacted bool     `json:"redacted,omitempty"`
	AdvSubs  [][2]int `json:"adv_subs,omitempty"`
	Budget   int      `json:"substitutions"` // ⌈δ·n⌉
	OrigText string   `json:"orig_output"`
	// AdvText and AdvIDs are the adversarial source (discrete methods);
	// AdvOutput the adversarial output's text.
	AdvText   string `json:"adv_text,omitempty"`
	AdvIDs    []int  `json:"adv_ids,omitempty"`
	AdvOutput string `json:"adv_output"`
	Steps     int    `json:"steps,omitempty"`
	// Pick says which candidate of a relaxation won (attack.Outcome.Pick).
	Pick string `json:"pick,omitempty"`
}

// IsText reports whether r is a text attack's record.
func (r AttackRecord) IsText() bool { return r.AttackText != nil }

// VerifySettings are the settings that change a verification's result,
// besides the model, data, sample and radius.
type VerifySettings struct {
	// MaxLen is K̂ (−1: the length of the sample's label).
	MaxLen   int     `json:"max_len"`
	MaxSteps int     `json:"max_steps"`
	Bounds   string  `json:"bounds"`
	Timeout  float64 `json:"timeout"` // seconds per sample
	// Solver is "cbc" (in process), "external" (SolverBinary on an MPS
	// file) or "none" (attack, bounds and, with BaB, branch and bound only).
	Solver       string   `json:"solver"`
	SolverBinary string   `json:"solver_binary,omitempty"`
	SolverParams []string `json:"solver_params,omitempty"`
	Threads      int      `json:"threads"`
	Safety       float64  `json:"safety"`
	Optimize     bool     `json:"optimize,omitempty"`
	Tokens       bool     `json:"tokens"`
	Abstract     bool     `json:"abstract"`
	RelaxGap     float64  `json:"relax_gap,omitempty"`
	// BaB runs branch and bound over ReLU splits and tokens (α,β-CROWN
	// bounds) before the MIPs, or alone with solver "none".
	BaB bool `json:"bab,omitempty"`
	// Cuts learns nogoods from branch and bound's closed leaves and closes
	// the domains they cover unbounded (verify.Options.Cuts).
	Cuts bool `json:"cuts,omitempty"`
	// CutMultipliers also carries the nogoods into every domain's bound,
	// one multiplier per cut (verify.Options.CutMultipliers).
	CutMultipliers bool `json:"cut_multipliers,omitempty"`
	// Clip cuts each branch-and-bound child's input box by its new split
	// (verify.Options.Clip; the CLI's --clip-input, apart from the
	// attacks' --clip, which is J̃'s ε).
	Clip bool `json:"clip,omitempty"`
	// The PGD warm start.
	AttackSteps    int     `json:"attack_steps"`
	AttackRestarts int     `json:"attack_restarts"`
	AttackLR       float64 `json:"attack_lr"`
	// AttackTargeted also tries a targeted continuation per first token
	// when the plain warm start finds no witness (attack.Falsifier).
	AttackTargeted bool `json:"attack_targeted,omitempty"`
	// SearchRestarts, if positive, runs the same PGD again with this many
	// runs as the first stage after bounds that do not prove the property
	// (verify.Options.Search).
	SearchRestarts int    `json:"search_restarts,omitempty"`
	Seed           uint64 `json:"seed"`
	// Bound searches the worst-case output length (verify.Bound) instead
	// of deciding one K̂; MaxLen is then the largest K̂ tried (−1:
	// verify.MaxK) and Timeout applies to each K̂ tried.
	Bound bool `json:"bound,omitempty"`
}

// BoundResult is a worst-case length search's outcome: some input of the
// set decodes Lower tokens (replayed), none more than Upper (proven; null:
// no K̂ tried was proven).
type BoundResult struct {
	Lower     int                `json:"lower"`
	Upper     *int               `json:"upper"`
	Certified bool               `json:"certified"`
	Steps     []verify.BoundStep `json:"steps"`
}

// VerifyRecord is one line of a verification results file.
type VerifyRecord struct {
	SchemaVersion int            `json:"schema_version"`
	Model         string         `json:"model"`
	ModelSHA256   string         `json:"model_sha256"`
	Data          DataRef        `json:"data"`
	Sample        int            `json:"sample"`
	Eps           float64        `json:"eps"`
	K             int            `json:"k"`
	Settings      VerifySettings `json:"settings"`
	Label         []int          `json:"label"`
	Verdict       string         `json:"verdict"`
	Stage         string         `json:"stage"`
	Seconds       float64        `json:"seconds"`
	BoundSeconds  float64        `json:"bound_seconds"`
	// ProvenBound is a proven upper bound on the max-min margin (null:
	// nothing proven, or eos provably wins at some step: stage "bounds").
	ProvenBound  *float64 `json:"proven_bound"`
	Incumbent    *float64 `json:"incumbent"`
	Nodes        int64    `json:"nodes"`
	Binaries     int      `json:"binaries"`
	ReLUBinaries int      `json:"relu_binaries"`
	// Unstable ReLUs (binaries of the exact MIP) under interval bounds and
	// under the bounds used.
	UnstableInterval int            `json:"unstable_interval"`
	Unstable         int            `json:"unstable"`
	Witness          string         `json:"witness,omitempty"`
	WitnessLength    *int           `json:"witness_length,omitempty"`
	WitnessTokens    []int          `json:"witness_tokens,omitempty"`
	Reason           string         `json:"reason,omitempty"`
	MPS              string         `json:"mps,omitempty"`
	Phases           []verify.Phase `json:"phases,omitempty"`
	// Bound is the worst-case length search's outcome (Settings.Bound);
	// Verdict is then "certified" or "open".
	Bound *BoundResult `json:"bound,omitempty"`
	// Error, if set, says why the unit failed (a solver error, a panic, a
	// crash); the verdict is then unknown.
	Error string `json:"error,omitempty"`
	// Crashed marks a failure that killed the process (CrashError).
	Crashed bool `json:"crashed,omitempty"`

	// WitnessNonFinite marks a witness whose replay met non-finite logits
	// after WitnessLength tokens (model.Result.NonFinite): the tokens
	// before were decided on finite logits, so ℓ ≥ WitnessLength.
	WitnessNonFinite bool `json:"witness_non_finite,omitempty"`
	// Arithmetic is the float32 arithmetic its falsifiers ran on
	// (Arithmetic), as in AttackRecord.
	Arithmetic string `json:"arithmetic,omitempty"`
}

// The key fields: a record's identity. Everything that changes a result
// is in one of them.
var (
	attackKey = results.KeyFields("model_sha256", "data", "sample", "eps", "method", "settings")
	verifyKey = results.KeyFields("model_sha256", "data", "sample", "eps", "k", "settings")
)

// AttackKey returns the resume key of r.
func AttackKey(r AttackRecord) string { return mustKey(attackKey, r) }

// VerifyKey returns the resume key of r.
func VerifyKey(r VerifyRecord) string { return mustKey(verifyKey, r) }

func mustKey(f func(json.RawMessage) (string, error), r any) string {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("experiment: record does not encode: %v", err)) // plain structs with finite values
	}
	k, err := f(b)
	if err != nil {
		panic(fmt.Sprintf("experiment: record has no key: %v", err))
	}
	return k
}

// keyHash is a short stable name for a key, for file names.
func keyHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:6])
}

// finite returns &v, or nil for NaN and ±Inf (which JSON cannot hold).
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// margin makes a top-2 margin JSON-safe: +Inf (no step decoded) is
// recorded as the largest float64.
func margin(v float64) float64 {
	if math.IsInf(v, 1) {
		return math.MaxFloat64
	}
	return v
}

func nonNil(x []int) []int {
	if x == nil {
		return []int{}
	}
	return slices.Clone(x)
}
