package results

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDrop: dropped records are gone, their units not done and their
// attempts cleared, the others kept as they were; a file another writer
// holds is refused and left alone.
func TestDrop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	f, err := Open(path, recKey)
	if err != nil {
		t.Fatal(err)
	}
	recs := []rec{{1, 0.1, "pgd", 5}, {2, 0.1, "pgd", -1}, {3, 0.1, "pgd", 7}, {4, 0.1, "pgd", -1}}
	for _, r := range recs {
		for range 2 {
			if _, err := f.BeginAttempt(keyOf(t, r)); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Append(keyOf(t, r), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	failed := func(raw json.RawMessage) bool { // length −1 stands for a failed unit
		var r rec
		return json.Unmarshal(raw, &r) == nil && r.Length < 0
	}

	// Refused while a writer holds the file.
	w, err := Open(path, recKey)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if _, err := Drop(path, recKey, failed); !errors.Is(err, ErrLocked) {
		t.Fatalf("drop under a writer: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("drop under a writer changed the file")
	}
	w.Close()

	dropped, err := Drop(path, recKey, failed)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{keyOf(t, recs[1]), keyOf(t, recs[3])}; !slices.Equal(dropped, want) {
		t.Fatalf("dropped %q, want %q", dropped, want)
	}
	got, err := Read[rec](path)
	if err != nil || !slices.Equal(got, []rec{recs[0], recs[2]}) {
		t.Fatalf("after drop: %v (%v)", got, err)
	}
	f, err = Open(path, recKey)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		kept := i%2 == 0
		if f.Done(keyOf(t, r)) != kept || (f.Attempts(keyOf(t, r)) == 0) == kept {
			t.Errorf("record %d: done %v, attempts %d", r.Image, f.Done(keyOf(t, r)), f.Attempts(keyOf(t, r)))
		}
	}
	f.Close()
	// Nothing left to drop: the file stays as it is.
	if d, err := Drop(path, recKey, failed); err != nil || len(d) != 0 {
		t.Fatalf("second drop: %v, %v", d, err)
	}
	if got, err := Read[rec](path); err != nil || len(got) != 2 {
		t.Fatalf("after the second drop: %v (%v)", got, err)
	}
}
