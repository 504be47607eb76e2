package nmt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lenspec/lenspec/model"
	"github.com/spf13/pflag"
)

// TestArchFlag: --arch transformer trains a transformer translator of the
// --d-model… sizes with the transformer's optimisation defaults where no
// flag overrides them; one architecture's sizes are refused with the
// other, naming the flag, as is an unknown architecture.
func TestArchFlag(t *testing.T) {
	parse := func(t *testing.T, args ...string) (Options, error) {
		t.Helper()
		o := DefaultOptions()
		fs := pflag.NewFlagSet("nmt", pflag.ContinueOnError)
		o.RegisterFlags(fs)
		if err := fs.Parse(append([]string{"--out", "m"}, args...)); err != nil {
			t.Fatal(err)
		}
		return o, o.ValidateFlags(fs.Changed)
	}
	o, err := parse(t, "--arch", "transformer", "--vocab", "300", "--d-model", "64", "--nhead", "2", "--lr", "1e-3", "--activation", "gelu")
	if err != nil {
		t.Fatal(err)
	}
	a, ok := o.Config.Arch.(*model.TransformerTranslatorConfig)
	if !ok || o.Config.Architecture != model.ArchTransformerTranslator {
		t.Fatalf("--arch transformer trains a %s", o.Config.Architecture)
	}
	if a.Vocab != 300 || a.DModel != 64 || a.NHead != 2 || a.EncoderLayers != 3 || a.DecoderLayers != 3 || a.FF != 1024 || a.Activation != "gelu" || !a.NormFirst {
		t.Errorf("transformer sizes %+v", a)
	}
	tr := o.Train
	if tr.LR != 1e-3 || tr.FinalLR != 5e-5 || tr.Dropout != 0.1 || a.Dropout != 0.1 || tr.LabelSmoothing != 0.1 || tr.ClipNorm != 1 {
		t.Errorf("optimisation %+v, want --lr 1e-3 given and the transformer's other defaults", tr)
	}
	o, err = parse(t)
	if err != nil || o.Config.Architecture != model.ArchTranslator || o.Train.LR != 1e-3 || o.Train.Dropout != 0.2 {
		t.Errorf("no --arch: %s, lr %v, dropout %v, %v; want the LSTM's recipe", o.Config.Architecture, o.Train.LR, o.Train.Dropout, err)
	}
	// Fine-tuning a transformer takes the transformer's optimisation
	// defaults from its config.json.
	dir := t.TempDir()
	c := model.DefaultTransformerTranslatorConfig(300, 0, 1, 2, 3)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, model.ConfigFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	o, err = parse(t, "--init", dir, "--dropout", "0.3")
	if err != nil || o.Train.LR != 5e-4 || o.Train.Dropout != 0.3 || o.Train.LabelSmoothing != 0.1 {
		t.Errorf("--init of a transformer: lr %v, dropout %v, label smoothing %v, %v; want 5e-4, 0.3 given, 0.1", o.Train.LR, o.Train.Dropout, o.Train.LabelSmoothing, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--arch", "gru"}, `--arch "gru" is neither lstm nor transformer`},
		{[]string{"--nhead", "8"}, "--nhead is a transformer setting; give --arch transformer"},
		{[]string{"--arch", "transformer", "--hidden", "8"}, "--hidden is an LSTM setting; --arch transformer is sized by --d-model, --nhead, --encoder-layers, --decoder-layers, --dim-feedforward, --activation, --norm-first"},
		{[]string{"--arch", "transformer", "--init", "old"}, "--arch conflicts with --init (the sizes and the tokenizer come from old)"},
		{[]string{"--arch", "transformer", "--nhead", "3"}, "nhead 3 must be a positive divisor of d_model 256"},
		{[]string{"--arch", "transformer", "--activation", "tanh"}, `activation "tanh" is not supported (want "relu" or "gelu")`},
	} {
		if _, err := parse(t, tc.args...); err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %q", tc.args, err, tc.want)
		}
	}
}
