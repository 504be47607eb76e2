package nmt

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/model"
)

// DevSelection keeps the weights of the epoch with the best dev BLEU in a
// model directory inside the checkpoint, with the scores so far in its
// selection.json, so that a resumed run selects as an uninterrupted one
// would.
type DevSelection struct {
	dir     string
	Epoch   int       `json:"epoch"`
	BLEU    float64   `json:"dev_bleu"`
	ByEpoch []float64 `json:"dev_bleu_by_epoch"`
}

// LoadDevSelection reads the selection kept in dir (none yet: an empty
// one).
func LoadDevSelection(dir string) (*DevSelection, error) {
	s := &DevSelection{dir: dir}
	raw, err := os.ReadFile(filepath.Join(dir, "selection.json"))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "selection.json"), err)
	}
	return s, nil
}

// Record notes epoch's dev BLEU and saves d if it is the best so far (the
// first epoch wins ties). A repeated epoch (a resumed run) replaces its
// score.
func (s *DevSelection) Record(d model.Decoder[float32], epoch int, bleu float64) error {
	s.ByEpoch = append(s.ByEpoch[:min(len(s.ByEpoch), epoch-1)], bleu)
	if s.Epoch == 0 || bleu > s.BLEU || s.Epoch == epoch {
		if err := model.Save(s.dir, d); err != nil {
			return err
		}
		s.Epoch, s.BLEU = epoch, bleu
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return fileio.WriteFileAtomic(filepath.Join(s.dir, "selection.json"), raw)
}

// Restore loads the selected weights, keeping cfg (with its tokenizer).
func (s *DevSelection) Restore(cfg *model.Config) (model.Decoder[float32], error) {
	d, err := model.Load[float32](s.dir)
	if err != nil {
		return nil, err
	}
	*d.Config() = *cfg
	return d, nil
}
