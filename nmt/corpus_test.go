package nmt

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/model"
	"github.com/spf13/pflag"
)

// TestCorpusChoice: every registered corpus brings its location flag;
// a model's training record fills in its corpus and split seed unless
// given; a model trained on a file of its own must be told the file; Load
// reads the corpus chosen where its flag says.
func TestCorpusChoice(t *testing.T) {
	var c CorpusChoice
	fs := pflag.NewFlagSet("eval", pflag.ContinueOnError)
	c.RegisterFlags(fs)
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	want := CorpusFlagNames()
	if len(names) != len(want) || len(c.Paths) != len(corpus.Sources()) {
		t.Fatalf("flags %v, want %v; paths %v", names, want, c.Paths)
	}
	for _, s := range corpus.Sources() {
		if fs.Lookup(s.LocationFlag) == nil || c.Paths[s.Name] == nil {
			t.Errorf("corpus %s: no --%s", s.Name, s.LocationFlag)
		}
	}
	if c.SplitSeed != corpus.DefaultSplitSeed || c.Name != "" {
		t.Fatalf("defaults %+v", c)
	}
	rec := func(tr map[string]any) *model.Config { return &model.Config{Training: tr} }
	for _, tc := range []struct {
		name      string
		given     CorpusChoice
		training  map[string]any
		seedGiven bool
		want      CorpusChoice
		err       string
	}{
		{"no record", CorpusChoice{SplitSeed: 3}, nil, false, CorpusChoice{SplitSeed: 3}, ""},
		{"registered", CorpusChoice{SplitSeed: 3}, map[string]any{"corpus": "ding", "split_seed": 7.0}, false, CorpusChoice{Name: "ding", SplitSeed: 7}, ""},
		{"seed given", CorpusChoice{SplitSeed: 3}, map[string]any{"corpus": "ding", "split_seed": 7.0}, true, CorpusChoice{Name: "ding", SplitSeed: 3}, ""},
		{"named", CorpusChoice{Name: "x.tsv"}, map[string]any{"corpus": "tsv", "split_seed": 7.0}, false, CorpusChoice{Name: "x.tsv", SplitSeed: 7}, ""},
		{"own corpus", CorpusChoice{}, map[string]any{"corpus": "tsv"}, false, CorpusChoice{}, "models/m was trained on a corpus of its own: name it with --corpus"},
		{"unregistered", CorpusChoice{}, map[string]any{"corpus": "nope"}, false, CorpusChoice{}, ""},
	} {
		got, err := tc.given.ForModel("models/m", rec(tc.training), tc.seedGiven)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: got %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	path := filepath.Join(t.TempDir(), "own.tsv")
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "Das Haus hat %d Fenster.\tThe house has %d windows.\n", i, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := CorpusChoice{Name: path, SplitSeed: 5}.Load()
	if err != nil {
		t.Fatal(err)
	}
	direct, err := corpus.LoadTSV(path, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, direct) {
		t.Fatal("a TSV corpus loads otherwise than corpus.LoadTSV")
	}
	missing := filepath.Join(t.TempDir(), "no-ding")
	if _, err := (CorpusChoice{Paths: map[string]*string{DefaultCorpus: &missing}}).Load(); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("the default corpus at %s: %v", missing, err)
	}
}
