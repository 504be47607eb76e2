package verify

import "math"

// tanh is the hyperbolic tangent, element-wise: an LSTM's candidate and
// cell output, a GRU's candidate. Its rules are the S-shaped ones
// (sshape.go): interval [tanh(l), tanh(u)] within [−1, 1], tangent and
// chord lines with two free tangent points, splits at 0 then at midpoints,
// and an outer approximation in the MIP.
type tanh struct{ sshape }

func newTanh() tanh {
	return tanh{sshape{name: "tanh", f: math.Tanh, df: dTanh, d2f: d2Tanh, lo: -1, hi: 1, centre: 0}}
}

// dTanh is 1/cosh²(z) (0 where cosh overflows).
func dTanh(z float64) float64 {
	c := math.Cosh(z)
	return 1 / (c * c)
}

// d2Tanh is −2·tanh(z)/cosh²(z).
func d2Tanh(z float64) float64 { return -2 * math.Tanh(z) * dTanh(z) }
