package ad

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// CPU levels, as kernelLevel counts them: the widest vector FMA a CPU (or a
// BLAS's kernels) uses.
const (
	levelBase   = 0 // SSE, or AVX without FMA
	levelAVX2   = 3 // AVX2 and FMA
	levelAVX512 = 4 // AVX-512 F, VL, BW, DQ and CD (OpenBLAS's SkylakeX kernels)
)

// blasCPU is what decides whether the BLAS's kernels fit the CPU: the CPU's
// vendor and widest FMA, and the core type whose kernels the BLAS chose.
type blasCPU struct {
	AMD   bool
	Level int // levelAVX512, levelAVX2 or levelBase
	// Core is OpenBLAS's core name (openblas_get_corename); UserSet says
	// the user chose it with OPENBLAS_CORETYPE.
	Core    string
	UserSet bool
}

// coreLevels are the widest FMA of OpenBLAS 0.3's x86 kernels per core
// type (lower case). Core types absent here (other architectures, later
// releases) are left alone.
var coreLevels = map[string]int{
	"katmai": levelBase, "coppermine": levelBase, "northwood": levelBase, "prescott": levelBase, "banias": levelBase,
	"atom": levelBase, "core2": levelBase, "penryn": levelBase, "dunnington": levelBase, "nehalem": levelBase,
	"athlon": levelBase, "opteron": levelBase, "opteron_sse3": levelBase, "barcelona": levelBase, "nano": levelBase,
	"bobcat": levelBase, "sandybridge": levelBase, "bulldozer": levelBase, "piledriver": levelBase, "steamroller": levelBase,
	"haswell": levelAVX2, "excavator": levelAVX2, "zen": levelAVX2,
	"skylakex": levelAVX512, "cooperlake": levelAVX512, "sapphirerapids": levelAVX512,
}

// avx2Core is OpenBLAS's core type for the AVX2 CPUs of the CPU's vendor.
func avx2Core(amd bool) string {
	if amd {
		return "Zen"
	}
	return "Haswell"
}

// betterCore returns the core type whose kernels use the CPU's widest FMA
// when the BLAS chose kernels below it on its own (an OpenBLAS that does
// not know the CPU's model: 0.3.21 runs Prescott's SSE kernels on Intel
// family 6 model 207, Haswell's on AMD Zen 4), or "" to keep its choice:
// a core type the user set, one unknown here, or one as wide as the CPU.
func betterCore(d blasCPU) string {
	if d.UserSet {
		return "" // some machines set it to dodge a release's wrong kernels
	}
	have, known := coreLevels[strings.ToLower(d.Core)]
	if !known || have >= d.Level {
		return ""
	}
	switch d.Level {
	case levelAVX512:
		return "SkylakeX"
	case levelAVX2:
		return avx2Core(d.AMD)
	}
	return ""
}

// isaText names a CPU level for people.
func isaText(level int) string {
	switch level {
	case levelAVX512:
		return "AVX-512"
	case levelAVX2:
		return "AVX2 and FMA"
	}
	return "neither AVX2 nor AVX-512"
}

// blasTuning is what lenspec did at start about the BLAS's kernels.
type blasTuning struct {
	Core string // the core type lenspec moved OpenBLAS to ("" if none)
	Note string // one line for stderr and lenspec bench ("" if nothing to say)
}

// tuneBLAS moves the BLAS to betterCore(d)'s kernels and keeps them if
// they compute GEMMs as the naive reference does; use(core) reinitialises
// the BLAS for core ("": its own choice) and reports false if it cannot,
// corename reads the core in use, check compares GEMMs with the reference.
func tuneBLAS(d blasCPU, use func(core string) bool, corename func() string, check func() error) blasTuning {
	to := betterCore(d)
	if to == "" {
		return blasTuning{}
	}
	head := fmt.Sprintf("OpenBLAS chose its %s kernels on a CPU with %s", d.Core, isaText(d.Level))
	tail := "; set OPENBLAS_CORETYPE to choose"
	if !use(to) {
		return blasTuning{Note: head + "; this OpenBLAS cannot change them at run time (built without DYNAMIC_ARCH), so GEMMs run slow" + tail}
	}
	var why string
	if got := corename(); !strings.EqualFold(got, to) {
		why = fmt.Sprintf("it has no %s kernels (it gave %s)", to, got)
	} else if err := check(); err != nil {
		why = fmt.Sprintf("its %s kernels failed the check against the naive GEMM (%v)", to, err)
	}
	if why != "" {
		use("")
		return blasTuning{Note: head + "; " + why + ", so lenspec keeps them" + tail}
	}
	return blasTuning{Core: to, Note: head + "; lenspec runs its " + to + " kernels instead (checked against the naive GEMM)" + tail}
}

// checkGemm compares the backend's float32 and float64 GEMMs, every
// transposition, with naiveGemm on shapes past the kernels' tiles.
func checkGemm() error {
	rng := rand.New(rand.NewPCG(58, 2))
	m, n, k := 67, 45, 129
	a, b, c := make([]float64, m*k), make([]float64, k*n), make([]float64, m*n)
	for _, v := range [][]float64{a, b, c} {
		for i := range v {
			v[i] = float64(float32(rng.NormFloat64()))
		}
	}
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			want := append([]float64(nil), c...)
			naiveGemm(tA, tB, m, n, k, 0.5, a, b, 0.25, want)
			got64 := append([]float64(nil), c...)
			Gemm(tA, tB, m, n, k, 0.5, a, b, 0.25, got64)
			got32 := f32(c)
			Gemm(tA, tB, m, n, k, 0.5, f32(a), f32(b), 0.25, got32)
			for i, w := range want {
				if e := math.Abs(got64[i] - w); e > 1e-9*(1+math.Abs(w)) {
					return fmt.Errorf("dgemm %d×%d×%d (transposed %v, %v): [%d] = %v, want %v", m, n, k, tA, tB, i, got64[i], w)
				}
				if e := math.Abs(float64(got32[i]) - w); e > 1e-4*(1+math.Abs(w)) || math.IsNaN(e) {
					return fmt.Errorf("sgemm %d×%d×%d (transposed %v, %v): [%d] = %v, want %v", m, n, k, tA, tB, i, got32[i], w)
				}
			}
		}
	}
	return nil
}

// f32 converts a float64 slice to float32.
func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// naiveGemm is the loop reference that guards the BLAS path.
func naiveGemm(tA, tB bool, m, n, k int, alpha float64, a, b []float64, beta float64, c []float64) {
	at := func(i, p int) float64 {
		if tA {
			return a[p*m+i]
		}
		return a[i*k+p]
	}
	bt := func(p, j int) float64 {
		if tB {
			return b[j*k+p]
		}
		return b[p*n+j]
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				s += at(i, p) * bt(p, j)
			}
			c[i*n+j] = alpha*s + beta*c[i*n+j]
		}
	}
}
