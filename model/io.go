package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/safetensors"
)

// File names inside a model directory.
const (
	ConfigFile  = "config.json"
	WeightsFile = "model.safetensors"
)

// Save writes m to dir as config.json and model.safetensors (float32, tensor
// names as in docs/models.md), creating dir if needed.
func Save[T ad.Float](dir string, m *Captioner[T]) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	var cfg bytes.Buffer
	enc := json.NewEncoder(&cfg)
	enc.SetEscapeHTML(false) // keep "<eos>" readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(m.Cfg); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, ConfigFile), cfg.Bytes()); err != nil {
		return err
	}
	f := &safetensors.File{Metadata: map[string]string{"format": "pt", "lenspec_architecture": m.Cfg.Architecture}}
	for _, p := range m.Params() {
		data := make([]float32, p.W.Len())
		for i, v := range p.W.Data {
			data[i] = float32(v)
		}
		f.Tensors = append(f.Tensors, safetensors.F32(p.Name, p.W.Shape, data))
	}
	return safetensors.WriteFile(filepath.Join(dir, WeightsFile), f)
}

// Load reads the model in dir. Every tensor the architecture needs must be
// present with the right shape and finite values; unknown tensors are an
// error too, since they usually mean a different architecture.
func Load[T ad.Float](dir string) (*Captioner[T], error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	m, err := NewCaptioner[T](*cfg, nil)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, WeightsFile)
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, p := range m.Params() {
		want[p.Name] = true
		t, ok := f.Tensor(p.Name)
		if !ok {
			return nil, fmt.Errorf("%s: missing tensor %q", path, p.Name)
		}
		if !slices.Equal(t.Shape, p.W.Shape) {
			return nil, fmt.Errorf("%s: tensor %q has shape %v, config.json implies %v", path, p.Name, t.Shape, p.W.Shape)
		}
		if err := t.CheckFinite(); err != nil {
			return nil, fmt.Errorf("%s: tensor %q: %w", path, p.Name, err)
		}
		vals, err := t.Float64s()
		if err != nil {
			return nil, fmt.Errorf("%s: tensor %q: %w", path, p.Name, err)
		}
		for i, v := range vals {
			p.W.Data[i] = T(v)
		}
	}
	for _, t := range f.Tensors {
		if !want[t.Name] {
			return nil, fmt.Errorf("%s: unexpected tensor %q (not part of a %s with this config)", path, t.Name, cfg.Architecture)
		}
	}
	return m, nil
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
