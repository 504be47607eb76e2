package verify

import "math"

// feedback is the token-feedback operator of decoder steps t ≥ 1: the
// term tokens[y_{t−1}] a step adds to its pre-activations (a cell's input
// weights times the embedding of y_{t−1}, the token step t − 1 emitted,
// folded into one table by the lowering). It has no input node: over a
// set it ranges over the tokens the bounds allow at step t − 1
// (Bounds.Allowed), and in the MIP it is linear in that step's one-hot.
type feedback struct {
	tokens [][]float64 // tokens[z][j]: coordinate j of token z's term
}

// newFeedback returns the operator of a token table (its rows are kept,
// not copied).
func newFeedback(table [][]float64) *feedback { return &feedback{tokens: table} }

// eval is the term for token tok.
func (f *feedback) eval(_ [][]float64, tok int) []float64 {
	return append([]float64(nil), f.tokens[tok]...)
}

// interval is each coordinate's range over the allowed tokens.
func (f *feedback) interval(_ [][]Interval, allowed []bool) []Interval {
	out := make([]Interval, len(f.tokens[0]))
	for j := range out {
		out[j] = Interval{math.Inf(1), math.Inf(-1)}
		for z, ok := range allowed {
			if ok {
				out[j] = Interval{math.Min(out[j].Lo, f.tokens[z][j]), math.Max(out[j].Hi, f.tokens[z][j])}
			}
		}
	}
	return out
}

// back: c·term ≤ max over the tokens allowed (in the row's domain) of
// c·tokens[z], a constant; the token attaining it is recorded for the
// gradient's forward pass.
func (f *feedback) back(s *backState, n *node) {
	c := s.coef[n.id]
	rec := s.tokens(n)
	for r := 0; r < c.rows; r++ {
		cr := c.row(r)
		best, arg := math.Inf(-1), -1
		for z, ok := range s.dom[r].Allowed[n.token] {
			if ok {
				if v := dot(cr, f.tokens[z]); v > best {
					best, arg = v, z
				}
			}
		}
		if arg < 0 { // no token allowed: the domain is empty; nothing above counts
			best = 0
		}
		s.k[r] += best
		if rec != nil {
			rec[r] = arg
		}
		if s.padded {
			ar := s.abs[n.id].row(r)
			var worst float64
			for z, ok := range s.dom[r].Allowed[n.token] {
				if ok {
					var v float64
					for j, a := range ar {
						v += a * math.Abs(f.tokens[z][j])
					}
					worst = math.Max(worst, v)
				}
			}
			s.kabs[r] += worst
		}
	}
}

// forward gives each row the term of the token its back-substitution
// took (a token nothing above depends on: the first allowed).
func (f *feedback) forward(s *backState, n *node, _ []*block) *block {
	out := newBlock(len(s.dom), len(f.tokens[0]))
	rec := s.rec.token[n.id]
	for r := range s.dom {
		z := -1
		if rec != nil {
			z = rec[r]
		}
		if z < 0 {
			z = firstAllowed(s.dom[r].Allowed[n.token])
		}
		copy(out.row(r), f.tokens[z])
	}
	return out
}

// encode: Σ_z δ[z]·tokens[z][j] over the previous step's one-hot δ (a lone
// allowed token is a constant).
func (f *feedback) encode(e *encoding, n *node, _ [][]lin) []lin {
	delta := e.delta[n.token]
	out := make([]lin, len(f.tokens[0]))
	for j := range out {
		for z, d := range delta {
			switch {
			case d >= 0:
				out[j].add(d, f.tokens[z][j])
			case d == loneToken:
				out[j].c += f.tokens[z][j]
			}
		}
	}
	return out
}

// firstAllowed is the lowest token allowed (0 when none is).
func firstAllowed(al []bool) int {
	for z, ok := range al {
		if ok {
			return z
		}
	}
	return 0
}
