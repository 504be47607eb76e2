package verify

import "github.com/lenspec/lenspec/mip"

// identity is a node with no activation (an encoder's last affine map when
// it has no ReLU).
type identity struct{}

func (identity) eval(z float64) float64                          { return z }
func (identity) interval(iv Interval) Interval                   { return iv }
func (identity) unstable(Interval) bool                          { return false }
func (identity) relax(float64, Interval, float64) (s, d float64) { return 1, 0 }
func (identity) slope(Interval) float64                          { return 1 }

func (identity) encode(e *encoding, name string, ex lin, iv Interval, _ float64) (kind, out, bin int) {
	out = e.m.AddVar(name, iv.Lo, iv.Hi, mip.Continuous)
	e.rowVar(name+"_def", out, 1, ex, nil, nil, mip.EQ, 0)
	return linear, out, -1
}
