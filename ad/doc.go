// Package ad is lenspec's small reverse-mode automatic differentiation engine.
//
// Values are dense row-major tensors, generic over float32 (fast path for
// training and attacks) and float64 (replay and gradient checks). A Tape
// records every operation applied to its Nodes; Tape.Backward then runs the
// recorded gradient rules in reverse. A tape built with NewTape(false) records
// nothing, so the same forward code serves inference at no bookkeeping cost:
// lenspec has exactly one forward implementation of each model, used for
// training, decoding, attacks and verification replay.
//
// Each operation keeps its forward kernel and its gradient rule side by side in
// one op_*.go file. Matrix products go through a gonum-style GEMM: OpenBLAS via
// cgo by default, gonum's pure-Go BLAS with the purego build tag (or without
// cgo).
package ad
