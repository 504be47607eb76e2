package experiment

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
)

// TestRunAttackExperiment: every method runs at every radius into one
// file, and the summary is SummariseTextAttacks' of all the records; a
// record of another experiment in the file (another seed) is left out.
func TestRunAttackExperiment(t *testing.T) {
	m := tinyTextModel(t)
	data := toyTranslations(t, m, toyPairs, "dev")
	dir := t.TempDir()
	out := filepath.Join(dir, "nmt.jsonl")
	cfg := func(method string, budget int, seed uint64) AttackConfig {
		return AttackConfig{Model: m, Data: data, Samples: []int{0, 1}, Method: method, Batch: 2, Out: out,
			Settings: AttackSettings{MaxLen: -1, Budget: budget, Seed: seed, LR: 0.05, Tau: 1, Clip: 1, Beam: 2, Swaps: 8}}
	}
	other := cfg(MethodRandom, 10, 9)
	other.Eps = []float64{1}
	other.Settings = other.Settings.Normalize(MethodRandom)
	if err := RunAttack(context.Background(), other, nil); err != nil {
		t.Fatal(err)
	}
	cfgs := []AttackConfig{cfg(MethodRandom, 20, 1), cfg(MethodFlip, 20, 1)}
	sum, err := RunAttackExperiment(context.Background(), cfgs, []float64{0.5, 1}, dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ReadAttackRecords(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2+2*2*2 {
		t.Fatalf("%d records, want 2 of the other experiment and 8", len(recs))
	}
	want, err := SummariseTextAttacks(recs[2:], t.TempDir(), "t")
	if err != nil {
		t.Fatal(err)
	}
	// Rows add up their records whatever their order (the highlights'
	// ties go by order).
	if got := sum.(*TextSummary).Rows; !reflect.DeepEqual(got, want.Rows) {
		t.Errorf("rows %+v\nwant %+v", got, want.Rows)
	}
}
