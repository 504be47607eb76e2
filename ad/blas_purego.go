//go:build !cgo || purego

package ad

import "gonum.org/v1/gonum/blas/gonum"

// backend is fixed at build time; it holds no state.
var backend gemmer = gonum.Implementation{}

func backendName() string { return "gonum" }

// SetBLASThreads is a no-op for the pure-Go backend, which is single-threaded
// per call.
func SetBLASThreads(n int) {}

// BLASThreads is 1: gonum's GEMM runs on the calling goroutine.
func BLASThreads() int { return 1 }

// blasStart: gonum's kernels are lenspec's own; there is nothing to tune.
var blasStart blasTuning

// PeakFLOPS is 0: the pure-Go build has no vector FMA kernels to measure.
func PeakFLOPS(reps int) float64 { return 0 }
