//go:build cgo && !purego

package ad

/*
double ls_peak_flops(int level, long iters, float *sink);
*/
import "C"

import "time"

// PeakFLOPS measures one core's float32 peak at the widest FMA of the
// kernels in use (KernelLevel: AVX-512 on a CPU that has it, unless
// LENSPEC_KERNELS or UseISA capped it): independent chains of vector FMAs
// and nothing else, the best of reps runs of a few milliseconds, in
// FLOP/s. It is the bound a GEMM kernel approaches; 0 where reps < 1.
func PeakFLOPS(reps int) float64 {
	const iters = 1 << 21
	best := 0.0
	if reps > 0 {
		peakFLOPs(kernelLevel, iters) // warm up
	}
	for range reps {
		start := time.Now()
		flops := peakFLOPs(kernelLevel, iters)
		best = max(best, flops/time.Since(start).Seconds())
	}
	return best
}

// peakFLOPs runs iters rounds of the peak's FMA chains at level and
// returns the FLOPs they did.
func peakFLOPs(level, iters int) float64 {
	var sink C.float
	return float64(C.ls_peak_flops(C.int(level), C.long(iters), &sink))
}
