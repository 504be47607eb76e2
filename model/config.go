package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/internal/fileio"
)

// Config is a model's config.json: a header every architecture shares and
// the architecture's own section, stored flat in one JSON object as
// Hugging Face configs are (the "architecture" key selects the section's
// parser, as "model_type" does there).
type Config struct {
	// Architecture names the registered architecture (Architectures lists
	// them).
	Architecture string `json:"architecture"`
	// Vocab are the output tokens' strings; EOS is the end-of-sequence id.
	// Architectures with a tokenizer (TokenizedArch) leave Vocab empty:
	// their vocabulary is the tokenizer's vocab.json.
	Vocab []string `json:"vocab,omitempty"`
	EOS   int      `json:"eos_id"`
	// MaxSteps is the default decoding step cap.
	MaxSteps int `json:"max_steps"`
	// DType is the weights' type in model.safetensors: "float32" (the
	// only one; see Load).
	DType string `json:"dtype"`
	// Training records how the shipped weights were made (informational).
	Training map[string]any `json:"training,omitempty"`
	// Arch is the architecture's section: every other key of config.json.
	Arch ArchConfig `json:"-"`
	// Tokenizer is the model's BPE tokenizer (vocab.json and merges.txt
	// next to config.json) for architectures that read or write text;
	// Load sets it, Save writes it.
	Tokenizer *bpe.Tokenizer `json:"-"`
}

// TokenizedArch is implemented by architecture sections whose model reads
// or writes text through a tokenizer stored with it: the output
// vocabulary is the tokenizer's, VocabSize tokens, and config.json's
// header has no "vocab".
type TokenizedArch interface {
	VocabSize() int
}

// InputKind is the kind of input the model of this configuration takes,
// known from config.json alone (ReadConfig), before any weights are
// read: Tokens for an architecture that reads text through its tokenizer
// (TokenizedArch), Continuous otherwise.
func (c *Config) InputKind() InputKind {
	if _, ok := c.Arch.(TokenizedArch); ok {
		return Tokens
	}
	return Continuous
}

// VocabSize is the number of output tokens.
func (c *Config) VocabSize() int {
	if t, ok := c.Arch.(TokenizedArch); ok {
		return t.VocabSize()
	}
	return len(c.Vocab)
}

// Token is output token id's string: from the header's vocab, or the
// tokenizer's (with "▁" for a leading space), or "#id" when neither has
// it.
func (c *Config) Token(id int) string {
	switch {
	case id >= 0 && id < len(c.Vocab):
		return c.Vocab[id]
	case c.Tokenizer != nil && id >= 0 && id < c.Tokenizer.Size():
		return c.Tokenizer.Token(id)
	}
	return fmt.Sprintf("#%d", id)
}

// ArchConfig is an architecture's section of config.json.
type ArchConfig interface {
	// Validate checks the section, given the shared header.
	Validate(c *Config) error
	// ParamCount is the number of parameters the section implies, in
	// float64 so that absurd sizes cannot overflow it.
	ParamCount(c *Config) float64
}

// maxParams bounds a model's size so a hostile config cannot demand
// terabytes before a single tensor is read.
const maxParams = 1e9

// maxDim bounds every single dimension of a config for the same reason.
const maxDim = 1 << 16

// Validate checks the configuration describes a model lenspec can build.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if _, ok := lookup(c.Architecture); !ok {
		bad("architecture %q is not supported (want one of %s)", c.Architecture, strings.Join(Architectures(), ", "))
	}
	if _, tok := c.Arch.(TokenizedArch); tok {
		if len(c.Vocab) > 0 {
			bad("vocab: a %s takes its vocabulary from vocab.json; config.json must not list one", c.Architecture)
		}
	} else if len(c.Vocab) < 2 || len(c.Vocab) > maxDim {
		bad("vocab has %d entries, want 2..%d", len(c.Vocab), maxDim)
	}
	if n := c.VocabSize(); n < 2 || n > maxDim {
		bad("vocabulary of %d tokens, want 2..%d", n, maxDim)
	} else if c.EOS < 0 || c.EOS >= n {
		bad("eos_id %d outside vocab of %d", c.EOS, n)
	}
	if c.MaxSteps <= 0 || c.MaxSteps > MaxStepCap {
		bad("max_steps %d must be in 1..%d", c.MaxSteps, MaxStepCap)
	}
	if c.DType != "float32" {
		bad("dtype %q is not supported (want \"float32\")", c.DType)
	}
	if c.Arch == nil {
		bad("no %s section", c.Architecture)
	} else if err := c.Arch.Validate(c); err != nil {
		errs = append(errs, err)
	} else if n := c.Arch.ParamCount(c); n > maxParams {
		bad("the architecture has %.3g parameters, more than the supported %g", n, float64(maxParams))
	}
	return flatten(errors.Join(errs...))
}

// headerKeys are the shared header's JSON keys; every other key belongs to
// the architecture's section.
var headerKeys = []string{"architecture", "vocab", "eos_id", "max_steps", "dtype", "training"}

// MarshalJSON writes the header and the architecture's section as one flat
// object, header first.
func (c Config) MarshalJSON() ([]byte, error) {
	type header Config // no MarshalJSON: no recursion
	h, err := marshal(header(c))
	if err != nil {
		return nil, err
	}
	if c.Arch == nil {
		return h, nil
	}
	a, err := marshal(c.Arch)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(a, []byte("{")) {
		return nil, fmt.Errorf("config: %s section is not a JSON object", c.Architecture)
	}
	if string(a) == "{}" {
		return h, nil
	}
	out := append(bytes.TrimSuffix(h, []byte("}")), ',')
	return append(out, a[1:]...), nil
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep "<eos>" readable
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// maxConfigSize bounds how much of a config.json is read: real ones are a
// few kilobytes; /dev/zero must not be read forever.
const maxConfigSize = 16 << 20

// ReadConfig reads and validates dir/config.json.
func ReadConfig(dir string) (*Config, error) {
	path := filepath.Join(dir, ConfigFile)
	b, err := fileio.ReadRegular(path, maxConfigSize)
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
// and duplicate keys are errors: a misspelt key must not fall back to a
// default, and of two values for one key neither may win silently.
func ParseConfig(b []byte) (*Config, error) {
	if err := checkDuplicateKeys(b); err != nil {
		return nil, fmt.Errorf("malformed config: %w", err)
	}
	var top map[string]json.RawMessage
	if err := strictDecode(b, &top); err != nil {
		return nil, fmt.Errorf("malformed config: %w", err)
	}
	if top == nil {
		return nil, errors.New("malformed config: want a JSON object")
	}
	head, rest := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for k, v := range top {
		if slices.Contains(headerKeys, k) {
			head[k] = v
		} else {
			rest[k] = v
		}
	}
	var c Config
	hb, _ := json.Marshal(head)
	type header Config
	if err := strictDecode(hb, (*header)(&c)); err != nil {
		return nil, fmt.Errorf("malformed config: %w", err)
	}
	a, ok := lookup(c.Architecture)
	if !ok {
		return nil, fmt.Errorf("architecture %q is not supported (want one of %s)", c.Architecture, strings.Join(Architectures(), ", "))
	}
	rb, _ := json.Marshal(rest)
	arch, err := a.ParseConfig(rb)
	if err != nil {
		return nil, fmt.Errorf("malformed config: %s section: %w", c.Architecture, err)
	}
	c.Arch = arch
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// DecodeSection decodes an architecture's section strictly (unknown keys
// are errors), for ArchConfig parsers.
func DecodeSection(b []byte, v any) error { return strictDecode(b, v) }

func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// checkDuplicateKeys walks a JSON document and reports the first object
// key that appears twice in one object, with its path.
func checkDuplicateKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return nil
		}
		switch d {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k := kt.(string)
				if seen[k] {
					return fmt.Errorf("duplicate key %q in object %s", k, path)
				}
				seen[k] = true
				if err := walk(path + "." + k); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if err := walk(fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
		_, err = dec.Token() // the closing delimiter
		return err
	}
	return walk("$")
}

// flatten joins a (nested) multi-error onto one line for CLI messages.
func flatten(err error) error {
	if err == nil {
		return nil
	}
	var msgs []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		msgs = append(msgs, e.Error())
	}
	walk(err)
	return errors.New(strings.Join(msgs, "; "))
}
