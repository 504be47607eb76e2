package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/model"
)

// transformerModel writes a randomly initialised transformer captioner of
// the default configuration (it reads 28x112 canvases) to a temp dir.
func transformerModel(t *testing.T) string {
	cfg := model.DefaultTransformerCaptionerConfig()
	return savedModel(t, &cfg, 3)
}

// TestTrainTransformerCaptioner: lenspec train captioner --arch
// transformer trains a cnn-transformer-captioner with the sizes given
// under torch.nn.Transformer's names and the run's dropout, and records
// the command.
func TestTrainTransformerCaptioner(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tr")
	code, _, stderr := runCLI(t, "train", "captioner", "--out", out, "--epochs", "1", "--arch", "transformer", "--conv1", "2", "--conv2", "2",
		"--d-model", "8", "--nhead", "2", "--dim-feedforward", "8", "--num-decoder-layers", "2", "--norm-first", "--dropout", "0.1",
		"--shift=false", "--mnist-dir", "", "-q")
	if code != 0 {
		t.Fatalf("train captioner --arch transformer: exit %d: %s", code, stderr)
	}
	d, err := model.Load[float32](out)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := d.Config().Arch.(*model.TransformerCaptionerConfig)
	if !ok {
		t.Fatalf("trained a %s", d.Config().Architecture)
	}
	if a.DModel != 8 || a.NHead != 2 || a.DimFeedforward != 8 || a.NumDecoderLayers != 2 || !a.NormFirst || a.Dropout != 0.1 || a.Conv[0].OutChannels != 2 {
		t.Errorf("trained config %+v", *a)
	}
	const want = "lenspec train captioner --out DIR --arch transformer --conv1 2 --conv2 2 --d-model 8 --dim-feedforward 8 --dropout 0.1 --epochs 1 --nhead 2 --norm-first --num-decoder-layers 2 --shift=false"
	if got := d.Config().Training["command"]; got != want {
		t.Errorf("recorded command %q, want %q", got, want)
	}
}

// TestTrainCaptionerArchErrors: an unknown --arch, a flag of the other
// decoder and a transformer the config refuses are usage errors (exit 2)
// naming the flag or key, before any data are read.
func TestTrainCaptionerArchErrors(t *testing.T) {
	init := transformerModel(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown arch", []string{"--arch", "lstm"}, `--arch "lstm" is neither rnn nor transformer`},
		{"cell with a transformer", []string{"--arch", "transformer", "--cell", "lstm"}, "--cell is read only with --arch rnn, not --arch transformer"},
		{"fc with a transformer", []string{"--arch", "transformer", "--fc", "64"}, "--fc is read only with --arch rnn"},
		{"transformer size with the rnn", []string{"--d-model", "32"}, "--d-model is read only with --arch transformer, which is off"},
		{"nhead not dividing d_model", []string{"--arch", "transformer", "--nhead", "3"}, "nhead 3 does not divide d_model 64"},
		{"memory positions", []string{"--arch", "transformer", "--memory-positions", "rotary"}, `memory_positions "rotary" is neither`},
		{"arch with init", []string{"--init", init, "--arch", "transformer"}, "--arch conflicts with --init"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"train", "captioner", "--out", filepath.Join(t.TempDir(), "m"), "--mnist-dir", "/nonexistent"}, c.args...)
			code, _, stderr := runCLI(t, args...)
			if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q; want 2 and one line containing %q", code, stderr, c.want)
			}
		})
	}
}
