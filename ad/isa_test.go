package ad

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// TestUseISA: AVX2 puts ad's kernels and OpenBLAS's on AVX2 (on a CPU that
// has it), native puts back what the process started with, and GEMMs and
// convolutions stay right across the switches.
func TestUseISA(t *testing.T) {
	startKernels, startBLAS := KernelLevel(), BLASName()
	defer UseISA(ISANative)
	if err := UseISA("sse"); err == nil {
		t.Fatal("UseISA(sse) accepted")
	}
	check := func(what string) {
		t.Helper()
		rng := rand.New(rand.NewPCG(3, 4))
		m, n, k := 37, 29, 41
		a, b := make([]float64, m*k), make([]float64, k*n)
		for i := range a {
			a[i] = rng.NormFloat64()
		}
		for i := range b {
			b[i] = rng.NormFloat64()
		}
		want := make([]float64, m*n)
		naiveGemm(false, false, m, n, k, 1, a, b, 0, want)
		got := make([]float32, m*n)
		Gemm(false, false, m, n, k, 1, f32(a), f32(b), 0, got)
		for i := range want {
			if math.Abs(float64(got[i])-want[i]) > 1e-4*(1+math.Abs(want[i])) {
				t.Fatalf("%s: GEMM [%d] = %v, want %v", what, i, got[i], want[i])
			}
		}
	}
	check("at start")
	cpu := CPULevel()
	if cpu == "go" || cpu == "base" {
		if err := UseISA(ISAAVX2); err == nil {
			t.Fatalf("UseISA(avx2) accepted on a CPU (or build) with kernels %q", cpu)
		}
		return
	}
	if err := UseISA(ISAAVX2); err != nil {
		t.Fatal(err)
	}
	if KernelLevel() != "avx2" {
		t.Fatalf("kernels %q after UseISA(avx2)", KernelLevel())
	}
	if b := BLASName(); strings.HasPrefix(b, "openblas") && !strings.Contains(b, "(Zen)") && !strings.Contains(b, "(Haswell)") {
		t.Fatalf("OpenBLAS %q after UseISA(avx2), want its Zen or Haswell kernels", b)
	}
	check("avx2")
	if err := UseISA(ISANative); err != nil {
		t.Fatal(err)
	}
	if KernelLevel() != startKernels || BLASName() != startBLAS {
		t.Fatalf("after UseISA(native): kernels %q, %s; at start %q, %s", KernelLevel(), BLASName(), startKernels, startBLAS)
	}
	if os.Getenv("LENSPEC_KERNELS") == "" && KernelLevel() != cpu {
		t.Fatalf("native kernels %q on a CPU with %q", KernelLevel(), cpu)
	}
	check("native again")
}
