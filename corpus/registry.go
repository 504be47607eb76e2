package corpus

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// A Source is a parallel corpus lenspec knows by name. Corpora register
// themselves (Register, from an init function, as image.RegisterFormat's
// formats do), so that a command line or a library user names one without
// a switch over the known corpora; any other name is a TSV file of the
// user's own (LoadTSV).
type Source struct {
	// Name is what --corpus and the models' training records call it.
	Name string
	// Help describes it in one line.
	Help string
	// Location describes where Load looks when given no path, and
	// DefaultPath returns it; LocationFlag is the flag that overrides it.
	Location     string
	LocationFlag string
	DefaultPath  func() (string, error)
	// Load reads the corpus at path (its file or directory) and splits
	// it with seed where lenspec splits it itself.
	Load func(path string, seed uint64) (*Splits, error)
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Source{}
)

// Register makes a corpus known by its name; registering a name twice
// panics (a programming error, as with image.RegisterFormat).
func Register(s Source) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[s.Name]; dup || s.Name == "" || s.Load == nil || s.DefaultPath == nil {
		panic(fmt.Sprintf("corpus: bad or duplicate registration of %q", s.Name))
	}
	registry[s.Name] = s
}

// Lookup returns the registered corpus called name.
func Lookup(name string) (Source, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	s, ok := registry[name]
	return s, ok
}

// Sources lists the registered corpora by name.
func Sources() []Source {
	registryMu.RLock()
	defer registryMu.RUnlock()
	var out []Source
	for _, s := range registry {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Source) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Load reads the corpus called name — a registered one, at path or (path
// empty) its default location — or else the TSV file name.
func Load(name, path string, seed uint64) (*Splits, error) {
	s, ok := Lookup(name)
	if !ok {
		return LoadTSV(name, seed)
	}
	if path == "" {
		var err error
		if path, err = s.DefaultPath(); err != nil {
			return nil, err
		}
	}
	return s.Load(path, seed)
}
