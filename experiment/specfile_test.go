package experiment

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzReadSpecFile: any bytes give a spec or an error naming the file,
// never a panic; an accepted spec satisfies the documented rules.
func FuzzReadSpecFile(f *testing.F) {
	for _, s := range []string{
		`{"model": "m", "input": "x.safetensors", "eps": 0.05, "max_len": 3}`,
		`{"model": "m", "values": [0.1, 0.2], "lower": [0, 0.2], "upper": [0.3, 0.2]}`,
		`{"model": "m", "values": [1], "eps": -1}`,
		`{"model": "m"} {}`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "s.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		sp, err := ReadSpecFile(p)
		if err != nil {
			return
		}
		if sp.Model == "" || (sp.Input == "") == (sp.Values == nil) || (sp.Eps != nil) == (sp.Lower != nil) {
			t.Fatalf("accepted an invalid spec: %+v", sp)
		}
	})
}

// TestLoadSpec: a flag the spec file stands in for is refused, naming it,
// before the file is read; otherwise the spec and its model (relative to
// the spec file) load, and a missing file or model is an error naming it.
func TestLoadSpec(t *testing.T) {
	dir := t.TempDir()
	mdir := tinyModelDir(t, 1)
	good := filepath.Join(dir, "good.json")
	missing := filepath.Join(dir, "nomodel.json")
	for p, body := range map[string]string{
		good:    `{"model": "` + mdir + `", "values": [0], "eps": 0.1}`,
		missing: `{"model": "absent", "values": [0], "eps": 0.1}`,
	} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path  string
		given []string
		want  string // "": loads; else the error's start or, for a file's, a part
	}{
		{good, []string{"timeout", "bab", "seed", "max-steps"}, ""},
		{good, []string{"model"}, "--spec gives the model, the input, the set and K̂: drop --model"},
		{good, []string{"max-len", "eps"}, "--spec gives the model, the input, the set and K̂: drop --eps"},
		{good, []string{"shard"}, "--spec gives the model, the input, the set and K̂: drop --shard"},
		{good, []string{"image", "out"}, "--spec gives the model, the input, the set and K̂: drop --image"},
		{filepath.Join(dir, "absent.json"), []string{"index"}, "--spec gives the model, the input, the set and K̂: drop --index"},
		{filepath.Join(dir, "absent.json"), nil, "absent.json"},
		{missing, nil, "absent"},
	} {
		sp, m, err := LoadSpec(tc.path, func(f string) bool { return slices.Contains(tc.given, f) })
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %q: %v", tc.path, tc.given, err)
		case tc.want == "" && (sp == nil || m == nil || m.Dir != mdir || *sp.Eps != 0.1):
			t.Errorf("%s %q: spec %+v, model %+v", tc.path, tc.given, sp, m)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %q: got %v, want %q", tc.path, tc.given, err, tc.want)
		case strings.HasPrefix(tc.want, "--spec") && !errors.As(err, new(SettingsError)):
			t.Errorf("%s %q: %v is not a SettingsError", tc.path, tc.given, err)
		}
	}
}
