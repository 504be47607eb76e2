package bench

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestWritePeerEndsWithRatios: the peer report's text ends with exactly
// one "ratio <operation> <x>" line per operation, in order, x a plain
// decimal that reads back as the ratio, whatever the ratio's size; the
// table says how many rounds each took and why they stopped; the text says
// what each side ran on and the load, and has one JSON record per
// operation; a loaded run ends with LoadedNote after the ratios.
func TestWritePeerEndsWithRatios(t *testing.T) {
	m := Machine{CPU: "AMD EPYC (family 25, model 17)", CPUISA: "avx512", Cores: 2, ISA: "avx2", Kernels: "avx2", BLAS: "openblas (Zen)",
		BLASThreads: 1, LoadBefore: []float64{0.4, 0.3, 0.2}, LoadAfter: []float64{1.3, 0.6, 0.3}, Start: "2026-11-27T10:00:00Z"}
	rep := &PeerReport{Machine: m, PyTorch: PyTorch{Version: "1.13", BLAS: "openblas (Zen)", CPUCapability: "AVX2", OneDNN: "avx2", Threads: 1},
		Compared: 1000, SetupSeconds: 1.5, Ops: []PeerOp{
			{Name: "decode", Lenspec1: 0.02, LenspecN: 0.015, Torch: 0.025, Ratio: 0.8123, RatioN: 0.6, RatioLo: 0.79, RatioHi: 0.83, Rounds: 5, Runs: 90, Stop: StopConverged},
			{Name: "train-step", Lenspec1: 0.004, Torch: 0.006, Ratio: 12.5, Rounds: 3, Runs: 3, Stop: StopCap},
			{Name: "pgd", Lenspec1: 1e-5, Torch: 1, Ratio: 1e-5, Rounds: 15, Runs: 15, Stop: StopBudget},
		}}
	var b bytes.Buffer
	rep.WriteText(&b, "models/x")
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) < len(rep.Ops) {
		t.Fatalf("output %q", b.String())
	}
	re := regexp.MustCompile(`^ratio (\S+) ([0-9]+\.[0-9]+)$`)
	tail := lines[len(lines)-len(rep.Ops):]
	for i, o := range rep.Ops {
		m := re.FindStringSubmatch(tail[i])
		if m == nil || m[1] != o.Name {
			t.Fatalf("line %q: want ratio %s <decimal>", tail[i], o.Name)
		}
		if x, _ := strconv.ParseFloat(m[2], 64); x < o.Ratio-0.0005 || x > o.Ratio+0.0005 {
			t.Fatalf("line %q: ratio %v", tail[i], o.Ratio)
		}
	}
	if n := strings.Count(b.String(), "\nratio "); n != len(rep.Ops) {
		t.Fatalf("%d ratio lines, want %d:\n%s", n, len(rep.Ops), b.String())
	}
	for _, want := range []string{"0.790-0.830", StopConverged, StopCap, StopBudget,
		"AMD EPYC (family 25, model 17)", "lenspec kernels avx2, openblas (Zen)", "ATen AVX2, oneDNN avx2", "load average 0.40/0.30/0.20 before, 1.30/0.60/0.30 after"} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("the text lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), LoadedNote) {
		t.Fatalf("a quiet run labelled loaded:\n%s", b.String())
	}
	var recs []map[string]any
	for _, l := range lines {
		if strings.HasPrefix(l, "{") {
			var r map[string]any
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("record line %q: %v", l, err)
			}
			recs = append(recs, r)
		}
	}
	if len(recs) != len(rep.Ops) {
		t.Fatalf("%d record lines for %d operations:\n%s", len(recs), len(rep.Ops), b.String())
	}
	for i, r := range recs {
		if r["op"] != rep.Ops[i].Name || r["kernels"] != "avx2" || r["cpu"] != m.CPU || r["model"] != "models/x" {
			t.Fatalf("record %d: %v", i, r)
		}
	}

	rep.Machine.LoadAfter, rep.Machine.Loaded = []float64{2.6, 1, 0.5}, true
	b.Reset()
	rep.WriteText(&b, "models/x")
	lines = strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, LoadedNote) || !strings.HasPrefix(lines[len(lines)-2], "ratio pgd ") {
		t.Fatalf("a loaded run's text ends %q, %q", lines[len(lines)-2], last)
	}
	if !strings.HasPrefix(lines[2], "load average ") || !strings.HasSuffix(lines[2], LoadedNote) {
		t.Fatalf("a loaded run's head: %q", lines[:3])
	}
}

// TestPeakReported: the reference GEMM's line gives its share of the FMA
// peak where one was measured, and stays as it was where none was.
func TestPeakReported(t *testing.T) {
	for _, c := range []struct {
		peak float64
		want string
	}{
		{120, "reference sgemm 512x512x512: 90.0 GFLOP/s, 75% of one core's FMA peak (avx512: 120.0 GFLOP/s)\n"},
		{0, "reference sgemm 512x512x512: 90.0 GFLOP/s\n"},
	} {
		rep := &Report{Machine: Machine{BLAS: "openblas (SkylakeX)", Kernels: "avx512"}, GEMMShape: "sgemm 512x512x512", GEMMGFLOPS: 90, PeakGFLOPS: c.peak}
		var b strings.Builder
		rep.writeMeasurements(&b)
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("peak %v: %q lacks %q", c.peak, b.String(), c.want)
		}
	}
}
