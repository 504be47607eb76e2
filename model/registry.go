package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/lenspec/lenspec/ad"
)

// Architecture is a registered model architecture: how to parse its
// section of config.json and how to build it at either precision.
type Architecture struct {
	// Name is config.json's "architecture" value.
	Name string
	// ParseConfig decodes the architecture's section (every key of
	// config.json but the shared header), strictly: DecodeSection.
	ParseConfig func(section []byte) (ArchConfig, error)
	// New32 and New64 build the model for a validated config, weights
	// drawn from rng (nil: zero, for weights loaded next).
	New32 func(c *Config, rng *rand.Rand) (Decoder[float32], error)
	New64 func(c *Config, rng *rand.Rand) (Decoder[float64], error)
}

// The registry is written by Register from init functions and read
// afterwards, as image.RegisterFormat's is.
var (
	registryMu sync.RWMutex
	registry   = map[string]Architecture{}
)

// Register makes an architecture available to config.json files. It panics
// on a duplicate or incomplete registration, which is a programming error.
func Register(a Architecture) {
	if a.Name == "" || a.ParseConfig == nil || a.New32 == nil || a.New64 == nil {
		panic(fmt.Sprintf("model: incomplete registration of architecture %q", a.Name))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[a.Name]; dup {
		panic(fmt.Sprintf("model: architecture %q registered twice", a.Name))
	}
	registry[a.Name] = a
}

// Architectures lists the registered architecture names, sorted.
func Architectures() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	var names []string
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func lookup(name string) (Architecture, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	a, ok := registry[name]
	return a, ok
}

// New builds the model c describes, with weights drawn from rng (nil:
// zero).
func New[T ad.Float](c *Config, rng *rand.Rand) (Decoder[T], error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	a, _ := lookup(c.Architecture)
	var d any
	var err error
	switch any(T(0)).(type) {
	case float32:
		d, err = a.New32(c, rng)
	default:
		d, err = a.New64(c, rng)
	}
	if err != nil {
		return nil, err
	}
	return d.(Decoder[T]), nil
}

// Cast returns a copy of d with parameters converted to U. Converting a
// float32 model to float64 is exact, which is what replay needs.
func Cast[U, T ad.Float](d Decoder[T]) (Decoder[U], error) {
	out, err := New[U](d.Config(), nil)
	if err != nil {
		return nil, err
	}
	src, dst := d.Params(), out.Params()
	if len(src) != len(dst) {
		return nil, fmt.Errorf("cast %s: %d parameters, rebuilt model has %d", d.Config().Architecture, len(src), len(dst))
	}
	for i := range src {
		if len(src[i].W.Data) != len(dst[i].W.Data) {
			return nil, fmt.Errorf("cast %s: parameter %s has %d values, rebuilt model %d", d.Config().Architecture, src[i].Name, len(src[i].W.Data), len(dst[i].W.Data))
		}
		for j, v := range src[i].W.Data {
			dst[i].W.Data[j] = U(v)
		}
	}
	return out, nil
}
