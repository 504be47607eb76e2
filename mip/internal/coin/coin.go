// Package coin holds conventions of the COIN-OR solvers (CBC, CLP) that
// both of lenspec's backends read in their answers.
package coin

// Infinity is the magnitude at and above which CBC's bounds and objective
// values mean "none": no incumbent yet, no bound proven. mip/cbc's C++
// shim uses the same value (kNoSolution in shim.cpp).
const Infinity = 1e49

// Finite reports whether a value CBC reported is a real one.
func Finite(v float64) bool { return v > -Infinity && v < Infinity }
