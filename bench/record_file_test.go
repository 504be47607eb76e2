package bench

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestAppendRecords: records go to the file one JSON line each, keyed by
// run and operation (a run's operation again is refused as a duplicate),
// and a second writer is refused while the first holds the file.
func TestAppendRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.jsonl")
	f, err := OpenRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := []Record{{Machine: Machine{Start: "t1"}, Op: "decode"}, {Machine: Machine{Start: "t1"}, Op: "train"}, {Machine: Machine{Start: "t2"}, Op: "decode"}}
	if err := AppendRecords(f, recs); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRecords(path); err == nil {
		t.Fatal("a second writer was not refused")
	}
	if err := AppendRecords(f, recs[:1]); err == nil {
		t.Fatal("the same run's operation appended twice")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var got []Record
	for sc := bufio.NewScanner(file); sc.Scan(); {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 3 || got[1].Op != "train" || got[2].Start != "t2" {
		t.Fatalf("file holds %+v", got)
	}
	g, err := OpenRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.Len() != 3 {
		t.Fatalf("reopened: %d records", g.Len())
	}
}
