package spec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Substitution is the discrete perturbation set of a token sequence (paper
// §3.1, "Discrete inputs"): the sequences of x's length that differ from x
// in at most Budget = ⌈δ·n⌉ positions, every token from the source
// vocabulary and none of its special tokens (padding, start, end, unknown).
type Substitution struct {
	X      []int
	Delta  float64
	Budget int
	Vocab  int
	// special flags the tokens a substitution may not use.
	special []bool
	// allowed lists the tokens it may use, for sampling.
	allowed []int
}

var _ Set[[]int] = (*Substitution)(nil)

// NewSubstitution validates and returns S(x, δ) over a vocabulary of vocab
// tokens with the given special tokens excluded. δ is in [0, 1]: δ = 1
// lets every position change.
func NewSubstitution(x []int, delta float64, vocab int, special []int) (*Substitution, error) {
	if !(delta >= 0 && delta <= 1) {
		return nil, fmt.Errorf("spec: substitution fraction δ %v must be in [0, 1]", delta)
	}
	if len(x) == 0 {
		return nil, fmt.Errorf("spec: an empty sequence has no substitutions")
	}
	if vocab < 1 {
		return nil, fmt.Errorf("spec: vocabulary of %d tokens", vocab)
	}
	s := &Substitution{X: x, Delta: delta, Vocab: vocab, special: make([]bool, vocab)}
	for _, id := range special {
		if id < 0 || id >= vocab {
			return nil, fmt.Errorf("spec: special token %d outside the vocabulary of %d", id, vocab)
		}
		s.special[id] = true
	}
	for id := 0; id < vocab; id++ {
		if !s.special[id] {
			s.allowed = append(s.allowed, id)
		}
	}
	if len(s.allowed) == 0 {
		return nil, fmt.Errorf("spec: every token of the vocabulary is special")
	}
	for i, id := range x {
		if !s.Allowed(id) {
			return nil, fmt.Errorf("spec: token %d at position %d is outside the vocabulary of %d or special", id, i, vocab)
		}
	}
	// ⌈δ·n⌉, with δ·n computed as a product of a float64 and an int: an
	// exact integer product (δ = 0.5, n = 8) must not round up to 5.
	s.Budget = int(math.Ceil(delta*float64(len(x)) - 1e-9))
	s.Budget = min(max(s.Budget, 0), len(x))
	return s, nil
}

// Allowed reports whether a substitution may use token id.
func (s *Substitution) Allowed(id int) bool { return id >= 0 && id < s.Vocab && !s.special[id] }

// Tokens lists the tokens a substitution may use, in id order.
func (s *Substitution) Tokens() []int { return s.allowed }

// Changed counts the positions where y differs from x (y of x's length).
func (s *Substitution) Changed(y []int) int {
	n := 0
	for i, id := range y {
		if id != s.X[i] {
			n++
		}
	}
	return n
}

// Contains reports whether y is in the set: x's length, at most Budget
// positions changed, every token allowed.
func (s *Substitution) Contains(y []int) bool {
	if len(y) != len(s.X) {
		return false
	}
	for _, id := range y {
		if !s.Allowed(id) {
			return false
		}
	}
	return s.Changed(y) <= s.Budget
}

// Project moves y into the set in place: a disallowed token reverts to
// x's, and past the first Budget changed positions (left to right) the
// others revert too. y must have x's length.
func (s *Substitution) Project(y []int) {
	changed := 0
	for i, id := range y {
		if !s.Allowed(id) {
			y[i] = s.X[i]
			continue
		}
		if id != s.X[i] {
			if changed == s.Budget {
				y[i] = s.X[i]
				continue
			}
			changed++
		}
	}
}

// Positions draws the Budget positions an attack may change, uniformly
// without replacement, in increasing order.
func (s *Substitution) Positions(rng *rand.Rand) []int {
	p := rng.Perm(len(s.X))[:s.Budget]
	slices.Sort(p)
	return p
}

// Sample fills y with x, then substitutes uniform allowed tokens at Budget
// positions drawn uniformly (the paper's random search; a draw may equal
// the original token).
func (s *Substitution) Sample(rng *rand.Rand, y []int) {
	copy(y, s.X)
	for _, i := range s.Positions(rng) {
		y[i] = s.allowed[rng.IntN(len(s.allowed))]
	}
}

// Describe names the set.
func (s *Substitution) Describe() string {
	return fmt.Sprintf("≤ %d of %d tokens substituted (δ=%g) from %d allowed", s.Budget, len(s.X), s.Delta, len(s.allowed))
}
