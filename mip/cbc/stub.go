//go:build !cgo

package cbc

import (
	"context"
	"math"
	"time"

	"github.com/lenspec/lenspec/mip"
)

// Solver would solve models with CBC; this build has no cgo, so Solve
// returns ErrUnavailable.
type Solver struct{}

var _ mip.Solver = Solver{}

// Name returns "cbc 2.10.x".
func (Solver) Name() string { return "cbc " + Version }

// Solve returns ErrUnavailable.
func (Solver) Solve(context.Context, *mip.Model, mip.Options) (*mip.Result, error) {
	return nil, ErrUnavailable
}

// LP would hold a linear relaxation in CLP; this build has no cgo.
type LP struct{}

// NewLP returns ErrUnavailable.
func NewLP(*mip.Model) (*LP, error) { return nil, ErrUnavailable }

// Optimize returns ErrUnavailable.
func (*LP) Optimize([]int, []float64, bool) (float64, mip.Status, error) {
	return math.NaN(), mip.Error, ErrUnavailable
}

// DualBound returns NaN.
func (*LP) DualBound() float64 { return math.NaN() }

// SetBounds returns ErrUnavailable.
func (*LP) SetBounds(int, float64, float64) error { return ErrUnavailable }

// AddRow returns ErrUnavailable.
func (*LP) AddRow([]int, []float64, mip.Sense, float64) error { return ErrUnavailable }

// NumVars returns 0.
func (*LP) NumVars() int { return 0 }

// PrimalTolerance returns NaN.
func (*LP) PrimalTolerance() float64 { return math.NaN() }

// DualTolerance returns NaN.
func (*LP) DualTolerance() float64 { return math.NaN() }

// Close does nothing.
func (*LP) Close() {}

// SetDeadline does nothing: there is no LP to stop.
func (*LP) SetDeadline(time.Time) {}
