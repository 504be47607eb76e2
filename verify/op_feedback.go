package verify

import "math"

// feedback is the token-feedback operator of decoder steps t ≥ 1: the
// term W_ih·emb[y_{t−1}] added to the hidden pre-activations, where y_{t−1}
// is the argmax of the previous step. Over a set it ranges over the tokens
// allowed at step t − 1 (Bounds.Allowed); in the MIP it is linear in that
// step's one-hot.
type feedback struct {
	tokens [][]float64 // tokens[z][j] = (W_ih·emb[z])_j
}

// eval is the term for token z.
func (f *feedback) eval(z int) []float64 { return f.tokens[z] }

// interval is the range of coordinate j over the allowed tokens.
func (f *feedback) interval(j int, allowed []bool) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for z, ok := range allowed {
		if ok {
			lo, hi = math.Min(lo, f.tokens[z][j]), math.Max(hi, f.tokens[z][j])
		}
	}
	return lo, hi
}

// back is the CROWN backward rule: c·term ≤ max over the allowed tokens of
// c·tokens[z], a constant (with its absolute sum for rounding), and the
// token that attains it.
func (f *feedback) back(c []float64, allowed []bool) (best, bestAbs float64, arg int) {
	best, arg = math.Inf(-1), -1
	for z, ok := range allowed {
		if !ok {
			continue
		}
		var v, va float64
		for i, ci := range c {
			if ci != 0 {
				v += ci * f.tokens[z][i]
				va += math.Abs(ci * f.tokens[z][i])
			}
		}
		if v > best {
			best, arg = v, z
		}
		bestAbs = math.Max(bestAbs, va)
	}
	return best, bestAbs, arg
}

// expr is the MIP encoding: adds Σ_z δ[z]·tokens[z][j] to ex, δ the
// previous step's one-hot (a lone allowed token, −2, is a constant).
func (f *feedback) expr(ex *lin, j int, delta []int) {
	for z, d := range delta {
		switch {
		case d >= 0:
			ex.add(d, f.tokens[z][j])
		case d == -2:
			ex.c += f.tokens[z][j]
		}
	}
}
