package prune

import (
	"math"
	"testing"

	"github.com/lenspec/lenspec/mip"
)

func TestSlack(t *testing.T) {
	tests := []struct {
		name  string
		types []mip.VarType
		coef  []float64
		inc   float64
		want  float64
	}{
		{"integral", []mip.VarType{mip.Binary, mip.Integer}, []float64{3, -5}, 0.9999, 0},
		{"gcd 2", []mip.VarType{mip.Binary, mip.Integer}, []float64{4, -6}, 1.9999, 0},
		{"increment at step", []mip.VarType{mip.Binary, mip.Integer}, []float64{4, -6}, 2, 2},
		{"fractional", []mip.VarType{mip.Binary, mip.Binary}, []float64{0.7, 0.3}, 0.0999, 0.0999},
		{"continuous", []mip.VarType{mip.Binary, mip.Continuous}, []float64{1, 1}, 1e-5, 1e-5},
		{"continuous zero", []mip.VarType{mip.Binary, mip.Continuous}, []float64{2, 0}, 0.9999, 0},
		{"constant objective", []mip.VarType{mip.Continuous}, []float64{0}, 1e-5, 0},
		{"no increment", []mip.VarType{mip.Continuous}, []float64{0.5}, 0, 0},
		{"NaN increment", []mip.VarType{mip.Continuous}, []float64{0.5}, math.NaN(), 0},
	}
	for _, tt := range tests {
		m := mip.NewModel(tt.name)
		idx := make([]int, len(tt.types))
		for j, ty := range tt.types {
			idx[j] = m.AddVar("", -10, 10, ty)
		}
		m.SetObjective(idx, tt.coef, 1.5)
		if got := Slack(m, tt.inc); got != tt.want {
			t.Errorf("%s: Slack = %g, want %g", tt.name, got, tt.want)
		}
	}
}
