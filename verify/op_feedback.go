package verify

import "math"

// feedback is the token-feedback operator of decoder steps t ≥ 1: the
// term W_ih·emb[y_{t−1}] a step adds to its hidden pre-activations, where
// y_{t−1} is the token step t − 1 emitted (its argmax). It has no input
// node: over a set it ranges over the tokens the bounds allow at step
// t − 1 (Bounds.Allowed), and in the MIP it is linear in that step's
// one-hot.
type feedback struct {
	tokens [][]float64 // tokens[z][j] = (W_ih·emb[z])_j
}

// newFeedback precomputes W_ih·emb[z] for every token z (W_ih [h × e],
// emb [vocab × e], both row-major).
func newFeedback(wih, emb []float64, h, e, vocab int) *feedback {
	f := &feedback{}
	for z := 0; z < vocab; z++ {
		p := make([]float64, h)
		for j := range p {
			for k := 0; k < e; k++ {
				p[j] += wih[j*e+k] * emb[z*e+k]
			}
		}
		f.tokens = append(f.tokens, p)
	}
	return f
}

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
	for r := 0; r < c.rows; r++ {
		cr := c.row(r)
		best, arg := math.Inf(-1), -1
		for z, ok := range s.dom[r].Allowed[n.step-1] {
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
		if s.rec != nil {
			s.rec.token[n.id][r] = arg
		}
		if s.padded {
			ar := s.abs[n.id].row(r)
			var worst float64
			for z, ok := range s.dom[r].Allowed[n.step-1] {
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
	for r := range s.dom {
		z := s.rec.token[n.id][r]
		if z < 0 {
			z = firstAllowed(s.dom[r].Allowed[n.step-1])
		}
		copy(out.row(r), f.tokens[z])
	}
	return out
}

// encode: Σ_z δ[z]·tokens[z][j] over the previous step's one-hot δ (a lone
// allowed token is a constant).
func (f *feedback) encode(e *encoding, n *node, _ [][]lin) []lin {
	delta := e.delta[n.step-1]
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
