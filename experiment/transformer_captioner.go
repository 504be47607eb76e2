package experiment

import (
	"fmt"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/train"
)

// The decoders lenspec train captioner --arch selects.
const (
	// ArchRNN is the CNN-RNN captioner, its cell chosen by --cell.
	ArchRNN = "rnn"
	// ArchTransformer is the CNN-transformer captioner.
	ArchTransformer = "transformer"
)

// modelConfig is the configuration --arch selects: Config, or Transformer
// on Config's convolutions with the run's dropout. A flag of the other
// decoder (changed reports those given) is refused: it would be ignored.
func (t *CaptionerTraining) modelConfig(changed func(string) bool) (*model.Config, error) {
	switch t.Arch {
	case ArchRNN:
		if err := train.SwitchedBy(changed, "arch transformer", false, train.TransformerCaptionerFlags...); err != nil {
			return nil, err
		}
		return &t.Config, nil
	case ArchTransformer:
		for _, f := range []string{"cell", "fc"} {
			if changed(f) {
				return nil, fmt.Errorf("--%s is read only with --arch rnn, not --arch transformer: drop --%s", f, f)
			}
		}
		a := t.Transformer.Arch.(*model.TransformerCaptionerConfig)
		a.Conv = t.Config.Arch.(*model.CaptionerConfig).Conv
		a.Dropout = t.Run.Dropout
		return &t.Transformer, nil
	}
	return nil, fmt.Errorf("--arch %q is neither %s nor %s", t.Arch, ArchRNN, ArchTransformer)
}
