package ad

import "fmt"

// Instruction sets UseISA takes.
const (
	// ISANative runs the best kernels the CPU has, as chosen at start
	// (after LENSPEC_KERNELS and OPENBLAS_CORETYPE, if set).
	ISANative = "native"
	// ISAAVX2 runs AVX2 + FMA kernels, in ad and in OpenBLAS (its kernels
	// for the AVX2 CPUs of the CPU's vendor: Zen on AMD, Haswell
	// otherwise), as a machine without AVX-512 does.
	ISAAVX2 = "avx2"
)

// UseISA sets the instruction set of ad's C kernels and of OpenBLAS's for
// the rest of the process. Benchmarks use ISAAVX2 to measure, on a CPU with
// AVX-512, what a CPU with only AVX2 runs. It changes process-wide state:
// call it before any work, never while an operation of this package runs.
// It fails for an unknown name, a CPU without AVX2 and FMA, or a build
// without the C kernels (purego).
func UseISA(isa string) error {
	switch isa {
	case ISANative, ISAAVX2:
	default:
		return fmt.Errorf("ad: instruction set %q: want %q or %q", isa, ISANative, ISAAVX2)
	}
	return useISA(isa)
}
