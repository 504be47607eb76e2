package bench

import (
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/ad"
)

func TestParseLoadAvg(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []float64
	}{
		{"0.35 1.20 2.00 1/234 5678\n", []float64{0.35, 1.2, 2}},
		{"12.5 8 7.25 3/400 1", []float64{12.5, 8, 7.25}},
		{"", nil},
		{"0.3 0.2", nil},
		{"0.3 x 0.1 1/2 3", nil},
		{"-1 0 0 1/2 3", nil},
	} {
		if got := parseLoadAvg(c.in); !slices.Equal(got, c.want) {
			t.Errorf("parseLoadAvg(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestParseCPUInfo(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2\n\n" +
		"processor\t: 1\nmodel name\t: Other\n"
	if got, want := parseCPUInfo(strings.NewReader(info)), "AMD EPYC (family 25, model 17)"; got != want {
		t.Errorf("parseCPUInfo = %q, want %q", got, want)
	}
	if got := parseCPUInfo(strings.NewReader("processor : 0\nmodel name : Some ARM\n")); got != "Some ARM" {
		t.Errorf("without family and model: %q", got)
	}
}

// TestLoaded: a 1-minute load average above one per core, at the start or
// at the end, labels the run, and its load line says so.
func TestLoaded(t *testing.T) {
	for _, c := range []struct {
		before, after []float64
		loaded        bool
	}{
		{[]float64{0.5, 0.4, 0.3}, []float64{1.9, 0.8, 0.4}, false},
		{[]float64{2.1, 0.4, 0.3}, []float64{1.0, 0.8, 0.4}, true},
		{[]float64{0.2, 3, 3}, []float64{2.5, 3, 3}, true},
		{nil, nil, false},
	} {
		m := Machine{Cores: 2, LoadBefore: c.before}
		m.Loaded = overloaded(m.LoadBefore, m.Cores) || overloaded(c.after, m.Cores)
		m.LoadAfter = c.after
		if m.Loaded != c.loaded || strings.Contains(m.LoadLine(), LoadedNote) != c.loaded || (m.LoadedLine() != "") != c.loaded {
			t.Errorf("before %v after %v on 2 cores: loaded %v, line %q", c.before, c.after, m.Loaded, m.LoadLine())
		}
	}
	m := DescribeMachine(ad.ISANative)
	m.Finish()
	if m.Cores < 1 || m.CPU == "" || m.Kernels != ad.KernelLevel() || !strings.Contains(m.Describe(), m.Kernels) {
		t.Errorf("this machine: %+v (%s)", m, m.Describe())
	}
}

// TestPeerEnv: the AVX2 run caps PyTorch's kernels and gives its OpenBLAS
// lenspec's core type; a native run adds no kernel settings.
func TestPeerEnv(t *testing.T) {
	for _, k := range KernelSettings {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	env := peerEnv(ad.ISAAVX2, "openblas (Zen)", false)
	got := settingsIn(env)
	want := []string{"OPENBLAS_CORETYPE=Zen", "ATEN_CPU_CAPABILITY=avx2", "DNNL_MAX_CPU_ISA=AVX2"}
	if !slices.Equal(got, want) {
		t.Errorf("avx2 settings %v, want %v", got, want)
	}
	if !slices.Contains(env, "OMP_NUM_THREADS=1") {
		t.Errorf("avx2 env without one OpenMP thread")
	}
	if got := settingsIn(peerEnv(ad.ISANative, "openblas (Zen)", false)); got != nil {
		t.Errorf("native settings %v, want none", got)
	}
	// lenspec replaced the kernels OpenBLAS chose: PyTorch's get the same.
	if got, want := settingsIn(peerEnv(ad.ISANative, "openblas (SkylakeX)", true)), []string{"OPENBLAS_CORETYPE=SkylakeX"}; !slices.Equal(got, want) {
		t.Errorf("native settings after tuning %v, want %v", got, want)
	}
}

// TestBLASNoteReported: lenspec bench's text says what lenspec did about
// its BLAS's kernels, and says nothing where it kept them.
func TestBLASNoteReported(t *testing.T) {
	for _, note := range []string{"", "OpenBLAS chose its Prescott kernels on a CPU with AVX-512"} {
		var b strings.Builder
		WriteReport(&b, Machine{Cores: 1, BLASNote: note}, nil, func(io.Writer) {})
		if got := strings.Contains(b.String(), "BLAS: "+note+"\n"); got != (note != "") {
			t.Errorf("note %q: report %q", note, b.String())
		}
	}
}
