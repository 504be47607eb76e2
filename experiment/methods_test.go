package experiment

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/attack"
)

// TestSettingsKeys: normalised for a method, the one settings type
// encodes as the image and text attacks' settings did before they were
// one type, field for field and in order, so that records written since
// keep the keys of those written before (and resume them).
func TestSettingsKeys(t *testing.T) {
	all := AttackSettings{MaxLen: -1, MaxSteps: 20, Budget: 30, Seed: 1, Loss: "margin", LR: 0.5, Tau: 2, Clip: 1, Restarts: 3,
		Horizon: 7, EarlyStop: true, Beam: 4, Swaps: 24, Loop: true}
	head := `"max_len":-1,"max_steps":20,"budget":30,"seed":1`
	for _, tc := range []struct{ method, want string }{
		{MethodRandom, `{` + head + `}`},
		{MethodPGD, `{` + head + `,"loss":"margin","lr":0.5,"clip":1,"restarts":3,"early_stop":true}`},
		{MethodGumbel, `{` + head + `,"lr":0.5,"tau":2,"clip":1,"horizon":7}`},
		{MethodEmbedding, `{` + head + `,"lr":0.5,"clip":1,"horizon":7}`},
		{MethodFlip, `{` + head + `,"clip":1,"horizon":7,"beam":4,"swaps":24,"loop":true}`},
		{"no such method", `{` + head + `}`},
	} {
		b, err := json.Marshal(all.Normalize(tc.method))
		if err != nil || string(b) != tc.want {
			t.Errorf("%s: settings %s (%v), want %s", tc.method, b, err, tc.want)
		}
	}
	eos := all
	eos.Loss = string(attack.LossEOSLogProb)
	if got := eos.Normalize(MethodGumbel).Loss; got != "eos-logprob" {
		t.Errorf("gumbel with the eos loss: loss %q", got)
	}
}

// TestRecordKinds: an attack record's JSON holds its input kind's fields
// only, and decodes back into the same kind.
func TestRecordKinds(t *testing.T) {
	img := AttackRecord{SchemaVersion: SchemaVersion, Method: MethodPGD, AttackImage: &AttackImage{Label: []int{1}, OrigTokens: []int{1}, AdvTokens: []int{1, 2}, Steps: 5}}
	txt := AttackRecord{SchemaVersion: SchemaVersion, Method: MethodFlip, AttackText: &AttackText{SrcText: "a b", SrcIDs: []int{3, 4}, Steps: 5}}
	for _, tc := range []struct {
		r          AttackRecord
		text       bool
		has, hasNo []string
	}{
		{img, false, []string{`"label":[1]`, `"pgd_steps":5`, `"orig_tokens"`}, []string{`"src_text"`, `"orig_output"`, `"substitutions"`, `"steps"`}},
		{txt, true, []string{`"src_text":"a b"`, `"steps":5`, `"orig_output"`, `"substitutions"`}, []string{`"label"`, `"pgd_steps"`, `"orig_tokens"`}},
	} {
		b, err := json.Marshal(tc.r)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range tc.has {
			if !strings.Contains(string(b), s) {
				t.Errorf("%s: no %s", b, s)
			}
		}
		for _, s := range tc.hasNo {
			if strings.Contains(string(b), s) {
				t.Errorf("%s: holds %s", b, s)
			}
		}
		r, err := decodeAttack(b)
		if err != nil || r.IsText() != tc.text {
			t.Errorf("%s: decoded as text %v (%v), want %v", b, r.IsText(), err, tc.text)
		}
		if tc.text && r.SrcLen != 2 {
			t.Errorf("%s: src_len %d from the ids, want 2", b, r.SrcLen)
		}
	}
}

// TestMethodRegistry: every method names the settings it reads, attacks
// some input kind, and has a search for the points of each kind it
// attacks (images: continuous; text: tokens, or embeddings); the text
// methods are the registry's.
func TestMethodRegistry(t *testing.T) {
	var names []string
	typ := reflect.TypeFor[AttackSettings]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	for _, m := range methods {
		for _, name := range m.Reads {
			if !slices.Contains(names, name) {
				t.Errorf("%s reads an unknown setting %q", m.Name, name)
			}
		}
		if !m.Images && !m.Text {
			t.Errorf("%s attacks no input kind", m.Name)
		}
		if m.Images && run[[]float64](m) == nil {
			t.Errorf("%s attacks images without a search of continuous points", m.Name)
		}
		if m.Text && m.Embedded && run[[]float64](m) == nil || m.Text && !m.Embedded && run[[]int](m) == nil {
			t.Errorf("%s attacks text without a search of its points", m.Name)
		}
		if m.Text && m.TextBudget < 1 {
			t.Errorf("%s: text budget %d", m.Name, m.TextBudget)
		}
	}
	if got := MethodNames(true); !slices.Equal(got, []string{MethodRandom, MethodGumbel, MethodEmbedding, MethodFlip}) {
		t.Errorf("text methods %v", got)
	}
	if got := MethodNames(false); !slices.Equal(got, []string{MethodRandom, MethodPGD}) {
		t.Errorf("image methods %v", got)
	}
	if run[[]int](Method{Points: pgd[[]float64]}) != nil {
		t.Error("a method with continuous points only has a token search")
	}
}

// TestReadBy: the methods that read a setting, in the order given.
func TestReadBy(t *testing.T) {
	for _, tc := range []struct {
		setting string
		methods []string
		want    []string
	}{
		{"loss", TextMethods, []string{MethodGumbel, MethodEmbedding}},
		{"loss", MethodNames(false), []string{MethodPGD}},
		{"horizon", TextMethods, []string{MethodGumbel, MethodEmbedding, MethodFlip}},
		{"tau", []string{MethodFlip, MethodGumbel}, []string{MethodGumbel}},
		{"lr", []string{MethodRandom}, nil},
		{"lr", []string{"no such method"}, nil},
	} {
		if got := ReadBy(tc.setting, tc.methods); !slices.Equal(got, tc.want) {
			t.Errorf("%s by %v: %v, want %v", tc.setting, tc.methods, got, tc.want)
		}
	}
}

// TestTextDefaults: a setting not given takes the method's default, one
// given keeps its value (even zero, for validation to refuse); the
// gradient horizon never exceeds the step cap.
func TestTextDefaults(t *testing.T) {
	gumbel, _ := LookupMethod(MethodGumbel)
	s := AttackSettings{Budget: 5, LR: 0, MaxSteps: 30, Horizon: 200}
	none := func(string) bool { return false }
	if got := gumbel.TextDefaults(s, none); got.Budget != 800 || got.LR != 0.005 || got.MaxSteps != TextMaxSteps || got.Horizon != 200 {
		t.Errorf("nothing given: %+v", got)
	}
	all := func(string) bool { return true }
	if got := gumbel.TextDefaults(s, all); got.Budget != 5 || got.LR != 0 || got.MaxSteps != 30 || got.Horizon != 30 {
		t.Errorf("everything given: %+v", got)
	}
}
