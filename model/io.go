package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/safetensors"
)

// File names inside a model directory.
const (
	ConfigFile  = "config.json"
	WeightsFile = "model.safetensors"
)

// Save writes d to dir as config.json and model.safetensors (float32,
// tensor names as in docs/models.md), with a text model's tokenizer files,
// creating dir if needed, and then their checksums (SumsFile), which Load
// checks. A Save interrupted over an older model leaves the older
// checksums, which Load then refuses rather than load a mix of the two.
func Save[T ad.Float](dir string, d Decoder[T]) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	cfg, err := json.Marshal(d.Config())
	if err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, cfg, "", "  "); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	pretty.WriteByte('\n')
	if err := fileio.WriteFileAtomic(filepath.Join(dir, ConfigFile), pretty.Bytes()); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if _, ok := d.Config().Arch.(TokenizedArch); ok {
		tok := d.Config().Tokenizer
		if tok == nil {
			return fmt.Errorf("save model: a %s needs its tokenizer (Config.Tokenizer)", d.Config().Architecture)
		}
		if err := tok.Save(dir); err != nil {
			return fmt.Errorf("save model: %w", err)
		}
	}
	f := &safetensors.File{Metadata: map[string]string{"format": "pt", "lenspec_architecture": d.Config().Architecture}}
	for _, p := range d.Params() {
		data := make([]float32, p.W.Len())
		for i, v := range p.W.Data {
			data[i] = float32(v)
		}
		f.Tensors = append(f.Tensors, safetensors.F32(p.Name, p.W.Shape, data))
	}
	if err := safetensors.WriteFile(filepath.Join(dir, WeightsFile), f); err != nil {
		return err
	}
	if err := writeSums(dir); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	return nil
}

// Load reads the model in dir. If dir has a SumsFile, every model file must
// be listed in it and match (an error wrapping ErrChecksum names the file
// that does not). Every tensor the architecture needs must be
// present with the right shape and finite values; unknown tensors are an
// error too, since they usually mean a different architecture.
//
// Weights are float32 (config.json's dtype). F16 and BF16 tensors are
// accepted because they widen to float32 exactly; F64 tensors are refused:
// rounding them would make the float32 model (attacks, evaluation) and the
// float64 model (replay) two different networks under one name.
func Load[T ad.Float](dir string) (Decoder[T], error) {
	if err := checkSums(dir); err != nil {
		return nil, err
	}
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	if err := loadTokenizer(dir, cfg); err != nil {
		return nil, err
	}
	d, err := New[T](cfg, nil)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, WeightsFile)
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, p := range d.Params() {
		want[p.Name] = true
		t, ok := f.Tensor(p.Name)
		if !ok {
			return nil, fmt.Errorf("%s: missing tensor %q", path, p.Name)
		}
		switch t.DType {
		case safetensors.Float32, safetensors.Float16, safetensors.BFloat16:
		default:
			return nil, fmt.Errorf("%s: tensor %q is %s; model weights are float32 (F16 and BF16 widen exactly and are accepted too)", path, p.Name, t.DType)
		}
		if !slices.Equal(t.Shape, p.W.Shape) {
			return nil, fmt.Errorf("%s: tensor %q has shape %v, config.json implies %v", path, p.Name, t.Shape, p.W.Shape)
		}
		if err := t.CheckFinite(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err) // the error names the tensor
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
	return d, nil
}

// loadTokenizer reads the tokenizer of an architecture that has one and
// checks it is the vocabulary config.json describes.
func loadTokenizer(dir string, cfg *Config) error {
	ta, ok := cfg.Arch.(TokenizedArch)
	if !ok {
		return nil
	}
	tok, err := bpe.Load(dir)
	if err != nil {
		return err
	}
	if tok.Size() != ta.VocabSize() {
		return fmt.Errorf("%s: %d tokens, config.json says vocab_size %d", filepath.Join(dir, bpe.VocabFile), tok.Size(), ta.VocabSize())
	}
	want := map[string][2]int{"eos_id": {cfg.EOS, bpe.EOSID}}
	if sp, ok := cfg.Arch.(interface{ SpecialIDs() (pad, bos, unk int) }); ok {
		pad, bos, unk := sp.SpecialIDs()
		want["pad_id"], want["bos_id"], want["unk_id"] = [2]int{pad, bpe.PadID}, [2]int{bos, bpe.BOSID}, [2]int{unk, bpe.UnkID}
	}
	for _, name := range []string{"pad_id", "bos_id", "eos_id", "unk_id"} {
		if w, ok := want[name]; ok && w[0] != w[1] {
			return fmt.Errorf("%s: %s %d is not the tokenizer's %d", filepath.Join(dir, ConfigFile), name, w[0], w[1])
		}
	}
	cfg.Tokenizer = tok
	return nil
}

// Digest identifies a model by content: the sha256 of config.json and
// model.safetensors (each preceded by its name), and of the tokenizer's
// files for models that have one. Two paths to one model give one digest;
// new weights at the same path give another. Results are keyed by it.
func Digest(dir string) (string, error) {
	h := sha256.New()
	for _, name := range modelFiles(dir) {
		path := filepath.Join(dir, name)
		f, err := fileio.Open(path)
		if err != nil {
			return "", fmt.Errorf("model digest: %w", err)
		}
		io.WriteString(h, name+"\x00")
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("model digest: %s: %w", path, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
