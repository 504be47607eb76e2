package verify

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/model"
)

// TestBoundPathSound checks that BoundPath's bounds hold: every margin
// o_t[z] − o_t[path[t]] of random inputs of the box, decoded with the path
// fed back, lies below its bound, for each cell and method; and that the
// methods are ordered (CROWN no looser than intervals, α-CROWN no looser
// than CROWN), with CROWN strictly tighter somewhere.
func TestBoundPathSound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cell  string
		convs int
		r     float64
	}{
		{"relu", model.CellReLU, 2, 0.1},
		{"relu-wide", model.CellReLU, 1, 0.4},
		{"lstm", model.CellLSTM, 1, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, net := tinyNet(t, 3, tc.convs, tc.cell)
			rng := rand.New(rand.NewPCG(11, 5))
			lo, hi := randomBox(rng, net.InputSize, tc.r)
			path := []int{1, 0, 2, net.EOS}
			bounds := map[BoundMethod]*PathMargins{}
			for _, m := range []BoundMethod{BoundInterval, BoundCROWN, BoundAlphaCROWN} {
				pm, err := BoundPath(context.Background(), net, lo, hi, path, m, 10)
				if err != nil {
					t.Fatal(err)
				}
				if len(pm.Upper) != len(path) {
					t.Fatalf("%s: %d steps bounded, want %d", m, len(pm.Upper), len(path))
				}
				bounds[m] = pm
			}
			g := newGraph(net, len(path)-1)
			for range 300 {
				tr := g.eval(sampleIn(rng, lo, hi), path)
				for s, o := range tr.logits {
					for z := range o {
						m := o[z] - o[path[s]]
						for meth, pm := range bounds {
							if m > pm.Upper[s][z] {
								t.Fatalf("%s: step %d token %d: margin %.9g above its bound %.9g", meth, s, z, m, pm.Upper[s][z])
							}
						}
					}
				}
			}
			tighter := false
			for s := range path {
				for z := range bounds[BoundInterval].Upper[s] {
					iv, cr, al := bounds[BoundInterval].Upper[s][z], bounds[BoundCROWN].Upper[s][z], bounds[BoundAlphaCROWN].Upper[s][z]
					if cr > iv || al > cr+1e-9*math.Max(1, math.Abs(cr)) {
						t.Errorf("step %d token %d: interval %.9g, CROWN %.9g, α-CROWN %.9g: not ordered", s, z, iv, cr, al)
					}
					tighter = tighter || cr < iv
				}
			}
			if !tighter {
				t.Error("CROWN no tighter than intervals on any margin")
			}
		})
	}
}

// TestBoundPathRefuses checks BoundPath's refusals of what it cannot bound.
func TestBoundPathRefuses(t *testing.T) {
	_, net := tinyNet(t, 3, 1)
	lo, hi := make([]float64, net.InputSize), make([]float64, net.InputSize)
	empty := append([]float64(nil), lo...)
	empty[2] = 1
	for _, tc := range []struct {
		name   string
		lo, hi []float64
		path   []int
		method BoundMethod
		iters  int
		want   string
	}{
		{"short box", lo[1:], hi, []int{0}, BoundCROWN, 0, "a box of"},
		{"empty box", empty, hi, []int{0}, BoundCROWN, 0, "empty"},
		{"no path", lo, hi, nil, BoundCROWN, 0, "empty path"},
		{"token", lo, hi, []int{0, net.Vocab}, BoundCROWN, 0, "outside the vocabulary"},
		{"method", lo, hi, []int{0}, BoundAlphaCROWNFull, 0, "want interval"},
		{"iterations", lo, hi, []int{0}, BoundAlphaCROWN, 0, "0 iterations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BoundPath(context.Background(), net, tc.lo, tc.hi, tc.path, tc.method, tc.iters)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
