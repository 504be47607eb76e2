package experiment

import (
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/lenspec/lenspec/ad"
)

// Arithmetic describes the float32 arithmetic a search ran on: lenspec's
// revision (the build's version control revision, "+dirty" with local
// changes, "unknown" when the build does not say), the instruction set of
// its kernels, its GEMM backend and the GEMM's threads. A record's search
// reproduces bit for bit where these are the same, whatever the batch,
// shard or cores; elsewhere kernels round differently and only its
// witness's float64 replay is the same (docs/architecture.md, "Reproducible
// from its record").
func Arithmetic() string {
	return fmt.Sprintf("lenspec %s, kernels %s, %s, %d BLAS thread(s)", revision(), ad.KernelLevel(), ad.BLASName(), ad.BLASThreads())
}

// revision is the build's version control revision, read once.
var revision = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	switch {
	case rev == "":
		return "unknown"
	case dirty:
		return rev + "+dirty"
	}
	return rev
})
