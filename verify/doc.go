// Package verify decides, for a set of inputs of a sequence model, whether
// some input decodes more than K̂ tokens: robust (proven, with a margin
// covering every tolerance), vulnerable (a witness replayed in float64 with
// no tie on its path) or unknown.
//
// A model lowers itself into a graph of operators (Lower, through
// model.Lowerer), which each property unrolls for its steps. Bounds are
// interval arithmetic, CROWN and α-CROWN over the operators' rules (op.go
// is their contract, one op_*.go file per operator); branch and bound with
// α,β-CROWN splits activations and tokens; MIP encodings go to a mip.Solver.
// Every bound is sound in float64 (padded outward for rounding). Verify and
// Bound are the entry points (BoundPath bounds the margins of a fixed
// decoding path, for the verifier peer benchmark); docs/verification.md
// states what soundness rests on.
package verify
