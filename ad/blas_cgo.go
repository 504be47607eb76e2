//go:build cgo && !purego

package ad

/*
#cgo LDFLAGS: -lopenblas -ldl
#define _GNU_SOURCE
#include <cblas.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
void openblas_set_num_threads(int);
char *openblas_get_corename(void);

// ls_openblas_tune moves OpenBLAS 0.3.21, which takes AMD Zen 4/5 CPUs for
// Haswell, to its SkylakeX (AVX-512) kernels when the CPU has the AVX-512
// subsets they use, as later OpenBLAS releases do themselves; it leaves an
// explicit OPENBLAS_CORETYPE, and every other CPU, alone. It must run
// before the first BLAS call. It returns 1 if it switched.
static int ls_openblas_tune(void) {
#if defined(__x86_64__) && defined(__GNUC__)
	// Present in OpenBLAS builds with DYNAMIC_ARCH (Debian's), absent
	// otherwise: looked up, not linked, so any OpenBLAS links.
	void (*dyn_init)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
	void (*dyn_quit)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit");
	if (getenv("OPENBLAS_CORETYPE") || !dyn_init || !dyn_quit) return 0;
	const char *core = openblas_get_corename();
	if (!core || (strcmp(core, "Haswell") != 0 && strcmp(core, "Zen") != 0)) return 0;
	__builtin_cpu_init();
	if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
	      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd"))) return 0;
	setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
	dyn_quit();
	dyn_init();
	unsetenv("OPENBLAS_CORETYPE");
	return 1;
#else
	return 0;
#endif
}
*/
import "C"

import (
	"unsafe"

	"gonum.org/v1/gonum/blas"
)

// openBLAS implements gemmer with OpenBLAS's CBLAS interface, about 8× the
// throughput of gonum's pure-Go kernels on this project's shapes.
type openBLAS struct{}

// backend is fixed at build time; it holds no state.
var backend gemmer = openBLAS{}

// backendName names OpenBLAS and the kernels it runs, chosen once at
// package initialisation (before any GEMM; see ls_openblas_tune).
var backendName = func() string {
	C.ls_openblas_tune()
	return "openblas (" + C.GoString(C.openblas_get_corename()) + ")"
}()

func cTrans(t blas.Transpose) C.enum_CBLAS_TRANSPOSE {
	if t == blas.NoTrans {
		return C.CblasNoTrans
	}
	return C.CblasTrans
}

func (openBLAS) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	C.cblas_sgemm(C.CblasRowMajor, cTrans(tA), cTrans(tB), C.blasint(m), C.blasint(n), C.blasint(k),
		C.float(alpha), (*C.float)(unsafe.Pointer(&a[0])), C.blasint(lda),
		(*C.float)(unsafe.Pointer(&b[0])), C.blasint(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.blasint(ldc))
}

func (openBLAS) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	C.cblas_dgemm(C.CblasRowMajor, cTrans(tA), cTrans(tB), C.blasint(m), C.blasint(n), C.blasint(k),
		C.double(alpha), (*C.double)(unsafe.Pointer(&a[0])), C.blasint(lda),
		(*C.double)(unsafe.Pointer(&b[0])), C.blasint(ldb),
		C.double(beta), (*C.double)(unsafe.Pointer(&c[0])), C.blasint(ldc))
}

// SetBLASThreads sets the number of threads OpenBLAS uses for one GEMM.
// lenspec's GEMMs are small and its callers parallelise across batches
// themselves; OpenBLAS's own threads then only spin against them (measured:
// decoding 1,000 canvases took 120 ms with 2 BLAS threads, 79 ms with 1).
func SetBLASThreads(n int) { C.openblas_set_num_threads(C.int(n)) }
