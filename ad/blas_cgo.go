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
int openblas_get_num_threads(void);
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

// ls_openblas_use reinitialises OpenBLAS's kernels for core (an
// OPENBLAS_CORETYPE name), or as at start for NULL (its own choice, then
// ls_openblas_tune's), leaving the environment as it was. It returns 0
// where OpenBLAS has no run-time choice of kernels (no DYNAMIC_ARCH).
static int ls_openblas_use(const char *core) {
	void (*dyn_init)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
	void (*dyn_quit)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit");
	if (!dyn_init || !dyn_quit) return 0;
	const char *env = getenv("OPENBLAS_CORETYPE");
	char *prev = env ? strdup(env) : NULL;
	if (core) setenv("OPENBLAS_CORETYPE", core, 1);
	dyn_quit();
	dyn_init();
	if (prev) setenv("OPENBLAS_CORETYPE", prev, 1);
	else unsetenv("OPENBLAS_CORETYPE");
	free(prev);
	if (!core) ls_openblas_tune();
	return 1;
}

// ls_cpu_amd reports whether the CPU is AMD's.
static int ls_cpu_amd(void) {
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	return __builtin_cpu_is("amd");
#else
	return 0;
#endif
}
*/
import "C"

import (
	"errors"
	"unsafe"

	"gonum.org/v1/gonum/blas"
)

// openBLAS implements gemmer with OpenBLAS's CBLAS interface, about 8× the
// throughput of gonum's pure-Go kernels on this project's shapes.
type openBLAS struct{}

// backend is fixed at build time; it holds no state.
var backend gemmer = openBLAS{}

// OpenBLAS's kernels are chosen at package initialisation, before any
// GEMM (see ls_openblas_tune), and again by UseISA.
var _ = C.ls_openblas_tune()

// backendName names OpenBLAS and the kernels it runs.
func backendName() string { return "openblas (" + C.GoString(C.openblas_get_corename()) + ")" }

// useBLASISA reinitialises OpenBLAS for isa (see UseISA): its kernels for
// the AVX2 CPUs of the CPU's vendor, or its own choice.
func useBLASISA(isa string) error {
	var core *C.char
	if isa == ISAAVX2 {
		name := "Haswell"
		if C.ls_cpu_amd() != 0 {
			name = "Zen"
		}
		core = C.CString(name)
		defer C.free(unsafe.Pointer(core))
	}
	if C.ls_openblas_use(core) == 0 && isa != ISANative {
		return errors.New("this OpenBLAS has one set of kernels (built without DYNAMIC_ARCH)")
	}
	return nil
}

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

// BLASThreads is the number of threads OpenBLAS uses for one GEMM.
func BLASThreads() int { return int(C.openblas_get_num_threads()) }
