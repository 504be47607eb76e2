package model

import (
	"fmt"
	"math"

	"github.com/lenspec/lenspec/ad"
)

// SoftTargets are a teacher model's distributions along the labels of a
// batch, the targets of knowledge distillation (Hinton et al. 2015): for
// every teacher-forced step, a [B, Vocab] row-major block of
// softmax(logits/Temp), and the temperature they were taken at.
type SoftTargets[T ad.Float] struct {
	Probs [][]T
	Temp  float64
	// HardEOS keeps the label alone, at full weight, on the steps whose
	// target is eos. The eos decision is the property lenspec verifies: a
	// teacher's distribution, softer there than the label, narrows the
	// very margin a proof of stopping needs.
	HardEOS bool
}

// TeacherSoftTargets runs teacher over the batch in along labels, as
// TeacherForcedLoss feeds them, on tp (a tape that need not record), and
// returns its distributions at temperature temp. The teacher must read
// the same inputs and tokens as the model it teaches: DistilledLoss
// refuses targets whose shape differs from the student's.
func TeacherSoftTargets[T ad.Float](tp *ad.Tape[T], teacher Decoder[T], in Input[T], labels [][]int, temp float64) (SoftTargets[T], error) {
	if !(temp > 0) || math.IsInf(temp, 0) {
		return SoftTargets[T]{}, fmt.Errorf("distillation temperature %v must be positive and finite", temp)
	}
	st := SoftTargets[T]{Temp: temp}
	err := forceTeacher(tp, teacher, in, labels, func(_ int, logits *ad.Node[T], _ []int, _ []T) {
		// The same log-softmax at the same temperature as the model's side
		// of DistilledLoss.
		lp := tp.LogSoftmax(tp.Scale(logits, T(1/temp))).Value.Data
		p := make([]T, len(lp))
		for i, v := range lp {
			p[i] = T(math.Exp(float64(v)))
		}
		st.Probs = append(st.Probs, p)
	})
	return st, err
}

// DistilledLoss is TeacherForcedLoss with each step's cross-entropy
// against the label mixed with the cross-entropy against the teacher's
// soft targets: per step (1 − weight)·CE(label) + weight·Temp²·CE(soft,
// softmax(logits/Temp)), averaged over the batch and summed over steps.
// Temp² keeps the soft term's gradient on the scale of the hard one's
// whatever the temperature. Rows whose label has ended (padding) take
// neither term. A teacher's distribution carries what the label does
// not — which wrong digit an image resembles — and gives a model whose
// capacity a certified loss also claims a target it can reach.
func DistilledLoss[T ad.Float](tp *ad.Tape[T], d Decoder[T], in Input[T], labels [][]int, soft SoftTargets[T], weight float64) (*ad.Node[T], error) {
	if !(weight >= 0 && weight <= 1) {
		return nil, fmt.Errorf("distillation weight %v must be in [0, 1]", weight)
	}
	var total *ad.Node[T]
	var bad error
	err := forceTeacher(tp, d, in, labels, func(t int, logits *ad.Node[T], targets []int, weights []T) {
		cols, rows := logits.Value.Cols(), logits.Value.Rows()
		if bad != nil {
			return
		}
		if t >= len(soft.Probs) || len(soft.Probs[t]) != rows*cols {
			bad = fmt.Errorf("distillation: no soft targets of %d×%d for step %d (the teacher's vocabulary or batch differs)", rows, cols, t)
			return
		}
		hard := make([]T, rows)
		for r, y := range targets {
			hard[r] = weights[r] * T(1-weight)
			if soft.HardEOS && y == d.EOS() {
				hard[r] = weights[r]
			}
		}
		total = tp.AddTo(total, tp.SmoothedCrossEntropy(logits, targets, hard, in.LabelSmoothing))
		if weight == 0 {
			return
		}
		// −Σ_z p_z·log softmax(logits/Temp)_z, weighted per row, as one
		// weighted sum of the log-softmax.
		w := make([]T, rows*cols)
		scale := weight * soft.Temp * soft.Temp
		for r, y := range targets {
			if y < 0 || (soft.HardEOS && y == d.EOS()) {
				continue
			}
			for j := range cols {
				w[r*cols+j] = T(-scale * float64(weights[r]) * float64(soft.Probs[t][r*cols+j]))
			}
		}
		total = tp.AddTo(total, tp.WeightedSum(tp.LogSoftmax(tp.Scale(logits, T(1/soft.Temp))), w))
	})
	if err == nil {
		err = bad
	}
	return total, err
}
