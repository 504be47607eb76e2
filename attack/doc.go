// Package attack searches for inputs that lengthen a model's greedy output
// (paper §3.1–3.2): random search over the perturbation set, and projected
// gradient descent on a differentiable proxy of the output length.
//
// Attacks meet models only through the decoder contract
// (model.Decoder), so every architecture lenspec can load is attacked by
// the same code. They run on the float32 fast path. Nothing is claimed from
// float32: every outcome's best input is projected onto the set in float64
// and replayed through the float64 decoder, and only the replayed length,
// with its smallest top-2 logit margin, is reported.
//
// Every random choice for a target comes from PCG(Target.Seed,
// Target.Stream), so a target's result does not depend on which other
// targets share its batch, nor on where an interrupted run resumed.
package attack
