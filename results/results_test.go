package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type rec struct {
	Image  int     `json:"image"`
	Eps    float64 `json:"eps"`
	Method string  `json:"method"`
	Length int     `json:"length"`
}

var recKey = KeyFields("image", "eps", "method")

func keyOf(t *testing.T, r rec) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	k, err := recKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "r.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAppendReopenResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	f, err := Open(path, recKey)
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() != 0 || f.Truncated != 0 {
		t.Fatalf("new file: Len %d Truncated %d", f.Len(), f.Truncated)
	}
	first := []rec{{0, 0.1, "pgd", 7}, {0, 0.2, "pgd", 9}, {1, 0.1, "random", 3}}
	for _, r := range first {
		if err := f.Append(keyOf(t, r), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	// A resumed run does only the work that is not done yet.
	f, err = Open(path, recKey)
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() != 3 {
		t.Fatalf("reopened Len = %d, want 3", f.Len())
	}
	all := append(first, rec{1, 0.2, "random", 4}, rec{2, 0.1, "pgd", 5})
	var did []rec
	for _, r := range all {
		if f.Done(keyOf(t, r)) {
			continue
		}
		did = append(did, r)
		if err := f.Append(keyOf(t, r), r); err != nil {
			t.Fatal(err)
		}
	}
	if len(did) != 2 || did[0] != all[3] || did[1] != all[4] {
		t.Fatalf("resumed run did %v, want the last two records", did)
	}
	if f.Len() != 5 {
		t.Fatalf("Len = %d, want 5", f.Len())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := Read[rec](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(all) {
		t.Fatalf("Read %d records, want %d", len(got), len(all))
	}
	for i := range all {
		if got[i] != all[i] {
			t.Errorf("record %d = %+v, want %+v", i, got[i], all[i])
		}
	}
}

func TestOpenTruncatesIncompleteLastLine(t *testing.T) {
	tests := []struct {
		name     string
		content  string
		keep     string // content left after Open
		wantLen  int
		wantDone []string
	}{
		{"empty", "", "", 0, nil},
		{"clean", "{\"k\":1}\n{\"k\":2}\n", "{\"k\":1}\n{\"k\":2}\n", 2, []string{"k=1", "k=2"}},
		{"partial json", "{\"k\":1}\n{\"k\":", "{\"k\":1}\n", 1, []string{"k=1"}},
		// Valid JSON without its newline is still an interrupted write.
		{"valid but unterminated", "{\"k\":1}\n{\"k\":2}", "{\"k\":1}\n", 1, []string{"k=1"}},
		{"only partial", "{\"k\":1", "", 0, nil},
		{"blank lines skipped", "\n{\"k\":1}\n  \n", "\n{\"k\":1}\n  \n", 1, []string{"k=1"}},
		{"crlf", "{\"k\":1}\r\n", "{\"k\":1}\r\n", 1, []string{"k=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.content)
			f, err := Open(path, KeyFields("k"))
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(len(tt.content) - len(tt.keep)); f.Truncated != want {
				t.Errorf("Truncated = %d, want %d", f.Truncated, want)
			}
			if f.Len() != tt.wantLen {
				t.Errorf("Len = %d, want %d", f.Len(), tt.wantLen)
			}
			for _, k := range tt.wantDone {
				if !f.Done(k) {
					t.Errorf("Done(%q) = false", k)
				}
			}
			if f.Done("k=2") && !strings.Contains(tt.keep, `"k":2`) {
				t.Error("key of the removed line counts as done")
			}
			// The file stays appendable: the new line starts on a line of its own.
			if err := f.Append("k=3", map[string]int{"k": 3}); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.keep + "{\"k\":3}\n"; string(b) != want {
				t.Errorf("file = %q, want %q", b, want)
			}
			f, err = Open(path, KeyFields("k"))
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer f.Close()
			if f.Len() != tt.wantLen+1 || f.Truncated != 0 || !f.Done("k=3") {
				t.Errorf("reopen: Len %d Truncated %d Done(k=3) %v", f.Len(), f.Truncated, f.Done("k=3"))
			}
		})
	}
}

func TestOpenMalformedLine(t *testing.T) {
	tests := []struct {
		name    string
		content string
		line    int
	}{
		{"bad json", "{\"k\":1}\n{\"k\":\n{\"k\":3}\n", 2},
		{"trailing garbage", "{\"k\":1} x\n", 1},
		{"two values", "{\"k\":1}{\"k\":2}\n", 1},
		{"missing key field", "{\"k\":1}\n{\"k\":2}\n{\"j\":3}\n", 3},
		{"not an object", "[1,2]\n", 1},
		{"null", "{\"k\":1}\nnull\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.content)
			f, err := Open(path, KeyFields("k"))
			if err == nil {
				f.Close()
				t.Fatal("Open succeeded, want error")
			}
			if want := fmt.Sprintf("%s:%d:", path, tt.line); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
			// The malformed file is left as it was.
			b, _ := os.ReadFile(path)
			if string(b) != tt.content {
				t.Errorf("file changed to %q", b)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "x.jsonl"), nil); err == nil {
		t.Error("nil key: no error")
	}
	missing := filepath.Join(dir, "no", "such", "dir.jsonl")
	if _, err := Open(missing, KeyFields("k")); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing dir: error %v does not name the path", err)
	}
	if _, err := Read[rec](missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Read missing: error %v does not name the path", err)
	}
}

func TestAppendErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	f, err := Open(path, recKey)
	if err != nil {
		t.Fatal(err)
	}
	r := rec{1, 0.5, "pgd", 3}
	k := keyOf(t, r)
	if err := f.Append(k, r); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		key  string
		rec  any
	}{
		{"duplicate", k, r},
		{"key mismatch", "image=9", rec{2, 0.5, "pgd", 3}},
		{"key field missing", "image=1", map[string]int{"image": 1}},
		{"unencodable", "x", func() {}},
	}
	for _, tt := range tests {
		if err := f.Append(tt.key, tt.rec); err == nil {
			t.Errorf("%s: Append succeeded", tt.name)
		} else if !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name the file", tt.name, err)
		}
	}
	if err := f.Append(k, r); !errors.Is(err, ErrDuplicate) {
		t.Errorf("duplicate: error %v is not ErrDuplicate", err)
	}
	if f.Len() != 1 {
		t.Errorf("Len = %d after failed appends, want 1", f.Len())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r2 := rec{2, 0.5, "pgd", 3}
	if err := f.Append(keyOf(t, r2), r2); err == nil {
		t.Error("Append after Close succeeded")
	}
	if err := f.Close(); err == nil {
		t.Error("second Close succeeded")
	}
	got, err := Read[rec](path)
	if err != nil || len(got) != 1 || got[0] != r {
		t.Errorf("Read = %v, %v; want only %v", got, err, r)
	}
}

func TestConcurrentAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	f, err := Open(path, KeyFields("w", "i"))
	if err != nil {
		t.Fatal(err)
	}
	type big struct {
		W       int    `json:"w"`
		I       int    `json:"i"`
		Payload string `json:"payload"`
	}
	const workers, per = 8, 25
	// Lines larger than a pipe buffer or page make torn writes visible.
	payload := strings.Repeat("x", 9000)
	var wg sync.WaitGroup
	errs := make(chan error, workers*per)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				if err := f.Append(fmt.Sprintf("w=%d i=%d", w, i), big{w, i, payload}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if f.Len() != workers*per {
		t.Errorf("Len = %d, want %d", f.Len(), workers*per)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := Read[big](path)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[[2]int]bool)
	for _, r := range got {
		if r.Payload != payload {
			t.Fatalf("record %d/%d has a damaged payload", r.W, r.I)
		}
		seen[[2]int{r.W, r.I}] = true
	}
	if len(got) != workers*per || len(seen) != workers*per {
		t.Errorf("read %d records, %d distinct; want %d", len(got), len(seen), workers*per)
	}
}

func TestKeyFields(t *testing.T) {
	tests := []struct {
		name    string
		fields  []string
		line    string
		want    string
		wantErr bool
	}{
		{"order follows fields", []string{"method", "image"}, `{"image":3,"method":"pgd"}`, `method="pgd" image=3`, false},
		{"raw number text", []string{"eps"}, `{"eps":0.10}`, "eps=0.10", false},
		{"compacted", []string{"v"}, `{"v": [1, 2] }`, "v=[1,2]", false},
		{"string with spaces", []string{"a", "b"}, `{"a":"x b=1","b":2}`, `a="x b=1" b=2`, false},
		{"null value", []string{"a"}, `{"a":null}`, "a=null", false},
		{"missing", []string{"a", "b"}, `{"a":1}`, "", true},
		{"array", []string{"a"}, `[1]`, "", true},
		{"null record", []string{"a"}, `null`, "", true},
		{"no fields", nil, `{"a":1}`, "", true},
		{"invalid", []string{"a"}, `{"a":`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := KeyFields(tt.fields...)(json.RawMessage(tt.line))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("key = %q, want %q", got, tt.want)
			}
		})
	}
	// Keys are raw JSON text: numerically equal values spelled differently
	// are different keys, which is why writers must encode consistently.
	k := KeyFields("eps")
	a, _ := k(json.RawMessage(`{"eps":0.1}`))
	b, _ := k(json.RawMessage(`{"eps":0.10}`))
	if a == b {
		t.Errorf("0.1 and 0.10 give the same key %q", a)
	}
	// encoding/json writes a float64 the same way every time.
	m1, _ := json.Marshal(rec{Eps: 0.1})
	m2, _ := json.Marshal(rec{Eps: 0.10})
	if !bytes.Equal(m1, m2) {
		t.Errorf("encoding/json is not deterministic: %s vs %s", m1, m2)
	}
}

func TestReadErrors(t *testing.T) {
	path := writeFile(t, "{\"image\":1}\n{\"image\":\"x\"}\n")
	_, err := Read[rec](path)
	if err == nil || !strings.Contains(err.Error(), path+":2:") {
		t.Errorf("error %v does not name %s:2", err, path)
	}
	// An incomplete last line is not a record, as in Open.
	path = writeFile(t, "{\"image\":1}\n\n{\"image\":2")
	got, err := Read[rec](path)
	if err != nil || len(got) != 1 || got[0].Image != 1 {
		t.Errorf("Read = %v, %v; want one record with image 1", got, err)
	}
}

func FuzzOpen(f *testing.F) {
	for _, s := range []string{
		"",
		"{\"k\":1}\n",
		"{\"k\":1}\n{\"k\":",
		"{\"k\":1}\n\n{\"k\":\"a\"}\n",
		"{\"k\":1}\r\n[]\n",
		"null\n",
		"{\"k\":{\"a\":[1, 2]}}\n{\"k\":1}",
		"\xff\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "r.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		rf, err := Open(path, KeyFields("k"))
		if err != nil {
			b, _ := os.ReadFile(path)
			if !bytes.Equal(b, data) {
				t.Fatal("failed Open changed the file")
			}
			return
		}
		kept := len(data) - int(rf.Truncated)
		if kept < 0 || (kept > 0 && data[kept-1] != '\n') || bytes.IndexByte(data[kept:], '\n') >= 0 {
			t.Fatalf("Truncated = %d for %q", rf.Truncated, data)
		}
		var nonBlank int
		for _, line := range bytes.Split(data[:kept], []byte{'\n'}) {
			if len(bytes.TrimSpace(line)) > 0 {
				nonBlank++
			}
		}
		if rf.Len() != nonBlank {
			t.Fatalf("Len = %d, want %d non-blank lines", rf.Len(), nonBlank)
		}
		if rf.Done("k=\"fuzz\"") {
			return // the content already holds the probe record
		}
		if err := rf.Append(`k="fuzz"`, map[string]string{"k": "fuzz"}); err != nil {
			t.Fatal(err)
		}
		if err := rf.Close(); err != nil {
			t.Fatal(err)
		}
		rf, err = Open(path, KeyFields("k"))
		if err != nil {
			t.Fatalf("reopen after append: %v", err)
		}
		defer rf.Close()
		if rf.Len() != nonBlank+1 || rf.Truncated != 0 || !rf.Done(`k="fuzz"`) {
			t.Fatalf("reopen: Len %d Truncated %d", rf.Len(), rf.Truncated)
		}
	})
}
