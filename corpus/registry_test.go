package corpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRegistry: the corpora lenspec ships are registered and loaded by
// name at the path given; any other name is a TSV file; a second
// registration of a name panics.
func TestRegistry(t *testing.T) {
	var names []string
	for _, s := range Sources() {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "ding,multi30k" {
		t.Fatalf("registered corpora %v", names)
	}
	if _, err := Load("multi30k", t.TempDir(), 1); err == nil {
		t.Fatal("loaded Multi30k from an empty directory")
	}
	bad := filepath.Join(t.TempDir(), "not-ding")
	if err := os.WriteFile(bad, []byte("a :: b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load("ding", bad, 1); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("another file as the Ding dictionary: %v", err)
	}
	tsv := filepath.Join(t.TempDir(), "mine.tsv")
	var b strings.Builder
	for i := range 400 {
		b.WriteString("Das Haus " + strings.Repeat("x", i+1) + ".\tThe house " + strings.Repeat("y", i+1) + ".\n")
	}
	if err := os.WriteFile(tsv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := Load(tsv, "", 1)
	if err != nil || sp.Format != "tsv" || len(sp.Train)+len(sp.Dev)+len(sp.Test) != 400 || len(sp.Dev) == 0 {
		t.Fatalf("TSV by name: %+v, %v", sp, err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a second registration of ding did not panic")
		}
	}()
	s, _ := Lookup("ding")
	Register(s)
}
