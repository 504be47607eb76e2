// Package prune computes how much optimality CBC's pruning may give away,
// for the backends that turn CBC's answers into sound bounds.
package prune

import (
	"math"

	"github.com/lenspec/lenspec/mip"
)

// DefaultIncrement is CBC's cutoff increment unless it finds a larger
// one that is safe for the objective.
const DefaultIncrement = 1e-5

// Slack returns how far below an incumbent the optimum may lie after CBC
// pruned every node whose LP bound came within its cutoff increment inc of
// the incumbent: nothing if every objective value lies on a lattice
// coarser than inc (integer coefficients on integer variables only, the
// case in which CBC raises the increment to just below the lattice step),
// else inc itself.
func Slack(m *mip.Model, inc float64) float64 {
	if !(inc > 0) {
		return 0
	}
	coef, _ := m.Objective()
	step := 0.0 // gcd of the coefficients; 0 while all are zero
	for j, c := range coef {
		if c == 0 {
			continue
		}
		if m.Var(j).Type == mip.Continuous || c != math.Trunc(c) || math.Abs(c) > 1<<53 {
			return inc
		}
		a, b := math.Abs(c), step
		for b != 0 {
			a, b = b, math.Mod(a, b)
		}
		step = a
	}
	if step == 0 || inc < step {
		return 0
	}
	return inc
}
