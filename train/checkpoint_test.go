package train

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
)

// TestCheckpointChecksum: one flipped byte anywhere in a translator's
// checkpoint — a weight, an Adam moment, the position in its metadata —
// makes the resumed run stop with one line naming the checkpoint, where
// it used to resume with exit 0 and train another model; the untouched
// checkpoint resumes.
func TestCheckpointChecksum(t *testing.T) {
	cfg := model.DefaultTranslatorConfig(24, 0, 1, 2, 3)
	a := cfg.Arch.(*model.TranslatorConfig)
	a.Embedding, a.EncoderHidden, a.DecoderHidden, a.Attention, a.Combine = 4, 4, 6, 4, 6
	cfg.MaxSteps = 12
	fresh := func() model.Decoder[float32] {
		m, err := model.NewTranslator[float32](&cfg, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	src, tgt := syntheticPairs(256, 2)
	pairs := NewTokenPairs(src, tgt)
	dir := t.TempDir()
	opt := Options{Seed: 1, Epochs: 2, BatchSize: 32, LR: 1e-2, ClipNorm: 5, CheckpointDir: dir, CheckpointEvery: time.Nanosecond}
	ctx, cancel := context.WithCancel(context.Background())
	o := opt
	o.Progress = func(p Progress) {
		if p.Step == 3 {
			cancel()
		}
	}
	if _, err := Fit(ctx, fresh(), pairs, o); err == nil {
		t.Fatal("the interrupted run returned no error")
	}
	path := filepath.Join(dir, checkpointFile)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data := 8 + int(binary.LittleEndian.Uint64(good)) // where the tensors start
	for _, at := range []struct {
		what string
		i    int
	}{
		{"a weight or moment", len(good) - 7},
		{"the first tensor", data + 9},
		{"the position", strings.Index(string(good), `"step":"`) + len(`"step":"`)},
	} {
		bad := append([]byte(nil), good...)
		bad[at.i] ^= 0x01
		os.WriteFile(path, bad, 0o644)
		_, err := Fit(context.Background(), fresh(), pairs, opt)
		if err == nil || !errors.Is(err, safetensors.ErrChecksum) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s flipped (byte %d): %v", at.what, at.i, err)
		}
	}
	os.WriteFile(path, good, 0o644)
	if f, err := safetensors.ReadFile(path); err != nil || f.Metadata[safetensors.ChecksumKey] == "" {
		t.Fatalf("checkpoint unsealed: %v", err)
	}
	if _, err := Fit(context.Background(), fresh(), pairs, opt); err != nil {
		t.Fatalf("the untouched checkpoint: %v", err)
	}
}
