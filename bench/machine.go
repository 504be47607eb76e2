package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/lenspec/lenspec/ad"
)

// LoadedNote labels a run whose load average exceeded one per core at its
// start or its end: its ratios compare two programs that shared the cores
// with others, and are not the machine's.
const LoadedNote = "loaded: ratios not representative"

// KernelSettings are the environment variables that choose the kernels of
// lenspec (LENSPEC_KERNELS, first), of OpenBLAS (OPENBLAS_CORETYPE) and of
// PyTorch (ATEN_CPU_CAPABILITY, DNNL_MAX_CPU_ISA): a run records those set.
var KernelSettings = []string{"LENSPEC_KERNELS", "OPENBLAS_CORETYPE", "ATEN_CPU_CAPABILITY", "DNNL_MAX_CPU_ISA"}

// Machine is what a benchmark ran on and how busy the machine was: what a
// reader needs to know before comparing its figures with others.
type Machine struct {
	// CPU is the processor's model name, family and model; CPUISA the best
	// instruction set lenspec's kernels could use on it (ad.CPULevel).
	CPU    string `json:"cpu"`
	CPUISA string `json:"cpu_isa"`
	Cores  int    `json:"cores"`
	// ISA is the instruction set the run asked for (ad.ISANative or
	// ad.ISAAVX2); Kernels the one lenspec's kernels ran (ad.KernelLevel),
	// BLAS lenspec's GEMM and its OpenBLAS core type, BLASThreads its
	// threads per GEMM.
	ISA         string `json:"isa"`
	Kernels     string `json:"kernels"`
	BLAS        string `json:"blas"`
	BLASThreads int    `json:"blas_threads"`
	// BLASNote says that lenspec replaced (or could not replace) kernels
	// its BLAS chose below the CPU's widest FMA (ad.BLASTuning); BLASTuned
	// is the OpenBLAS core type it moved to, which the peer's OpenBLAS
	// gets too.
	BLASNote  string `json:"blas_note,omitempty"`
	BLASTuned string `json:"blas_tuned,omitempty"`
	// Settings are the KernelSettings set in the environment, NAME=value.
	Settings []string `json:"settings,omitempty"`
	// LoadBefore and LoadAfter are the 1, 5 and 15-minute load averages
	// at the start and the end of the run (empty where the system does not
	// say); Loaded is set when the 1-minute one exceeded Cores at either.
	LoadBefore []float64 `json:"load_before"`
	LoadAfter  []float64 `json:"load_after"`
	Loaded     bool      `json:"loaded"`
	// Start is when the run started (RFC 3339); it names the run in records.
	Start string `json:"time"`
}

// DescribeMachine describes this machine and the kernels in use (after
// ad.UseISA(isa)), and reads the load average the run starts at.
func DescribeMachine(isa string) Machine {
	m := Machine{
		CPU: cpuModel(), CPUISA: ad.CPULevel(), Cores: runtime.NumCPU(),
		ISA: isa, Kernels: ad.KernelLevel(), BLAS: ad.BLASName(), BLASThreads: ad.BLASThreads(),
		LoadBefore: loadAverage(), Start: time.Now().UTC().Format(time.RFC3339Nano),
	}
	m.BLASTuned, m.BLASNote = ad.BLASTuning()
	for _, k := range KernelSettings {
		if v, ok := os.LookupEnv(k); ok {
			m.Settings = append(m.Settings, k+"="+v)
		}
	}
	return m
}

// Finish reads the load average at the end of the run and decides Loaded.
func (m *Machine) Finish() {
	m.LoadAfter = loadAverage()
	m.Loaded = overloaded(m.LoadBefore, m.Cores) || overloaded(m.LoadAfter, m.Cores)
}

// overloaded: a 1-minute load average above one per core.
func overloaded(load []float64, cores int) bool { return len(load) > 0 && load[0] > float64(cores) }

// Describe is m in a line of text: the CPU, the kernels of lenspec and of
// its BLAS, and the settings that chose them.
func (m Machine) Describe() string {
	s := fmt.Sprintf("%s, %d cores (best kernels %s); lenspec kernels %s, %s, %d BLAS thread(s)", m.CPU, m.Cores, m.CPUISA, m.Kernels, m.BLAS, m.BLASThreads)
	if m.ISA != "" && m.ISA != ad.ISANative {
		s += "; --isa " + m.ISA
	}
	if len(m.Settings) > 0 {
		s += "; " + strings.Join(m.Settings, " ")
	}
	return s
}

// LoadLine says the load averages before and after, then LoadedNote where
// they were too high.
func (m Machine) LoadLine() string {
	s := fmt.Sprintf("load average %s before, %s after (%d cores)", loadText(m.LoadBefore), loadText(m.LoadAfter), m.Cores)
	if m.Loaded {
		s += "; " + LoadedNote
	}
	return s
}

// LoadedLine is the line that ends a loaded run's text, LoadedNote first:
// "" for a quiet run.
func (m Machine) LoadedLine() string {
	if !m.Loaded {
		return ""
	}
	return fmt.Sprintf("%s (load average %s before, %s after, on %d cores)", LoadedNote, loadText(m.LoadBefore), loadText(m.LoadAfter), m.Cores)
}

func loadText(l []float64) string {
	if len(l) == 0 {
		return "unknown"
	}
	parts := make([]string, len(l))
	for i, v := range l {
		parts[i] = strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strings.Join(parts, "/")
}

// loadAverage reads /proc/loadavg: nil where it cannot.
func loadAverage() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	return parseLoadAvg(string(b))
}

// parseLoadAvg takes the first three fields of /proc/loadavg's text.
func parseLoadAvg(s string) []float64 {
	f := strings.Fields(s)
	if len(f) < 3 {
		return nil
	}
	out := make([]float64, 3)
	for i := range out {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || v < 0 {
			return nil
		}
		out[i] = v
	}
	return out
}

// cpuModel names the CPU from /proc/cpuinfo: "AMD EPYC (family 25, model
// 17)", the architecture where the file says nothing.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	return parseCPUInfo(f)
}

// parseCPUInfo reads the first processor's model name, family and model.
func parseCPUInfo(f interface{ Read([]byte) (int, error) }) string {
	fields := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" && len(fields) > 0 {
			break // the end of the first processor's block
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if _, seen := fields[k]; !seen {
			fields[k] = strings.TrimSpace(v)
		}
	}
	name := fields["model name"]
	if name == "" {
		name = runtime.GOARCH
	}
	if fam, mod := fields["cpu family"], fields["model"]; fam != "" && mod != "" {
		name += fmt.Sprintf(" (family %s, model %s)", fam, mod)
	}
	return name
}
