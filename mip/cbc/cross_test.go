//go:build cgo

package cbc

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lenspec/lenspec/mip"
	"github.com/lenspec/lenspec/mip/external"
	"github.com/lenspec/lenspec/mip/internal/miptest"
)

// TestBackendsAgree solves the same models in process and with the cbc
// program and compares the answers.
func TestBackendsAgree(t *testing.T) {
	type model struct {
		name string
		m    *mip.Model
		opt  mip.Options
	}
	models := []model{
		{"knapsack", miptest.Knapsack([]float64{92, 57, 49, 68, 60, 43, 67, 84, 87, 72}, []float64{23, 31, 29, 44, 53, 38, 63, 85, 89, 82}, 165), mip.Options{}},
		{"multiknapsack", miptest.MultiKnapsack(rand.New(rand.NewPCG(9, 9)), 30, 3), mip.Options{}},
	}
	b, _, _ := miptest.Bounds()
	models = append(models, model{"bounds", b, mip.Options{}})
	net := &miptest.ReLUNet{W1: [][]float64{{1, -1}, {0.5, 2}, {-1.5, 0.3}}, B1: []float64{0.1, -0.4, 0.2}, W2: []float64{1, -0.7, 1.2}, B2: -0.3}
	relu, _ := net.Encode([]float64{-1, -1}, []float64{1, 1})
	models = append(models, model{"relu", relu, mip.Options{}})
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 21))
		m := miptest.RandomInteger(rng, 8, 2, 4)
		models = append(models, model{"random", m, mip.Options{}})
		models = append(models, model{"random decision", m, mip.Options{UseCutoff: true, Cutoff: -5, SolutionLimit: 1}})
	}
	for _, tt := range models {
		in, err := (Solver{}).Solve(context.Background(), tt.m, tt.opt)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := (external.Solver{}).Solve(context.Background(), tt.m, tt.opt)
		if err != nil {
			t.Fatal(err)
		}
		if in.Status != ex.Status || in.HasSolution != ex.HasSolution {
			t.Errorf("%s: in process %s (solution %v), external %s (solution %v)", tt.name, in.Status, in.HasSolution, ex.Status, ex.HasSolution)
			continue
		}
		if in.Status == mip.Optimal && math.Abs(in.Objective-ex.Objective) > 1e-6 {
			t.Errorf("%s: optimum %g in process, %g external", tt.name, in.Objective, ex.Objective)
		}
	}
}
