//go:build cgo && !purego

package ad

/*
#cgo CFLAGS: -O3 -std=gnu11 -Wno-psabi
#cgo LDFLAGS: -lm
#include <stdlib.h>
#include "kernels.h"
*/
import "C"

import (
	"os"
	"unsafe"
)

// kernelLevel is the instruction set the C kernels run with: 4 for
// AVX-512, 3 for AVX2 + FMA, 0 for the baseline. LENSPEC_KERNELS=base|v3|v4
// caps it (tests run every variant the machine has).
var kernelLevel = initKernels(os.Getenv("LENSPEC_KERNELS"))

func initKernels(override string) int {
	if override == "" {
		return int(C.ls_kernels_init(nil))
	}
	cs := C.CString(override)
	defer C.free(unsafe.Pointer(cs))
	return int(C.ls_kernels_init(cs))
}

// KernelLevel names the convolution kernels in use ("avx512", "avx2",
// "base", or "go" without cgo).
func KernelLevel() string {
	switch kernelLevel {
	case 4:
		return "avx512"
	case 3:
		return "avx2"
	}
	return "base"
}

func cshape(s convShape) C.ls_conv {
	return C.ls_conv{b: C.int(s.b), c: C.int(s.c), h: C.int(s.h), w: C.int(s.w), oc: C.int(s.oc),
		k: C.int(s.g.Kernel), s: C.int(s.g.Stride), p: C.int(s.g.Pad), oh: C.int(s.oh), ow: C.int(s.ow)}
}

// cptr returns a float32 slice's C pointer, or nil when T is float64 (the
// Go loops serve float64) or the slice is empty.
func cptr[T Float](v []T) *C.float {
	if len(v) == 0 {
		return nil
	}
	if p, ok := any(v).([]float32); ok {
		return (*C.float)(unsafe.Pointer(&p[0]))
	}
	return nil
}

func isF32[T Float]() bool { _, ok := any(T(0)).(float32); return ok }

// The kernels take scratch space (padded copies) from scratch, which the
// op serves from its tape's arena.

// convForward computes y and returns what convBackward needs besides x:
// the C kernels' padded copy of x (nil for the Go loops), so the backward
// pass does not pad x a second time.
func convForward[T Float](s convShape, x, w, bias, y []T, relu bool, scratch func(int) []T) (saved []T) {
	cs := cshape(s)
	if !isF32[T]() || C.ls_conv_fast(&cs) == 0 {
		convForwardGo(s, x, w, bias, y, relu)
		return nil
	}
	r := C.int(0)
	if relu {
		r = 1
	}
	xp := scratch(int(C.ls_conv_pad_size(&cs)))
	sc := scratch(int(C.ls_conv_fwd_scratch(&cs)))
	C.ls_conv_fwd(&cs, cptr(x), cptr(w), cptr(bias), cptr(y), r, cptr(xp), cptr(sc))
	return xp
}

// convBackward adds the gradients whose slices are set (dx, dw, db) for
// the output gradient g, masked by y, a fused ReLU's output, if set: the C
// kernels mask while padding g, once for all three. saved is what
// convForward returned.
func convBackward[T Float](s convShape, g, y, x, saved, w, dx, dw, db []T, scratch func(int) []T) {
	cs := cshape(s)
	if saved == nil {
		convBackwardGo(s, g, y, x, w, dx, dw, db, scratch)
		return
	}
	sc := scratch(int(C.ls_conv_bwd_scratch(&cs)))
	C.ls_conv_bwd(&cs, cptr(g), cptr(y), cptr(saved), cptr(w), cptr(dx), cptr(dw), cptr(db), cptr(sc))
}

func adamUpdate[T Float](w, g, m, v []T, lr, b1, b2, c1, c2, eps, decay float64) {
	if !isF32[T]() || len(w) == 0 {
		adamUpdateGo(w, g, m, v, lr, b1, b2, c1, c2, eps, decay)
		return
	}
	C.ls_adam(cptr(w), cptr(g), cptr(m), cptr(v), C.size_t(len(w)),
		C.double(lr), C.double(b1), C.double(b2), C.double(c1), C.double(c2), C.double(eps), C.double(decay))
}

// setKernels switches the C kernels to a variant ("base", "v3", "v4"), for
// tests; it returns the level now in use, which may be lower than asked
// when the CPU lacks the instructions.
func setKernels(v string) int {
	kernelLevel = initKernels(v)
	return kernelLevel
}
