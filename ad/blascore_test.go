package ad

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestBetterCore pins the detection on faked CPU/BLAS descriptions: kernels
// below the CPU's widest FMA, chosen by the BLAS itself, are replaced by the
// widest the CPU runs; a user's choice, an unknown core and kernels as wide
// as the CPU are kept.
func TestBetterCore(t *testing.T) {
	for _, c := range []struct {
		name string
		d    blasCPU
		want string
	}{
		{"Intel AVX-512 (family 6 model 207) on Prescott", blasCPU{Level: levelAVX512, Core: "Prescott"}, "SkylakeX"},
		{"upper-case core name", blasCPU{Level: levelAVX512, Core: "PRESCOTT"}, "SkylakeX"},
		{"AMD Zen 4 on Haswell", blasCPU{AMD: true, Level: levelAVX512, Core: "Haswell"}, "SkylakeX"},
		{"AMD Zen 4 on Zen", blasCPU{AMD: true, Level: levelAVX512, Core: "Zen"}, "SkylakeX"},
		{"AVX-512 on Sandybridge (AVX without FMA)", blasCPU{Level: levelAVX512, Core: "Sandybridge"}, "SkylakeX"},
		{"Intel AVX2 on Nehalem", blasCPU{Level: levelAVX2, Core: "Nehalem"}, "Haswell"},
		{"AMD AVX2 on Opteron", blasCPU{AMD: true, Level: levelAVX2, Core: "Opteron"}, "Zen"},
		{"AVX-512 on Cooperlake", blasCPU{AMD: true, Level: levelAVX512, Core: "Cooperlake"}, ""},
		{"AVX-512 on SkylakeX", blasCPU{Level: levelAVX512, Core: "SkylakeX"}, ""},
		{"AVX2 on Haswell", blasCPU{Level: levelAVX2, Core: "Haswell"}, ""},
		{"AVX2 on Zen", blasCPU{AMD: true, Level: levelAVX2, Core: "Zen"}, ""},
		{"no AVX2 on Prescott", blasCPU{Level: levelBase, Core: "Prescott"}, ""},
		{"user's OPENBLAS_CORETYPE", blasCPU{Level: levelAVX512, Core: "Prescott", UserSet: true}, ""},
		{"unknown core", blasCPU{Level: levelAVX512, Core: "ARMV8"}, ""},
	} {
		if got := betterCore(c.d); got != c.want {
			t.Errorf("%s: betterCore = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestTuneBLAS: the better kernels are kept only if the BLAS has them and
// they pass the check against the naive GEMM; otherwise the BLAS's own
// choice is restored. Each case says so in its note.
func TestTuneBLAS(t *testing.T) {
	prescott := blasCPU{Level: levelAVX512, Core: "Prescott"}
	for _, c := range []struct {
		name     string
		d        blasCPU
		canUse   bool
		gives    string
		check    error
		wantCore string
		wantUses []string
		wantNote []string
	}{
		{"switched", prescott, true, "SkylakeX", nil, "SkylakeX", []string{"SkylakeX"},
			[]string{"Prescott kernels on a CPU with AVX-512", "runs its SkylakeX kernels instead (checked against the naive GEMM)", "OPENBLAS_CORETYPE"}},
		{"check fails", prescott, true, "SkylakeX", errors.New("sgemm wrong"), "", []string{"SkylakeX", ""},
			[]string{"failed the check", "sgemm wrong", "keeps them"}},
		{"no such kernels", prescott, true, "Prescott", nil, "", []string{"SkylakeX", ""}, []string{"no SkylakeX kernels"}},
		{"no DYNAMIC_ARCH", prescott, false, "", nil, "", []string{"SkylakeX"}, []string{"cannot change them"}},
		{"good kernels", blasCPU{Level: levelAVX512, Core: "Cooperlake"}, true, "", nil, "", nil, []string{}},
	} {
		var uses []string
		use := func(core string) bool { uses = append(uses, core); return c.canUse }
		checked := false
		check := func() error { checked = true; return c.check }
		got := tuneBLAS(c.d, use, func() string { return c.gives }, check)
		if got.Core != c.wantCore || !slices.Equal(uses, c.wantUses) {
			t.Errorf("%s: core %q after uses %q, want %q after %q", c.name, got.Core, uses, c.wantCore, c.wantUses)
		}
		if got.Core != "" && !checked {
			t.Errorf("%s: kept %s unchecked", c.name, got.Core)
		}
		if len(c.wantNote) == 0 && got.Note != "" {
			t.Errorf("%s: note %q, want none", c.name, got.Note)
		}
		for _, w := range c.wantNote {
			if !strings.Contains(got.Note, w) {
				t.Errorf("%s: note %q lacks %q", c.name, got.Note, w)
			}
		}
	}
}

// TestCheckGemm: the backend in use passes the check it must pass before
// lenspec keeps kernels it chose.
func TestCheckGemm(t *testing.T) {
	if err := checkGemm(); err != nil {
		t.Fatal(err)
	}
}
