package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSummariseCaptionAttacks runs PGD with both losses on a tiny model and
// checks the table against the records: the share lengthened, the outputs
// over the cap, and every lengthened output's witness replayed, a record
// whose tokens were changed failing its replay.
func TestSummariseCaptionAttacks(t *testing.T) {
	ctx := context.Background()
	m := loadModel(t, tinyModelDir(t, 3))
	out := filepath.Join(t.TempDir(), "attacks.jsonl")
	samples := []int{0, 1, 2, 3, 4, 5}
	margin, eos := pgdConfig(m, out, samples, 3), pgdConfig(m, out, samples, 3)
	eos.Settings.Loss = "eos-logprob"
	for _, c := range []AttackConfig{margin, eos} {
		if err := RunAttack(ctx, c, nil); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := ReadAttackRecords(out)
	if err != nil {
		t.Fatal(err)
	}
	const capLen = 1
	sum, err := SummariseCaptionAttacks(ctx, recs, m, "tiny", t.TempDir(), "t", capLen)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Rows) != 2 || sum.Rows[0].Method != "pgd margin" || sum.Rows[1].Method != "pgd eos-logprob" {
		t.Fatalf("rows %+v, want pgd margin then pgd eos-logprob", sum.Rows)
	}
	lengthened := 0
	for _, row := range sum.Rows {
		succ, over, wit := 0, 0, 0
		for _, r := range recs {
			if methodLabel(r) != row.Method {
				continue
			}
			if r.AdvLength > r.OrigLength && r.MinRelMargin >= 1e-6 {
				succ++
			}
			if r.AdvLength > capLen {
				over++
			}
			if r.Success {
				wit++
			}
		}
		if row.Images != len(samples) || row.Lengthened != float64(succ)/float64(len(samples)) || row.OverCap != over || row.Witnesses != wit || row.Replayed != wit {
			t.Errorf("row %+v; records: %d lengthened, %d over the cap, %d witnesses", row, succ, over, wit)
		}
		lengthened += succ
	}
	if lengthened == 0 {
		t.Fatal("no output lengthened: the replay check checks nothing")
	}
	if !strings.Contains(sum.Table, "outputs > 1") || !strings.Contains(sum.Table, "witnesses replayed") {
		t.Errorf("table:\n%s", sum.Table)
	}
	for i := range recs {
		if recs[i].Success {
			recs[i].AdvTokens = append(recs[i].AdvTokens, 0)
			break
		}
	}
	sum2, err := SummariseCaptionAttacks(ctx, recs, m, "tiny", t.TempDir(), "t", capLen)
	if err != nil {
		t.Fatal(err)
	}
	if sum2.Rows[0].Replayed+sum2.Rows[1].Replayed != sum.Rows[0].Replayed+sum.Rows[1].Replayed-1 {
		t.Errorf("a record with changed tokens still replays: %+v", sum2.Rows)
	}
	// Records copied without their witnesses (docs/runs), or with a
	// damaged one, summarise: those witnesses are counted as unreadable.
	recs, err = ReadAttackRecords(out)
	if err != nil {
		t.Fatal(err)
	}
	var gone, damaged string
	for _, r := range recs {
		switch {
		case !r.Success || r.Witness == "":
		case gone == "":
			gone = r.Witness
		case damaged == "":
			damaged = r.Witness
		}
	}
	if damaged == "" {
		t.Fatal("fewer than two witnesses: the unreadable case checks nothing")
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(damaged, []byte("not safetensors"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum3, err := SummariseCaptionAttacks(ctx, recs, m, "tiny", t.TempDir(), "t", capLen)
	if err != nil {
		t.Fatalf("a missing witness fails the summary: %v", err)
	}
	replayed, unreadable := 0, 0
	for _, row := range sum3.Rows {
		replayed, unreadable = replayed+row.Replayed, unreadable+row.Unreadable
	}
	if unreadable != 2 || replayed != sum.Rows[0].Replayed+sum.Rows[1].Replayed-2 || !strings.Contains(sum3.Table, "missing or unreadable)") {
		t.Errorf("with a witness removed and one damaged: %d replayed, %d unreadable; table:\n%s", replayed, unreadable, sum3.Table)
	}
}
