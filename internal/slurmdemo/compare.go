package slurmdemo

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// Timing fields differ between any two runs of the same unit; everything
// else in a verification record is a function of the model, the data, the
// sample, δ and the settings, and must be equal in a sharded and an
// unsharded run.
var timingFields = []string{"seconds", "bound_seconds"}

// Record is one line of a verification results file, decoded without
// lenspec's types so that the check does not share the code it checks.
type Record struct {
	Key  string         // sample, δ and K̂: a unit's identity within one run
	Line int            // 1-based line in its file
	JSON map[string]any // the record, numbers as written
}

// ReadRecords reads a results file's records. Only complete lines count:
// a line still being written by a running task is not a record yet.
func ReadRecords(path string) ([]Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var recs []Record
	for i, line := range completeLines(data) {
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		for _, f := range []string{"sample", "eps", "k", "verdict"} {
			if _, ok := m[f]; !ok {
				return nil, fmt.Errorf("%s:%d: not a verification record (no %q)", path, i+1, f)
			}
		}
		recs = append(recs, Record{Key: fmt.Sprintf("sample=%v eps=%v k=%v", m["sample"], m["eps"], m["k"]), Line: i + 1, JSON: m})
	}
	return recs, nil
}

// CountRecords counts the complete lines of a results file (0 if it does
// not exist yet).
func CountRecords(path string) (int, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	return len(completeLines(data)), err
}

func completeLines(data []byte) [][]byte {
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	} else {
		return nil
	}
	return bytes.Split(data, []byte("\n"))
}

// Unique returns recs by key, or an error naming a key recorded twice.
func Unique(path string, recs []Record) (map[string]Record, error) {
	by := map[string]Record{}
	for _, r := range recs {
		if prev, ok := by[r.Key]; ok {
			return nil, fmt.Errorf("%s: unit %s recorded twice (lines %d and %d)", path, r.Key, prev.Line, r.Line)
		}
		by[r.Key] = r
	}
	return by, nil
}

// Normalize returns r's fields that must not differ between runs: without
// the timing fields (also inside phases), and with the witness file's path
// replaced by the sha256 of its content (the paths differ between runs'
// directories; the exact input must not).
func Normalize(r Record) (map[string]any, error) {
	m := make(map[string]any, len(r.JSON))
	for k, v := range r.JSON {
		m[k] = v
	}
	for _, f := range timingFields {
		delete(m, f)
	}
	if ph, ok := m["phases"].([]any); ok {
		var out []any
		for _, p := range ph {
			if pm, ok := p.(map[string]any); ok {
				c := make(map[string]any, len(pm))
				for k, v := range pm {
					if k != "seconds" {
						c[k] = v
					}
				}
				p = c
			}
			out = append(out, p)
		}
		m["phases"] = out
	}
	if w, ok := m["witness"].(string); ok && w != "" {
		data, err := os.ReadFile(w)
		if err != nil {
			return nil, fmt.Errorf("unit %s: witness: %w", r.Key, err)
		}
		sum := sha256.Sum256(data)
		m["witness"] = "sha256:" + hex.EncodeToString(sum[:])
	}
	return m, nil
}

// Compare checks that got (a merged or sharded run's records) holds
// exactly the units of want (an unsharded run's), each once, with equal
// records but for timings: verdicts, stages, K̂, labels, bounds, witness
// lengths, tokens and files. It returns every difference, or nil.
func Compare(wantPath string, want []Record, gotPath string, got []Record) error {
	w, err := Unique(wantPath, want)
	if err != nil {
		return err
	}
	g, err := Unique(gotPath, got)
	if err != nil {
		return err
	}
	var errs []error
	for _, k := range sortedKeys(w) {
		gr, ok := g[k]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: unit %s missing (it is in %s)", gotPath, k, wantPath))
			continue
		}
		wn, err := Normalize(w[k])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", wantPath, err))
			continue
		}
		gn, err := Normalize(gr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", gotPath, err))
			continue
		}
		if d := diff(wn, gn); d != "" {
			errs = append(errs, fmt.Errorf("unit %s: %s line %d differs from %s line %d: %s", k, gotPath, gr.Line, wantPath, w[k].Line, d))
		}
	}
	for _, k := range sortedKeys(g) {
		if _, ok := w[k]; !ok {
			errs = append(errs, fmt.Errorf("%s: unit %s is not in %s", gotPath, k, wantPath))
		}
	}
	return errors.Join(errs...)
}

// diff names the fields in which a and b differ, with both values.
func diff(a, b map[string]any) string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}) {
		if !reflect.DeepEqual(a[k], b[k]) {
			out = append(out, fmt.Sprintf("%s %s, want %s", k, show(b[k]), show(a[k])))
		}
	}
	return strings.Join(out, "; ")
}

func show(v any) string {
	if v == nil {
		return "absent"
	}
	b, _ := json.Marshal(v)
	if len(b) > 120 {
		b = append(b[:117], "..."...)
	}
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Interrupted returns the keys whose attempts file (beside the results
// file path) records an attempt that ended cleanly: the unit a SIGTERM
// stopped, which then does not count towards the crash limit.
func Interrupted(path string) ([]string, error) {
	f, err := os.Open(path + ".attempts")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var keys []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var a struct {
			Key   string `json:"key"`
			Ended bool   `json:"ended"`
		}
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return nil, fmt.Errorf("%s.attempts: %w", path, err)
		}
		if a.Ended {
			keys = append(keys, a.Key)
		}
	}
	return keys, sc.Err()
}

// shardFile is the results file of shard k of n of a run writing out.
func shardFile(out string, k, n int) string {
	return filepath.Join(filepath.Dir(out), fmt.Sprintf("%s.shard-%d-of-%d.jsonl", strings.TrimSuffix(filepath.Base(out), ".jsonl"), k, n))
}
