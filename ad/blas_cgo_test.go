//go:build cgo && !purego

package ad

import (
	"strings"
	"testing"
)

// TestTuneBLASFromPrescott reproduces, on this machine, an OpenBLAS that
// does not know the CPU: with its Prescott kernels loaded as its own
// choice, lenspec's start-up tuning moves it, in process, to the kernels of
// the CPU's widest FMA, which pass the check against the naive GEMM.
func TestTuneBLASFromPrescott(t *testing.T) {
	defer UseISA(ISANative)
	if !openblasUse("Prescott") {
		t.Fatal("this OpenBLAS cannot change its kernels (no DYNAMIC_ARCH)")
	}
	d := describeBLASCPU()
	if !strings.EqualFold(d.Core, "Prescott") {
		t.Fatalf("OpenBLAS runs %s after asking for Prescott", d.Core)
	}
	d.UserSet = false // as if OpenBLAS had chosen Prescott itself
	// The kernels of the CPU's widest FMA; "" where Prescott's fit the CPU.
	want := map[int]string{levelAVX512: "SkylakeX", levelAVX2: avx2Core(d.AMD)}[d.Level]
	got := tuneBLAS(d, openblasUse, coreName, checkGemm)
	if got.Core != want {
		t.Fatalf("tuned to %q (note %q), want %q", got.Core, got.Note, want)
	}
	if want == "" {
		return
	}
	if !strings.EqualFold(coreName(), want) || !strings.Contains(got.Note, "Prescott") {
		t.Fatalf("OpenBLAS runs %s, note %q; want %s", coreName(), got.Note, want)
	}
	if err := checkGemm(); err != nil {
		t.Fatal(err)
	}
}
