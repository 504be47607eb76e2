package main

import (
	"path/filepath"
	"testing"

	"github.com/lenspec/lenspec/model"
)

// TestTrainCaptionerRecordsItsCommand: lenspec train captioner records
// the command it was given, every setting that changed the model in it
// (the learning rate, the sizes, a switch turned off), so that a GRU run
// at --lr 1e-3 and one at the default do not read alike.
func TestTrainCaptionerRecordsItsCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "gru")
	code, _, stderr := runCLI(t, "train", "captioner", "--out", out, "--epochs", "1", "--conv1", "2", "--conv2", "2", "--fc", "8",
		"--cell", "gru", "--lr", "1e-3", "--shift=false", "--mnist-dir", "", "-q")
	if code != 0 {
		t.Fatalf("train captioner: exit %d: %s", code, stderr)
	}
	d, err := model.Load[float32](out)
	if err != nil {
		t.Fatal(err)
	}
	const want = "lenspec train captioner --out DIR --cell gru --conv1 2 --conv2 2 --epochs 1 --fc 8 --lr 0.001 --shift=false"
	if got := d.Config().Training["command"]; got != want {
		t.Errorf("recorded command %q, want %q", got, want)
	}
}
