package model

import "github.com/lenspec/lenspec/ad"

// TeacherForcer is implemented by decoders that run a whole teacher-forced
// target in one pass rather than a step at a time: a transformer's
// decoder layers over all the target's positions at once (causally), in
// GEMMs over every step's rows instead of one GEMM per step. The logits
// are those the steps would give. TeacherForcedLoss and the other
// teacher-forced losses use it when the decoder has it.
type TeacherForcer[T ad.Float] interface {
	// TeacherLogits returns the logits [B, Vocab] of len(prev) steps from
	// the state Start returned, step t fed the tokens prev[t] (prev[0]
	// nil: the first step's).
	TeacherLogits(tp *ad.Tape[T], s State[T], prev [][]int) []*ad.Node[T]
}

// teacherInputs are the tokens each step of teacher forcing on labels is
// fed, steps steps: nil at the first step, then each row's previous
// target (0 past its end, where its loss weight is nil).
func teacherInputs(labels [][]int, steps, eos int) [][]int {
	prev := make([][]int, steps)
	targets := make([]int, len(labels))
	for t := 0; t+1 < steps; t++ {
		stepTargets(targets, labels, t, eos)
		prev[t+1] = make([]int, len(labels))
		for r, y := range targets {
			prev[t+1][r] = max(y, 0)
		}
	}
	return prev
}
