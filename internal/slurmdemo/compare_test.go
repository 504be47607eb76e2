package slurmdemo

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCompare checks that the comparison the demonstration relies on
// finds every way a merged file can differ from the unsharded run's: a
// unit missing, recorded twice or extra, a verdict or witness length
// changed, a witness file with other bytes; and that timings alone and
// the witness file's path do not count.
func TestCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	w1 := write("a.safetensors", "exact input")
	w2 := write("b.safetensors", "exact input")
	w3 := write("c.safetensors", "other input")
	rec := func(sample int, verdict, witness string, secs string, wlen int) string {
		s := `{"sample":` + strconv.Itoa(sample) + `,"eps":0.5,"k":3,"verdict":"` + verdict + `","seconds":` + secs +
			`,"bound_seconds":` + secs + `,"phases":[{"name":"falsify","seconds":` + secs + `,"status":"witness"}]`
		if witness != "" {
			s += `,"witness":"` + witness + `","witness_length":` + strconv.Itoa(wlen)
		}
		return s + "}\n"
	}
	ref := write("ref.jsonl", rec(1, "robust", "", "0.5", 0)+rec(2, "vulnerable", w1, "11.2", 4))
	want, err := ReadRecords(ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, got, err string
	}{
		{"equal but for timings and the witness's path", rec(2, "vulnerable", w2, "40.1", 4) + rec(1, "robust", "", "0.9", 0), ""},
		{"missing", rec(1, "robust", "", "0.5", 0), "sample=2 eps=0.5 k=3 missing"},
		{"twice", rec(1, "robust", "", "0.5", 0) + rec(2, "vulnerable", w1, "11.2", 4) + rec(1, "robust", "", "0.5", 0), "recorded twice"},
		{"extra", rec(1, "robust", "", "0.5", 0) + rec(2, "vulnerable", w1, "11.2", 4) + rec(3, "robust", "", "0.5", 0), "sample=3 eps=0.5 k=3 is not in"},
		{"verdict", rec(1, "unknown", "", "0.5", 0) + rec(2, "vulnerable", w1, "11.2", 4), `verdict "unknown", want "robust"`},
		{"witness length", rec(1, "robust", "", "0.5", 0) + rec(2, "vulnerable", w1, "11.2", 5), "witness_length 5, want 4"},
		{"witness bytes", rec(1, "robust", "", "0.5", 0) + rec(2, "vulnerable", w3, "11.2", 4), "witness \"sha256:"},
		{"a line being written is not a record", rec(1, "robust", "", "0.5", 0) + strings.TrimSuffix(rec(2, "vulnerable", w1, "11.2", 4), "\n"), "sample=2 eps=0.5 k=3 missing"},
	} {
		got := write(c.name+".jsonl", c.got)
		recs, err := ReadRecords(got)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		err = Compare(ref, want, got, recs)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.err)
		}
	}
}
