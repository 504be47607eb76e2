//go:build !cgo || purego

package ad

import "errors"

// KernelLevel names the convolution kernels in use: the Go loops here.
func KernelLevel() string { return "go" }

// CPULevel is "go": this build has no kernels of the CPU's own.
func CPULevel() string { return "go" }

func useISA(isa string) error {
	if isa != ISANative {
		return errors.New("ad: this build (purego) has no C kernels to choose an instruction set for")
	}
	return nil
}

func convForward[T Float](s convShape, x, w, bias, y []T, relu bool, _ func(int) []T) (saved []T) {
	convForwardGo(s, x, w, bias, y, relu)
	return nil
}

func convBackward[T Float](s convShape, g, y, x, _, w, dx []T, dxSet bool, dw, db []T, scratch func(int) []T) {
	if dxSet {
		clear(dx)
	}
	convBackwardGo(s, g, y, x, w, dx, dw, db, scratch)
}

func adamUpdate[T Float](w, g, m, v []T, lr, b1, b2, c1, c2, eps, decay float64) {
	adamUpdateGo(w, g, m, v, lr, b1, b2, c1, c2, eps, decay)
}

// setKernels is a no-op without cgo: there is one variant, the Go loops.
func setKernels(string) int { return 0 }

func lstmForward[T Float](b, hd int, gates, c, h, cNext, act []T) {
	lstmForwardGo(b, hd, gates, c, h, cNext, act)
}

func lstmBackward[T Float](b, hd int, act, c, dh, dcNext, dg, dc []T) {
	lstmBackwardGo(b, hd, act, c, dh, dcNext, dg, dc)
}

func scoresForward[T Float](s, b, a int, keys, q, v, out, th []T) {
	scoresForwardGo(s, b, a, keys, q, v, out, th)
}

func scoresBackward[T Float](s, b, a int, th, v, g, dk, dq, dv []T) {
	scoresBackwardGo(s, b, a, th, v, g, dk, dq, dv)
}

func attendForward[T Float](s, b, d int, w, mem, out []T) { attendForwardGo(s, b, d, w, mem, out) }

func attendBackward[T Float](s, b, d int, w, mem, g, dw, dm []T) {
	attendBackwardGo(s, b, d, w, mem, g, dw, dm)
}

func logSumExpRows[T Float](rows, cols int, x []T, targets []int, lse []float64) {
	logSumExpRowsGo(rows, cols, x, targets, lse)
}

func crossEntropyBackward[T Float](rows, cols int, x []T, targets []int, lse, scale []float64, gx []T) {
	crossEntropyBackwardGo(rows, cols, x, targets, lse, scale, gx)
}
