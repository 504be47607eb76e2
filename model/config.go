package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ArchCaptioner names the CNN-RNN image captioner in config.json.
const ArchCaptioner = "cnn-rnn-captioner"

// ConvConfig describes one convolution layer of the encoder.
type ConvConfig struct {
	OutChannels int `json:"out_channels"`
	Kernel      int `json:"kernel"`
	Stride      int `json:"stride"`
	Padding     int `json:"padding"`
}

// InputConfig describes the image the model reads.
type InputConfig struct {
	Channels int     `json:"channels"`
	Height   int     `json:"height"`
	Width    int     `json:"width"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
}

// Config is a model's config.json: everything needed to rebuild the
// architecture around the tensors in model.safetensors.
type Config struct {
	Architecture string       `json:"architecture"`
	Input        InputConfig  `json:"input"`
	Conv         []ConvConfig `json:"conv"`
	FCHidden     int          `json:"fc_hidden"`
	// Embedding is both the image embedding size (i₀) and the token
	// embedding size: both feed the same cell input.
	Embedding int      `json:"embedding_size"`
	Hidden    int      `json:"hidden_size"`
	Cell      string   `json:"cell"`
	Vocab     []string `json:"vocab"`
	EOS       int      `json:"eos_id"`
	// MaxSteps is the default decoding step cap.
	MaxSteps int    `json:"max_steps"`
	DType    string `json:"dtype"`
	// Training records how the shipped weights were made (informational).
	Training map[string]any `json:"training,omitempty"`
}

// DefaultCaptionerConfig is the Multi-MNIST captioner shipped in
// models/mmnist-rnn. Channel counts and the first FC width are kept small:
// every ReLU there is a potential binary variable for the verifier.
func DefaultCaptionerConfig() Config {
	vocab := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "<eos>"}
	return Config{
		Architecture: ArchCaptioner,
		Input:        InputConfig{Channels: 1, Height: 28, Width: 112, Min: -1, Max: 1},
		Conv:         []ConvConfig{{8, 3, 2, 1}, {16, 3, 2, 1}},
		FCHidden:     128,
		Embedding:    32,
		Hidden:       32,
		Cell:         "rnn_relu",
		Vocab:        vocab,
		EOS:          10,
		MaxSteps:     20,
		DType:        "float32",
	}
}

// Validate checks the configuration describes a model lenspec can build.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Architecture != ArchCaptioner {
		bad("architecture %q is not supported (want %q)", c.Architecture, ArchCaptioner)
	}
	if c.Input.Channels <= 0 || c.Input.Height <= 0 || c.Input.Width <= 0 {
		bad("input shape %dx%dx%d must be positive", c.Input.Channels, c.Input.Height, c.Input.Width)
	}
	if !(c.Input.Min < c.Input.Max) {
		bad("input range [%v, %v] is empty", c.Input.Min, c.Input.Max)
	}
	h, w := c.Input.Height, c.Input.Width
	for i, cv := range c.Conv {
		if cv.OutChannels <= 0 || cv.Kernel <= 0 || cv.Stride <= 0 || cv.Padding < 0 {
			bad("conv[%d]: %+v has a non-positive size", i, cv)
			continue
		}
		h = (h+2*cv.Padding-cv.Kernel)/cv.Stride + 1
		w = (w+2*cv.Padding-cv.Kernel)/cv.Stride + 1
		if h <= 0 || w <= 0 {
			bad("conv[%d]: output %dx%d is empty", i, h, w)
		}
	}
	if c.FCHidden <= 0 || c.Embedding <= 0 || c.Hidden <= 0 {
		bad("fc_hidden %d, embedding_size %d, hidden_size %d must be positive", c.FCHidden, c.Embedding, c.Hidden)
	}
	if len(errs) == 0 {
		if n := c.paramCount(); n > 1e9 {
			bad("the architecture has %.3g parameters, more than the supported 1e9", n)
		}
	}
	if c.Cell != "rnn_relu" {
		bad("cell %q is not supported (want rnn_relu)", c.Cell)
	}
	if len(c.Vocab) < 2 {
		bad("vocab has %d entries, need at least 2", len(c.Vocab))
	}
	if c.EOS < 0 || c.EOS >= len(c.Vocab) {
		bad("eos_id %d outside vocab of %d", c.EOS, len(c.Vocab))
	}
	if c.MaxSteps <= 0 || c.MaxSteps > 10000 {
		bad("max_steps %d must be in 1..10000", c.MaxSteps)
	}
	// Bound sizes so a hostile config cannot demand terabytes.
	const maxDim = 1 << 16
	for _, d := range []int{c.Input.Channels, c.Input.Height, c.Input.Width, c.FCHidden, c.Embedding, c.Hidden, len(c.Vocab)} {
		if d > maxDim {
			bad("dimension %d exceeds the supported %d", d, maxDim)
			break
		}
	}
	for _, cv := range c.Conv {
		if cv.OutChannels > maxDim || cv.Kernel > maxDim || cv.Stride > maxDim || cv.Padding > maxDim {
			bad("conv layer %+v exceeds the supported size %d", cv, maxDim)
			break
		}
	}
	if c.DType != "" && c.DType != "float32" {
		bad("dtype %q is not supported (want float32)", c.DType)
	}
	return errors.Join(errs...)
}

// paramCount is computed in float64 so absurd configs cannot overflow it.
func (c *Config) paramCount() float64 {
	n, in := 0.0, float64(c.Input.Channels)
	for _, cv := range c.Conv {
		n += float64(cv.OutChannels) * (in*float64(cv.Kernel)*float64(cv.Kernel) + 1)
		in = float64(cv.OutChannels)
	}
	ch, h, w := c.FeatureShape()
	v, e, hd := float64(len(c.Vocab)), float64(c.Embedding), float64(c.Hidden)
	n += float64(ch)*float64(h)*float64(w)*float64(c.FCHidden) + float64(c.FCHidden)*(e+1) + e
	return n + v*e + hd*(e+hd+2) + v*(hd+1)
}

// FeatureShape returns the encoder's convolution output [C, H, W] (the
// input itself when there are no convolutions).
func (c *Config) FeatureShape() (ch, h, w int) {
	ch, h, w = c.Input.Channels, c.Input.Height, c.Input.Width
	for _, cv := range c.Conv {
		h = (h+2*cv.Padding-cv.Kernel)/cv.Stride + 1
		w = (w+2*cv.Padding-cv.Kernel)/cv.Stride + 1
		ch = cv.OutChannels
	}
	return ch, h, w
}

// InputSize is the number of input values per image.
func (c *Config) InputSize() int { return c.Input.Channels * c.Input.Height * c.Input.Width }

// ReadConfig reads and validates dir/config.json.
func ReadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read model config: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes and validates a config.json document. Unknown fields
// are errors: a misspelt key must not silently fall back to a default.
func ParseConfig(b []byte) (*Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("malformed config: %w", err)
	}
	if dec.More() {
		return nil, errors.New("malformed config: trailing data after the JSON object")
	}
	if err := c.Validate(); err != nil {
		return nil, flatten(err)
	}
	return &c, nil
}

// flatten joins a multi-error onto one line for CLI messages.
func flatten(err error) error {
	var j interface{ Unwrap() []error }
	if errors.As(err, &j) {
		msg := ""
		for i, e := range j.Unwrap() {
			if i > 0 {
				msg += "; "
			}
			msg += e.Error()
		}
		return errors.New(msg)
	}
	return err
}
