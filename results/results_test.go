package results

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lenspec/lenspec/internal/fileio"
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

func TestOpenLockedInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	first, err := Open(path, KeyFields("k"))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Append("k=1", map[string]int{"k": 1}); err != nil {
		t.Fatal(err)
	}
	// What a writer mid-append looks like from outside: a line without its
	// newline yet. A second Open must not take it for a torn line.
	const partial = "{\"k\":2"
	appendRaw(t, path, partial)
	second, err := Open(path, KeyFields("k"))
	if !errors.Is(err, ErrLocked) {
		if err == nil {
			second.Close()
		}
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	for _, want := range []string{path, "another lenspec process is writing it", "--out"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "{\"k\":1}\n"+partial {
		t.Fatalf("refused Open changed the file to %q", b)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err = Open(path, KeyFields("k"))
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	defer second.Close()
	if second.Len() != 1 || second.Truncated != int64(len(partial)) {
		t.Errorf("Len %d Truncated %d, want 1 and %d", second.Len(), second.Truncated, len(partial))
	}
}

// appendRaw appends s to the file at path, bypassing Open's lock, as another
// writer's bytes would arrive.
func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// helperEnv selects what TestHelperProcess does when the test binary is run
// again as a second process; helperPath is the results file it opens.
const (
	helperEnv  = "LENSPEC_RESULTS_HELPER"
	helperPath = "LENSPEC_RESULTS_HELPER_PATH"
	exitLocked = 3
)

// TestHelperProcess is not a test: it is the second process of the locking
// tests. Mode "open" opens the file, appends a record and closes it, exiting
// with exitLocked if the file is locked. Mode "hold" opens it, says "held",
// and keeps it open until its standard input is closed.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	f, err := Open(os.Getenv(helperPath), KeyFields("k"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, ErrLocked) {
			os.Exit(exitLocked)
		}
		os.Exit(1)
	}
	switch mode {
	case "open":
		err = f.Append(fmt.Sprintf("k=%d", os.Getpid()), map[string]int{"k": os.Getpid()})
	case "hold":
		fmt.Println("held")
		_, err = io.Copy(io.Discard, os.Stdin)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("ok")
	os.Exit(0)
}

func helperCmd(ctx context.Context, mode, path string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperPath+"="+path)
	return cmd
}

func TestOpenLockedAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "r.jsonl")

	// This process holds the file: a second process is refused.
	f, err := Open(path, KeyFields("k"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Append("k=1", map[string]int{"k": 1}); err != nil {
		t.Fatal(err)
	}
	appendRaw(t, path, "{\"k\":")
	var stderr bytes.Buffer
	cmd := helperCmd(ctx, "open", path)
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != exitLocked {
		t.Fatalf("second process: %v, stderr %q; want exit status %d", err, stderr.String(), exitLocked)
	}
	if msg := stderr.String(); !strings.Contains(msg, path) || !strings.Contains(msg, "file locked") {
		t.Errorf("second process printed %q, want the path and \"file locked\"", msg)
	}
	if b, _ := os.ReadFile(path); string(b) != "{\"k\":1}\n{\"k\":" {
		t.Fatalf("refused process changed the file to %q", b)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Released: the next process opens it and appends.
	out, err := helperCmd(ctx, "open", path).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("process after Close: %v, output %q", err, out)
	}
	if got, err := Read[map[string]int](path); err != nil || len(got) != 2 {
		t.Fatalf("Read = %v, %v; want 2 records", got, err)
	}

	// Another process holds the file: this one is refused until it exits.
	hold := helperCmd(ctx, "hold", path)
	stdin, err := hold.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := hold.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	hold.Stderr = &stderr
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	defer hold.Wait()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "held\n" {
		t.Fatalf("holding process said %q, %v; stderr %q", line, err, stderr.String())
	}
	if f, err := Open(path, KeyFields("k")); !errors.Is(err, ErrLocked) {
		if err == nil {
			f.Close()
		}
		t.Fatalf("Open while another process holds the file = %v, want ErrLocked", err)
	}
	stdin.Close()
	if err := hold.Wait(); err != nil {
		t.Fatalf("holding process: %v, stderr %q", err, stderr.String())
	}
	f, err = Open(path, KeyFields("k"))
	if err != nil {
		t.Fatalf("Open after the holder exited: %v", err)
	}
	f.Close()
}

func TestRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// A regular results file whose attempts sidecar is a FIFO.
	sideFifo := filepath.Join(dir, "side.jsonl")
	if err := syscall.Mkfifo(sideFifo+attemptsSuffix, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		read       bool // Read must refuse it too
	}{
		{"dev null", "/dev/null", true},
		{"dev full", "/dev/full", true},
		{"fifo", fifo, true},
		{"directory", dir, true},
		{"fifo sidecar", sideFifo, false},
	}
	within := func(t *testing.T, what string, fn func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- fn() }()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Fatalf("%s blocked", what)
			return nil
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.HasPrefix(tt.path, "/dev/") {
				if _, err := os.Stat(tt.path); err != nil {
					t.Skip(err) // a minimal container may lack the device
				}
			}
			err := within(t, "Open", func() error {
				f, err := Open(tt.path, KeyFields("k"))
				if err == nil {
					f.Close()
				}
				return err
			})
			if !errors.Is(err, fileio.ErrNotRegular) {
				t.Errorf("Open(%s) = %v, want ErrNotRegular", tt.path, err)
			}
			if !tt.read {
				return
			}
			err = within(t, "Read", func() error {
				_, err := Read[rec](tt.path)
				return err
			})
			if !errors.Is(err, fileio.ErrNotRegular) {
				t.Errorf("Read(%s) = %v, want ErrNotRegular", tt.path, err)
			}
		})
	}
}

func TestBeginAttemptAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	f, err := Open(path, KeyFields("k"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + attemptsSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sidecar exists before any attempt: %v", err)
	}
	for i, key := range []string{"k=1", "k=1", "k=2"} {
		want := map[int]int{0: 0, 1: 1, 2: 0}[i]
		if prev, err := f.BeginAttempt(key); err != nil || prev != want {
			t.Fatalf("BeginAttempt(%s) #%d = %d, %v; want %d", key, i, prev, err, want)
		}
	}
	if f.Attempts("k=1") != 2 || f.Attempts("k=2") != 1 || f.Attempts("k=3") != 0 {
		t.Errorf("Attempts = %d, %d, %d; want 2, 1, 0", f.Attempts("k=1"), f.Attempts("k=2"), f.Attempts("k=3"))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.BeginAttempt("k=1"); err == nil {
		t.Error("BeginAttempt after Close succeeded")
	}

	// The markers are one JSON object per line, for people too.
	b, err := os.ReadFile(path + attemptsSuffix)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("sidecar has %d lines, want 3: %q", len(lines), b)
	}
	var a attempt
	if err := json.Unmarshal([]byte(lines[2]), &a); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339, a.Time); err != nil || a.Key != "k=2" || a.PID != os.Getpid() {
		t.Errorf("marker %q: key %q pid %d time %q (%v)", lines[2], a.Key, a.PID, a.Time, err)
	}

	f, err = Open(path, KeyFields("k"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := f.Attempts("k=1"); got != 2 {
		t.Errorf("after reopen Attempts(k=1) = %d, want 2", got)
	}
	if prev, err := f.BeginAttempt("k=1"); err != nil || prev != 2 {
		t.Errorf("after reopen BeginAttempt(k=1) = %d, %v; want 2", prev, err)
	}
	if got := f.Attempts("k=1"); got != 3 {
		t.Errorf("Attempts(k=1) = %d, want 3", got)
	}
}

func TestAttemptsSidecarContent(t *testing.T) {
	const a1 = `{"key":"k=1","pid":7,"time":"2024-01-02T03:04:05Z"}` + "\n"
	const a2 = `{"key":"k=2","pid":7,"time":"2024-01-02T03:04:06Z"}` + "\n"
	tests := []struct {
		name    string
		content string
		keep    string // sidecar left after Open; unused if errLine > 0
		want    map[string]int
		errLine int
	}{
		{"clean", a1 + a2 + a1, a1 + a2 + a1, map[string]int{"k=1": 2, "k=2": 1}, 0},
		{"torn last line", a1 + a1 + `{"key":"k=1","pi`, a1 + a1, map[string]int{"k=1": 2}, 0},
		// Complete JSON without its newline is still an interrupted write.
		{"unterminated", a1 + strings.TrimSuffix(a2, "\n"), a1, map[string]int{"k=1": 1, "k=2": 0}, 0},
		{"blank lines", "\n" + a1 + " \n", "\n" + a1 + " \n", map[string]int{"k=1": 1}, 0},
		{"empty", "", "", map[string]int{"k=1": 0}, 0},
		{"malformed", a1 + "{\"key\":\n" + a1, "", nil, 2},
		{"no key", a1 + `{"pid":1}` + "\n", "", nil, 2},
		{"key not a string", `{"key":1}` + "\n", "", nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.jsonl")
			side := path + attemptsSuffix
			if err := os.WriteFile(side, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := Open(path, KeyFields("k"))
			if tt.errLine > 0 {
				if err == nil {
					f.Close()
					t.Fatal("Open succeeded, want error")
				}
				if want := fmt.Sprintf("%s:%d:", side, tt.errLine); !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
				if b, _ := os.ReadFile(side); string(b) != tt.content {
					t.Errorf("sidecar changed to %q", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, n := range tt.want {
				if got := f.Attempts(k); got != n {
					t.Errorf("Attempts(%s) = %d, want %d", k, got, n)
				}
			}
			if b, _ := os.ReadFile(side); string(b) != tt.keep {
				t.Errorf("sidecar = %q, want %q", b, tt.keep)
			}
			// The next marker starts on a line of its own.
			if prev, err := f.BeginAttempt("k=1"); err != nil || prev != tt.want["k=1"] {
				t.Errorf("BeginAttempt = %d, %v; want %d", prev, err, tt.want["k=1"])
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			f, err = Open(path, KeyFields("k"))
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer f.Close()
			if got := f.Attempts("k=1"); got != tt.want["k=1"]+1 {
				t.Errorf("reopen: Attempts(k=1) = %d, want %d", got, tt.want["k=1"]+1)
			}
		})
	}
}

func TestConcurrentBeginAttempt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	f, err := Open(path, KeyFields("k"))
	if err != nil {
		t.Fatal(err)
	}
	const workers, per = 8, 20
	var wg sync.WaitGroup
	prevs := make(chan int, workers*per)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				prev, err := f.BeginAttempt("k=1")
				if err != nil {
					t.Error(err)
				}
				prevs <- prev
			}
		}()
	}
	wg.Wait()
	close(prevs)
	// Each call saw a distinct count: no two attempts were merged.
	seen := make(map[int]bool)
	for p := range prevs {
		seen[p] = true
	}
	if len(seen) != workers*per || f.Attempts("k=1") != workers*per {
		t.Errorf("%d distinct counts, Attempts %d; want %d", len(seen), f.Attempts("k=1"), workers*per)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f, err = Open(path, KeyFields("k"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Attempts("k=1") != workers*per {
		t.Errorf("reopen: Attempts %d, want %d", f.Attempts("k=1"), workers*per)
	}
}

// FuzzAttempts checks the sidecar parser the way FuzzOpen checks the results
// file's: Open either refuses the sidecar and leaves it alone, or counts one
// attempt per complete non-blank line and removes only a torn last line.
func FuzzAttempts(f *testing.F) {
	for _, s := range []string{
		"",
		`{"key":"a"}` + "\n",
		`{"key":"a","pid":1,"time":"x"}` + "\n" + `{"key":"a"`,
		`{"key":"a"}` + "\n\n" + `{"key":"b"}` + "\r\n",
		`{"key":null}` + "\n",
		`{"key":"a","key":"b"}` + "\n",
		"[]\n",
		"\xff\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "r.jsonl")
		side := path + attemptsSuffix
		if err := os.WriteFile(side, data, 0o644); err != nil {
			t.Fatal(err)
		}
		rf, err := Open(path, KeyFields("k"))
		if err != nil {
			if b, _ := os.ReadFile(side); !bytes.Equal(b, data) {
				t.Fatal("failed Open changed the sidecar")
			}
			return
		}
		defer rf.Close()
		kept := bytes.LastIndexByte(data, '\n') + 1
		if b, _ := os.ReadFile(side); !bytes.Equal(b, data[:kept]) {
			t.Fatalf("sidecar = %q, want %q", b, data[:kept])
		}
		want := map[string]int{}
		for _, line := range bytes.Split(data[:kept], []byte{'\n'}) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			k, ended, err := attemptKey(line)
			if err != nil {
				t.Fatalf("Open accepted line %q: %v", line, err)
			}
			if !ended {
				want[k]++
			} else if want[k] > 0 {
				want[k]--
			}
		}
		var total int
		for _, n := range want {
			total += n
		}
		var counted int
		rf.mu.Lock()
		for _, n := range rf.attempts {
			counted += n
		}
		rf.mu.Unlock()
		if counted != total {
			t.Fatalf("counted %d attempts, want %d", counted, total)
		}
	})
}

// TestEndAttempt: an attempt ended cleanly does not count, in this run or
// after reopening; ends never drive the count below zero.
func TestEndAttempt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	f, err := Open(path, KeyFields("k"))
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		begin bool
		want  int
	}{{true, 1}, {false, 0}, {false, 0}, {true, 1}, {true, 2}, {false, 1}} {
		if step.begin {
			_, err = f.BeginAttempt("k=1")
		} else {
			err = f.EndAttempt("k=1")
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Attempts("k=1"); got != step.want {
			t.Fatalf("after begin=%v: Attempts = %d, want %d", step.begin, got, step.want)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f, err = Open(path, KeyFields("k"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := f.Attempts("k=1"); got != 1 {
		t.Fatalf("after reopen Attempts = %d, want 1", got)
	}
}

// TestFirst: the first record, past blank lines, and nothing after it read
// (a malformed later line is not First's concern); none in an empty file
// or one whose only line is incomplete; a malformed first record named by
// file and line.
func TestFirst(t *testing.T) {
	for _, c := range []struct {
		name, content string
		want          rec
		ok            bool
		errAt         string
	}{
		{"empty", "", rec{}, false, ""},
		{"blank lines then a record", "\n  \n{\"image\":3}\n", rec{Image: 3}, true, ""},
		{"later line malformed", "{\"image\":1}\n{\"image\":\"x\"}\n", rec{Image: 1}, true, ""},
		{"incomplete only line", "{\"image\":1}", rec{}, false, ""},
		{"first record malformed", "\n{\"image\":\"x\"}\n", rec{}, false, ":2:"},
	} {
		path := writeFile(t, c.content)
		got, ok, err := First[rec](path)
		if c.errAt != "" {
			if err == nil || !strings.Contains(err.Error(), path+c.errAt) {
				t.Errorf("%s: error %v does not name %s%s", c.name, err, path, c.errAt)
			}
			continue
		}
		if err != nil || ok != c.ok || got != c.want {
			t.Errorf("%s: %+v, %v, %v; want %+v, %v", c.name, got, ok, err, c.want, c.ok)
		}
	}
}
