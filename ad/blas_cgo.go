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

// ls_openblas_use reinitialises OpenBLAS's kernels for core (an
// OPENBLAS_CORETYPE name), or as at load for NULL (its own choice or the
// user's OPENBLAS_CORETYPE), leaving
// the environment as it was. It returns 0 where OpenBLAS has no run-time
// choice of kernels (no DYNAMIC_ARCH). No BLAS call may run meanwhile.
static int ls_openblas_use(const char *core) {
	// Present in OpenBLAS builds with DYNAMIC_ARCH (Debian's), absent
	// otherwise: looked up, not linked, so any OpenBLAS links.
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
	return 1;
}

// ls_cpu_blas_level is the CPU's widest FMA as OpenBLAS's kernels use it:
// 4 with the AVX-512 subsets of its SkylakeX kernels, 3 with AVX2 and FMA,
// else 0.
static int ls_cpu_blas_level(void) {
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd")) return 4;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 3;
#endif
	return 0;
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
	"os"
	"unsafe"

	"gonum.org/v1/gonum/blas"
)

// openBLAS implements gemmer with OpenBLAS's CBLAS interface, about 8× the
// throughput of gonum's pure-Go kernels on this project's shapes.
type openBLAS struct{}

// backend is fixed at build time; it holds no state.
var backend gemmer = openBLAS{}

// blasStart is what lenspec did about OpenBLAS's kernels at package
// initialisation, before any GEMM: kernels below the CPU's widest FMA,
// chosen by an OpenBLAS that does not know the CPU, are replaced by
// checked ones (tuneBLAS). UseISA(ISANative) returns to them.
var blasStart = tuneBLAS(describeBLASCPU(), openblasUse, coreName, checkGemm)

// describeBLASCPU describes this CPU and the kernels OpenBLAS chose.
func describeBLASCPU() blasCPU {
	_, set := os.LookupEnv("OPENBLAS_CORETYPE")
	return blasCPU{AMD: C.ls_cpu_amd() != 0, Level: int(C.ls_cpu_blas_level()), Core: coreName(), UserSet: set}
}

// openblasUse reinitialises OpenBLAS for core ("": as at load).
func openblasUse(core string) bool {
	var cs *C.char
	if core != "" {
		cs = C.CString(core)
		defer C.free(unsafe.Pointer(cs))
	}
	return C.ls_openblas_use(cs) != 0
}

// coreName is the core type whose kernels OpenBLAS runs.
func coreName() string { return C.GoString(C.openblas_get_corename()) }

// backendName names OpenBLAS and the kernels it runs.
func backendName() string { return "openblas (" + coreName() + ")" }

// useBLASISA reinitialises OpenBLAS for isa (see UseISA): its kernels for
// the AVX2 CPUs of the CPU's vendor, or those of the start.
func useBLASISA(isa string) error {
	core := blasStart.Core
	if isa == ISAAVX2 {
		core = avx2Core(C.ls_cpu_amd() != 0)
	}
	if !openblasUse(core) && isa != ISANative {
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
