package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/lenspec/lenspec/internal/fileio"
	"github.com/lenspec/lenspec/spec"
	"github.com/lenspec/lenspec/verify"
)

// SpecFile is a user's own verification problem, read from JSON: a model,
// an input (a file, or the values themselves), the set around it (a
// radius, or per-coordinate bounds) and K̂. Relative paths are relative
// to the spec file.
//
//	{"model": "my-model", "input": "x.safetensors", "eps": 0.05, "max_len": 3}
//	{"model": "my-model", "values": [0.1, 0.2], "lower": [0, 0.2], "upper": [0.3, 0.2]}
type SpecFile struct {
	Model  string    `json:"model"`
	Input  string    `json:"input,omitempty"`
	Values []float64 `json:"values,omitempty"`
	Eps    *float64  `json:"eps,omitempty"`
	Lower  []float64 `json:"lower,omitempty"`
	Upper  []float64 `json:"upper,omitempty"`
	// MaxLen is K̂ (absent: the input's own output length); for a
	// worst-case search, the largest K̂ tried.
	MaxLen *int `json:"max_len,omitempty"`

	path string
}

// maxSpecBytes caps a spec file: values for a large input fit well within.
const maxSpecBytes = 64 << 20

// ReadSpecFile reads and checks a spec file (unknown fields refused).
func ReadSpecFile(path string) (*SpecFile, error) {
	data, err := fileio.ReadRegular(path, maxSpecBytes)
	if err != nil {
		return nil, err
	}
	var sp SpecFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sp); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: more than one JSON value", path)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: "+format, append([]any{path}, args...)...)
	}
	switch {
	case sp.Model == "":
		return nil, bad(`no "model"`)
	case (sp.Input == "") == (sp.Values == nil):
		return nil, bad(`give exactly one of "input" (a file) or "values"`)
	case (sp.Eps != nil) == (sp.Lower != nil || sp.Upper != nil):
		return nil, bad(`give exactly one of "eps" or "lower" and "upper"`)
	case sp.Eps == nil && (sp.Lower == nil || sp.Upper == nil):
		return nil, bad(`"lower" and "upper" go together`)
	case sp.MaxLen != nil && (*sp.MaxLen < 0 || *sp.MaxLen > verify.MaxK):
		return nil, bad(`"max_len" %d must be in 0..%d`, *sp.MaxLen, verify.MaxK)
	}
	dir := filepath.Dir(path)
	if !filepath.IsAbs(sp.Model) {
		sp.Model = filepath.Join(dir, sp.Model)
	}
	if sp.Input != "" && !filepath.IsAbs(sp.Input) {
		sp.Input = filepath.Join(dir, sp.Input)
	}
	sp.path = path
	return &sp, nil
}

// specFlags are lenspec verify's and bound's flags a spec file stands in
// for: the model, the input, the set and K̂, and the results file and
// shard a spec run has none of.
var specFlags = []string{"model", "eps", "images", "index", "image", "input", "out", "shard", "max-len"}

// LoadSpec reads the spec file at path (ReadSpecFile) and loads its
// model, after refusing, as a SettingsError, a flag given beside it
// (changed reports which were) that the spec file gives instead.
func LoadSpec(path string, changed func(flag string) bool) (*SpecFile, *Model, error) {
	if name, ok := firstGiven(changed, specFlags); ok {
		return nil, nil, SettingsError{fmt.Errorf("--spec gives the model, the input, the set and K̂: drop --%s", name)}
	}
	sp, err := ReadSpecFile(path)
	if err != nil {
		return nil, nil, err
	}
	if err := checkVerifiable(sp.Model); err != nil {
		return nil, nil, err
	}
	m, err := LoadModel(sp.Model)
	if err != nil {
		return nil, nil, err
	}
	return sp, m, nil
}

// RunSpec verifies (or, with c.Settings.Bound, bounds) the problem of a
// spec file with c's settings; c.Model is the spec's model, and c's data,
// samples, radii and results file are not used. The record is returned,
// not written; a witness goes beside the spec file, in NAME.witnesses/.
func RunSpec(ctx context.Context, c VerifyConfig, sp *SpecFile) (VerifyRecord, error) {
	if c.Model == nil {
		return VerifyRecord{}, errors.New("spec: no model")
	}
	c.Eps = []float64{0}
	if sp.Eps != nil {
		c.Eps[0] = *sp.Eps
	}
	if sp.MaxLen != nil {
		c.Settings.MaxLen = *sp.MaxLen
	}
	// Witnesses go beside the spec file (a spec run has no results file
	// to put them beside).
	c.Out, c.WitnessDir = "", filepath.Join(filepath.Dir(sp.path), stem(filepath.Base(sp.path))+".witnesses")
	if err := c.Validate(); err != nil {
		return VerifyRecord{}, fmt.Errorf("%s: %w", sp.path, err)
	}
	d := c.Model.D64
	in := d.Input()
	x := sp.Values
	if sp.Input != "" {
		var err error
		if x, err = readInput(in, sp.Input); err != nil {
			return VerifyRecord{}, err
		}
	} else if err := checkInput(in, x); err != nil {
		return VerifyRecord{}, fmt.Errorf("%s: %w", sp.path, err)
	}
	var set spec.Region
	var err error
	if sp.Eps != nil {
		set, err = spec.NewBall(x, *sp.Eps, in.Min, in.Max)
	} else {
		set, err = spec.NewBox(x, sp.Lower, sp.Upper, in.Min, in.Max)
	}
	if err != nil {
		return VerifyRecord{}, fmt.Errorf("%s: %w", sp.path, err)
	}
	src, err := newInputSource(ctx, d, [][]float64{x}, c.Settings.MaxSteps)
	if err != nil {
		return VerifyRecord{}, err
	}
	own := src.labels[0]
	// The data's identity: the spec file's name and the set's exact values.
	lo, hi := set.Box()
	c.Data = Data{Ref: DataRef{Name: "spec", Split: filepath.Base(sp.path), SHA256: valuesSHA256(x, lo, hi)}, Source: src}
	net, err := verify.Lower(d)
	if err != nil {
		return VerifyRecord{}, err
	}
	r := c.base()
	r.Sample, r.Eps, r.K = 0, c.Eps[0], c.k(own)
	u := unit{sample: 0, eps: c.Eps[0], key: VerifyKey(r)}
	return c.verifyIn(ctx, net, c.options(), u, set, own)
}
