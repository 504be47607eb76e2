// Package model holds lenspec's sequence models, their files and greedy
// decoding. It is the one place that defines output length.
//
// # Output length
//
// Greedy decoding emits y_0, y_1, … with y_t = argmax o_t (ties go to the
// lowest token index) and stops at the first eos. The output length is
//
//	ℓ(x) = min{t : y_t = eos},
//
// the number of tokens before eos (the paper's Eq. 2 with 0-based steps): a
// caption "3 1 eos" has length 2, an immediate eos has length 0. Decoding
// runs at most a step cap of steps; an output with no eos among them has not
// stopped, and is reported as such (Result.Stopped false), never as a
// length: all that is known is ℓ(x) ≥ cap.
package model
