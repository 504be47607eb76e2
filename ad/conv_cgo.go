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
	"errors"
	"fmt"
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

// KernelLevel names the instruction set of the C kernels in use
// ("avx512", "avx2", "base", or "go" without cgo).
func KernelLevel() string { return levelName(kernelLevel) }

// CPULevel names the best kernels the CPU could run, whatever
// LENSPEC_KERNELS and UseISA chose (the names of KernelLevel).
func CPULevel() string { return levelName(int(C.ls_cpu_level())) }

func levelName(l int) string {
	switch l {
	case 4:
		return "avx512"
	case 3:
		return "avx2"
	}
	return "base"
}

func useISA(isa string) error {
	v := os.Getenv("LENSPEC_KERNELS")
	if isa == ISAAVX2 {
		if C.ls_cpu_level() < 3 {
			return errors.New("ad: the CPU lacks AVX2 and FMA")
		}
		v = "v3"
	}
	if err := useBLASISA(isa); err != nil {
		return fmt.Errorf("ad: %w", err)
	}
	setKernels(v)
	return nil
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
// kernels mask while padding g, once for all three. With dxSet, dx is
// written instead of added to (its contents are undefined: a first
// gradient). saved is what convForward returned.
func convBackward[T Float](s convShape, g, y, x, saved, w, dx []T, dxSet bool, dw, db []T, scratch func(int) []T) {
	cs := cshape(s)
	if saved == nil {
		if dxSet {
			clear(dx)
		}
		convBackwardGo(s, g, y, x, w, dx, dw, db, scratch)
		return
	}
	set := C.int(0)
	if dxSet {
		set = 1
	}
	sc := scratch(int(C.ls_conv_bwd_scratch(&cs)))
	C.ls_conv_bwd(&cs, cptr(g), cptr(y), cptr(saved), cptr(w), cptr(dx), set, cptr(dw), cptr(db), cptr(sc))
}

func adamUpdate[T Float](w, g, m, v []T, lr, b1, b2, c1, c2, eps, decay float64) {
	if !isF32[T]() || len(w) == 0 {
		adamUpdateGo(w, g, m, v, lr, b1, b2, c1, c2, eps, decay)
		return
	}
	C.ls_adam(cptr(w), cptr(g), cptr(m), cptr(v), C.size_t(len(w)),
		C.double(lr), C.double(b1), C.double(b2), C.double(c1), C.double(c2), C.double(eps), C.double(decay))
}

// setKernels switches the C kernels to a variant ("base", "v3", "v4"; ""
// for the best), for tests and UseISA; it returns the level now in use,
// which may be lower than asked when the CPU lacks the instructions.
func setKernels(v string) int {
	kernelLevel = initKernels(v)
	return kernelLevel
}

// The sequence ops' kernels: C for float32, the Go loops otherwise.

func lstmForward[T Float](b, hd int, gates, c, h, cNext, act []T) {
	if !isF32[T]() || b*hd == 0 {
		lstmForwardGo(b, hd, gates, c, h, cNext, act)
		return
	}
	C.ls_lstm_fwd(C.int(b), C.int(hd), cptr(gates), cptr(c), cptr(h), cptr(cNext), cptr(act))
}

func lstmBackward[T Float](b, hd int, act, c, dh, dcNext, dg, dc []T) {
	if !isF32[T]() || b*hd == 0 {
		lstmBackwardGo(b, hd, act, c, dh, dcNext, dg, dc)
		return
	}
	C.ls_lstm_bwd(C.int(b), C.int(hd), cptr(act), cptr(c), cptr(dh), cptr(dcNext), cptr(dg), cptr(dc))
}

func scoresForward[T Float](s, b, a int, keys, q, v, out, th []T) {
	if !isF32[T]() || s*b*a == 0 {
		scoresForwardGo(s, b, a, keys, q, v, out, th)
		return
	}
	C.ls_scores_fwd(C.int(s), C.int(b), C.int(a), cptr(keys), cptr(q), cptr(v), cptr(out), cptr(th))
}

func scoresBackward[T Float](s, b, a int, th, v, g, dk, dq, dv []T) {
	if !isF32[T]() || s*b*a == 0 {
		scoresBackwardGo(s, b, a, th, v, g, dk, dq, dv)
		return
	}
	C.ls_scores_bwd(C.int(s), C.int(b), C.int(a), cptr(th), cptr(v), cptr(g), cptr(dk), cptr(dq), cptr(dv))
}

func attendForward[T Float](s, b, d int, w, mem, out []T) {
	if !isF32[T]() || s*b*d == 0 {
		attendForwardGo(s, b, d, w, mem, out)
		return
	}
	C.ls_attend_fwd(C.int(s), C.int(b), C.int(d), cptr(w), cptr(mem), cptr(out))
}

func attendBackward[T Float](s, b, d int, w, mem, g, dw, dm []T) {
	if !isF32[T]() || s*b*d == 0 {
		attendBackwardGo(s, b, d, w, mem, g, dw, dm)
		return
	}
	C.ls_attend_bwd(C.int(s), C.int(b), C.int(d), cptr(w), cptr(mem), cptr(g), cptr(dw), cptr(dm))
}

func cints(v []int) []C.int {
	out := make([]C.int, len(v))
	for i, x := range v {
		out[i] = C.int(x)
	}
	return out
}

func logSumExpRows[T Float](rows, cols int, x []T, targets []int, lse []float64) {
	if !isF32[T]() || rows*cols == 0 {
		logSumExpRowsGo(rows, cols, x, targets, lse)
		return
	}
	t := cints(targets)
	C.ls_lse_rows(C.int(rows), C.int(cols), cptr(x), &t[0], (*C.double)(unsafe.Pointer(&lse[0])))
}

func crossEntropyBackward[T Float](rows, cols int, x []T, targets []int, lse, scale []float64, gx []T) {
	if !isF32[T]() || rows*cols == 0 {
		crossEntropyBackwardGo(rows, cols, x, targets, lse, scale, gx)
		return
	}
	t := cints(targets)
	C.ls_xent_bwd(C.int(rows), C.int(cols), cptr(x), &t[0], (*C.double)(unsafe.Pointer(&lse[0])),
		(*C.double)(unsafe.Pointer(&scale[0])), cptr(gx))
}
