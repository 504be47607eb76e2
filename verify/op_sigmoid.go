package verify

import "math"

// sigmoid is σ(z) = 1/(1 + e^−z), element-wise: an LSTM's and a GRU's
// gates. Its rules are the S-shaped ones (sshape.go): interval [σ(l),
// σ(u)] within [0, 1], tangent and chord lines with two free tangent
// points, splits at 0 then at midpoints, and an outer approximation in the
// MIP.
type sigmoid struct{ sshape }

func newSigmoid() sigmoid {
	return sigmoid{sshape{name: "sigmoid", f: logistic, df: dLogistic, d2f: d2Logistic, lo: 0, hi: 1, centre: 0.5}}
}

// logistic is σ(z), without overflow for either sign.
func logistic(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// dLogistic is σ′(z) = σ(z)·(1 − σ(z)) = e^−|z|/(1 + e^−|z|)², exact in
// the tails where 1 − σ would cancel.
func dLogistic(z float64) float64 {
	e := math.Exp(-math.Abs(z))
	return e / ((1 + e) * (1 + e))
}

// d2Logistic is σ″(z) = σ′(z)·(1 − 2σ(z)).
func d2Logistic(z float64) float64 { return dLogistic(z) * (1 - 2*logistic(z)) }
