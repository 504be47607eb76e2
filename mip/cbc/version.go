package cbc

import (
	"errors"

	"github.com/lenspec/lenspec/mip"
)

// Version is the CBC version this package was written and tested against.
const Version = "2.10.x"

// ErrUnavailable is returned by every entry point of a build without cgo;
// mip/external works there instead.
var ErrUnavailable = errors.New("cbc: built without cgo; use mip/external")

// The cgo and stub builds must offer the same API.
var (
	_ mip.Solver                                                     = Solver{}
	_ func(Solver) string                                            = Solver.Name
	_ func(*mip.Model) (*LP, error)                                  = NewLP
	_ func(*LP, []int, []float64, bool) (float64, mip.Status, error) = (*LP).Optimize
	_ func(*LP) float64                                              = (*LP).DualBound
	_ func(*LP, int, float64, float64) error                         = (*LP).SetBounds
	_ func(*LP, []int, []float64, mip.Sense, float64) error          = (*LP).AddRow
	_ func(*LP) int                                                  = (*LP).NumVars
	_ func(*LP) float64                                              = (*LP).PrimalTolerance
	_ func(*LP) float64                                              = (*LP).DualTolerance
	_ func(*LP)                                                      = (*LP).Close
)
