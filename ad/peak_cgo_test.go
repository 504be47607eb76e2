//go:build cgo && !purego

package ad

import (
	"math"
	"testing"
)

// TestPeakFLOPS: each level's FMA chains count 2 FLOPs per lane of each of
// their 12 vectors per round (16 lanes with AVX-512, 8 with AVX2, 4 for
// the baseline), and the peak is a positive rate.
func TestPeakFLOPS(t *testing.T) {
	for level, lanes := range map[int]float64{4: 16, 3: 8, 0: 4} {
		if level > describeBLASCPU().Level {
			continue // the CPU cannot run these chains
		}
		if got, want := peakFLOPs(level, 10), 10*12*2*lanes; got != want {
			t.Errorf("level %d: %v FLOPs in 10 rounds, want %v", level, got, want)
		}
	}
	if p := PeakFLOPS(1); !(p > 0) || math.IsInf(p, 0) {
		t.Fatalf("peak %v FLOP/s", p)
	}
	if p := PeakFLOPS(0); p != 0 {
		t.Fatalf("peak %v FLOP/s with no runs", p)
	}
}
