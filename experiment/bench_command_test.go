package experiment

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestBenchSettings: lenspec bench's settings out of range are
// SettingsErrors found before the model is loaded; a small captioner's
// measurement is reported (JSON, table) and appended to --record.
func TestBenchSettings(t *testing.T) {
	dir := tinyModelDir(t, 5)
	parse := func(args ...string) *BenchSettings {
		s := NewBenchSettings()
		fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
		s.RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		args    []string
		threads int
		want    string
	}{
		{nil, 1, "--model is required"},
		{[]string{"--model", dir, "--reps", "0"}, 1, "repetitions 0"},
		{[]string{"--model", dir, "--isa", "sse4"}, 1, `--isa "sse4": want native or avx2`},
		{[]string{"--model", dir, "--record", t.TempDir()}, 1, "--record: "},
		{[]string{"--model", dir, "--peer", "p.py", "--rounds", "0"}, 1, "rounds 0"},
		{[]string{"--model", dir, "--peer", "p.py"}, 2, "--peer compares one thread with one: --blas-threads 2 must be 1"},
		{[]string{"--model", dir}, 2, ""},
	} {
		err := parse(tc.args...).Validate(tc.threads)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.args, err)
			}
		} else if !isSettings(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a SettingsError with %q", tc.args, err, tc.want)
		}
	}
	record := filepath.Join(t.TempDir(), "bench.jsonl")
	s := parse("--model", dir, "--record", record, "--reps", "1", "--decode", "8", "--batch", "4", "--gemm", "16", "--pgd-batch", "2", "--grad-steps", "2", "--max-steps", "4")
	var logged []string
	env := Env{Changed: func(string) bool { return false }, Logf: func(f string, args ...any) { logged = append(logged, f) }}
	rep, err := s.Bench(context.Background(), env, 1)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	rep.WriteText(&text)
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(lines), "\n")
	if n == 0 || strings.Count(text.String(), "\n{") != n || !strings.Contains(text.String(), "reference sgemm 16x16x16") ||
		!strings.HasPrefix(string(js), "{") || len(logged) != 2 {
		t.Errorf("%d records; text\n%s\nJSON %.200s\nlog %q", n, text.String(), js, logged)
	}
}
