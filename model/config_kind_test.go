package model

import (
	"testing"

	"github.com/lenspec/lenspec/bpe"
)

// TestConfigInputKind: a configuration says what its model reads before
// any weights are loaded: text for the translator, images for the
// captioners.
func TestConfigInputKind(t *testing.T) {
	tr := DefaultTranslatorConfig(300, bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID)
	for _, tc := range []struct {
		name string
		cfg  Config
		want InputKind
	}{
		{"translator", tr, Tokens},
		{"captioner", DefaultCaptionerConfig(), Continuous},
		{"show and tell", DefaultShowTellConfig([]string{"a", "b", "<eos>"}), Continuous},
	} {
		if got := tc.cfg.InputKind(); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
