//go:build !cgo || purego

package ad

import "gonum.org/v1/gonum/blas/gonum"

// backend is fixed at build time; it holds no state.
var backend gemmer = gonum.Implementation{}

const backendName = "gonum"
