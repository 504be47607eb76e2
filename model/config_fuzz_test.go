package model

import (
	"encoding/json"
	"testing"
)

func FuzzParseConfig(f *testing.F) {
	def := DefaultCaptionerConfig()
	b, _ := json.Marshal(def)
	f.Add(b)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"architecture":"cnn-rnn-captioner","conv":[{"out_channels":-1}]}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		// Anything accepted must build a model without panicking, unless it is
		// too large to allocate in a test.
		ch, h, w := c.FeatureShape()
		if ch*h*w*c.FCHidden > 1<<22 || c.InputSize() > 1<<20 {
			return
		}
		if _, err := NewCaptioner[float32](*c, nil); err != nil {
			t.Fatalf("validated config failed to build: %v", err)
		}
	})
}
