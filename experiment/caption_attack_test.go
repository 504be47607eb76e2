package experiment

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lenspec/lenspec/attack"
)

// TestCaptionExperiment runs the Show-and-Tell experiment on two tiny
// models: every model gets its records (random search and PGD with each
// loss, at every radius), its rows are those SummariseCaptionAttacks makes
// of them, the comparison table is written, a second run with --first
// raised only adds records, and bad settings are SettingsErrors.
func TestCaptionExperiment(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	var dirs []string
	for i, seed := range []uint64{3, 4} {
		dir := filepath.Join(root, []string{"m1", "m2"}[i])
		if err := os.Rename(tinyModelDir(t, seed), dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	out := t.TempDir()
	e := CaptionExperiment{Models: dirs, Out: out, Images: 4, First: 2, Eps: []float64{0.2, 0.4}, Samples: 20, Steps: 10, Restarts: 2,
		LR: 0.01, Clip: 1, Losses: []attack.Loss{attack.LossMargin, attack.LossEOSLogProb}, MaxSteps: 8, Cap: 2, Batch: 2, Seed: 1,
		Data: func(context.Context, *Model) (Data, error) { return testData(20), nil }}
	rows, table, err := e.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	count := func(name string) []AttackRecord {
		recs, err := ReadAttackRecords(filepath.Join(out, name, "attacks.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	// 2 images × 2 radii × 3 runs (random, 2 PGD losses).
	if n := len(count("m1")); n != 12 {
		t.Fatalf("m1: %d records, want 12", n)
	}
	var want []CaptionRow
	for _, name := range []string{"m1", "m2"} {
		sum, err := SummariseCaptionAttacks(ctx, count(name), loadModel(t, filepath.Join(root, name)), name, t.TempDir(), "t", 2)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, sum.Rows...)
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows %+v, want %+v", rows, want)
	}
	if b, err := os.ReadFile(filepath.Join(out, "comparison.md")); err != nil || string(b) != table || table != CaptionTable(want, 2) {
		t.Errorf("comparison.md %q (%v), table %q", b, err, table)
	}
	e.First = 0
	if _, _, err := e.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(count("m2")); n != 24 {
		t.Errorf("m2 after the whole draw: %d records, want 24", n)
	}
	bad := e
	bad.Images = -1
	if _, _, err := bad.Run(ctx); !errors.As(err, new(SettingsError)) {
		t.Errorf("negative images: %v, want a SettingsError", err)
	}
	bad = e
	bad.Steps = -1
	if _, _, err := bad.Run(ctx); !errors.As(err, new(SettingsError)) {
		t.Errorf("negative steps: %v, want a SettingsError", err)
	}
}
