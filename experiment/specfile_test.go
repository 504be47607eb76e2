package experiment

import (
	"os"
	"path/filepath"
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
