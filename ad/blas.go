package ad

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
)

// gemmer is the slice of gonum's blas.Float32Level3/Float64Level3 interfaces
// lenspec uses. Two implementations exist, chosen at build time: OpenBLAS via
// cgo (blas_cgo.go) and gonum's pure-Go BLAS (blas_purego.go).
type gemmer interface {
	Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int)
}

// Gemm computes C = alpha*op(A)*op(B) + beta*C for row-major matrices, where
// op(X) is X or Xᵀ; op(A) is m×k, op(B) is k×n and C is m×n with leading
// dimension n. It is exported for kernels outside this package (the
// verifier's bound propagation) that need the same fast path.
//
// It panics, as gonum's BLAS does, if a slice is shorter than its shape
// needs: the cgo backend would otherwise read and write past the slices
// and corrupt the heap silently.
func Gemm[T Float](transA, transB bool, m, n, k int, alpha T, a []T, b []T, beta T, c []T) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("ad.Gemm: negative size %d×%d×%d", m, n, k))
	}
	if len(a) < m*k || len(b) < k*n || len(c) < m*n {
		panic(fmt.Sprintf("ad.Gemm: %d×%d×%d needs A ≥ %d, B ≥ %d, C ≥ %d values; got %d, %d, %d", m, n, k, m*k, k*n, m*n, len(a), len(b), len(c)))
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := range c[:m*n] {
			if beta == 0 { // BLAS: with beta 0, C is not read
				c[i] = 0
			} else {
				c[i] *= beta
			}
		}
		return
	}
	tA, lda := blas.NoTrans, k
	if transA {
		tA, lda = blas.Trans, m
	}
	tB, ldb := blas.NoTrans, n
	if transB {
		tB, ldb = blas.Trans, k
	}
	switch a := any(a).(type) {
	case []float32:
		backend.Sgemm(tA, tB, m, n, k, float32(alpha), a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), n)
	case []float64:
		backend.Dgemm(tA, tB, m, n, k, float64(alpha), a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), n)
	}
}

// BLASName names the GEMM backend compiled in and, for OpenBLAS, the
// kernels it runs: "openblas (Zen)", "gonum".
func BLASName() string { return backendName() }

// BLASTuning says what lenspec did at start about its BLAS's kernels: the
// OpenBLAS core type it moved to from kernels below the CPU's widest FMA
// ("" if it kept the BLAS's choice), and a one-line note for the user (""
// if there is nothing to say).
func BLASTuning() (core, note string) { return blasStart.Core, blasStart.Note }
