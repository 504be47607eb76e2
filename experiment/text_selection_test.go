package experiment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/nmt"
)

// TestTextSelection: the user's sentences (arguments or a file) are the
// data, every one a sample, as Sentences makes them; otherwise the
// corpus's split with the sentences PickSamples draws, as CorpusText
// reads it. What the settings cannot give is a SettingsError naming the
// flag; a file that cannot be read is not.
func TestTextSelection(t *testing.T) {
	m := tinyTextModel(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "mine.txt")
	if err := os.WriteFile(file, []byte("Das Haus ist klein.\n\nEin kleines Haus.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sel   TextSelection
		texts []string
		name  string
	}{
		{TextSelection{Texts: []string{"Das Haus."}}, []string{"Das Haus."}, "args"},
		{TextSelection{File: file}, []string{"Das Haus ist klein.", "Ein kleines Haus."}, file},
	} {
		data, samples, err := tc.sel.Select(m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Sentences(tc.texts, tc.name, m.D32)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(data.Ref, want.Ref) || len(samples) != len(tc.texts) || samples[len(samples)-1] != len(tc.texts)-1 {
			t.Errorf("%+v: %+v %v, want %+v and every sentence", tc.sel, data.Ref, samples, want.Ref)
		}
	}
	tsv := filepath.Join(dir, "own.tsv")
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "Das Haus hat %d Fenster.\tThe house has %d windows.\n", i, i)
	}
	if err := os.WriteFile(tsv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	own := nmt.CorpusChoice{Name: tsv, SplitSeed: 5}
	data, samples, err := TextSelection{Sentences: 3, Split: "dev", Seed: 2, Corpus: own}.Select(m)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := corpus.LoadTSV(tsv, 5)
	if err != nil {
		t.Fatal(err)
	}
	want, err := CorpusText(sp, "dev", 5, m.D32)
	if err != nil {
		t.Fatal(err)
	}
	picked, _ := PickSamples(3, nil, len(want.Pairs), 2)
	if !reflect.DeepEqual(data.Ref, want.Ref) || !reflect.DeepEqual(samples, picked) {
		t.Fatalf("corpus: %+v %v, want %+v %v", data.Ref, samples, want.Ref, picked)
	}
	for _, tc := range []struct {
		sel      TextSelection
		want     string
		settings bool
	}{
		{TextSelection{Texts: []string{"a"}, File: file}, "give --text or --text-file, not both", true},
		{TextSelection{Texts: []string{" "}}, "--text: ", true},
		{TextSelection{File: filepath.Join(dir, "none.txt")}, "--text-file: ", false},
		{TextSelection{Sentences: 1, Split: "train", Corpus: own}, `--split "train": a text model's sentences come from dev or test`, true},
		{TextSelection{Indices: []int{len(want.Pairs)}, Split: "dev", Corpus: own}, "sample index", true},
	} {
		_, _, err := tc.sel.Select(m)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || errors.As(err, new(SettingsError)) != tc.settings {
			t.Errorf("%+v: got %v, want %q (a SettingsError: %v)", tc.sel, err, tc.want, tc.settings)
		}
	}
}
