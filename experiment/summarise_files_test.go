package experiment

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestSummariseFiles: a file's records choose their summary (here image
// attacks and a text attack run kept in docs/runs), the same as calling
// that kind's summariser on the joined records, and files of two kinds are
// a SettingsError.
func TestSummariseFiles(t *testing.T) {
	m := loadModel(t, tinyModelDir(t, 3))
	attacks := filepath.Join(t.TempDir(), "a.jsonl")
	if err := RunAttack(context.Background(), pgdConfig(m, attacks, []int{0, 1, 2}, 3), nil); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join("..", "docs", "runs", "nmt-m30k-attack", "nmt-m30k-gumbel-lr0.05-eps1-20.jsonl")
	for _, c := range []struct {
		file string
		want func(dir string) (Summary, error)
	}{
		{attacks, func(dir string) (Summary, error) {
			j, err := Join[AttackRecord]([]string{attacks}, JoinOptions{})
			if err != nil {
				return nil, err
			}
			return SummariseAttacks(j.Records, dir, "t")
		}},
		{text, func(dir string) (Summary, error) {
			j, err := Join[AttackRecord]([]string{text}, JoinOptions{})
			if err != nil {
				return nil, err
			}
			return SummariseTextAttacks(j.Records, dir, "t")
		}},
	} {
		dir := t.TempDir()
		got, err := SummariseFiles([]string{c.file}, dir, "t", JoinOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.want(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got.Text() != want.Text() {
			t.Errorf("%s: summary\n%s\nwant\n%s", c.file, got.Text(), want.Text())
		}
	}
	if _, err := SummariseFiles([]string{attacks, text}, t.TempDir(), "t", JoinOptions{}); !errors.As(err, new(SettingsError)) {
		t.Errorf("image and text attack files together: %v, want a SettingsError", err)
	}
}
