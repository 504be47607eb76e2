//go:build !cgo || purego

package ad

// KernelLevel names the convolution kernels in use: the Go loops here.
func KernelLevel() string { return "go" }

func convForward[T Float](s convShape, x, w, bias, y []T, relu bool, _ func(int) []T) (saved []T) {
	convForwardGo(s, x, w, bias, y, relu)
	return nil
}

func convBackward[T Float](s convShape, g, y, x, _, w, dx, dw, db []T, scratch func(int) []T) {
	convBackwardGo(s, g, y, x, w, dx, dw, db, scratch)
}

func adamUpdate[T Float](w, g, m, v []T, lr, b1, b2, c1, c2, eps, decay float64) {
	adamUpdateGo(w, g, m, v, lr, b1, b2, c1, c2, eps, decay)
}

// setKernels is a no-op without cgo: there is one variant, the Go loops.
func setKernels(string) int { return 0 }
