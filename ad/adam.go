package ad

import "math"

// Adam is the Adam optimiser (Kingma & Ba). WeightDecay, if set, is
// decoupled (AdamW, Loshchilov & Hutter): each step shrinks W by
// LR·WeightDecay·W, independently of the gradient scale.
type Adam[T Float] struct {
	LR, Beta1, Beta2, Eps float64
	WeightDecay           float64
	// Decay selects the parameters weight decay applies to (nil: all).
	Decay  func(*Param[T]) bool
	params []*Param[T]
	m, v   [][]float64
	step   int
}

// NewAdam returns Adam over params with the usual defaults (β1 0.9,
// β2 0.999, ε 1e-8). Moments are kept in float64 so float32 training does
// not lose small updates.
func NewAdam[T Float](params []*Param[T], lr float64) *Adam[T] {
	a := &Adam[T]{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, params: params}
	for _, p := range params {
		a.m = append(a.m, make([]float64, p.W.Len()))
		a.v = append(a.v, make([]float64, p.W.Len()))
	}
	return a
}

// Step applies one update from the gradients in each Param.G.
func (a *Adam[T]) Step() { a.StepWhere(nil) }

// StepWhere applies one update to the parameters whose index i in the
// optimiser's list keep accepts (nil: all), leaving the others, and their
// moments, as they are: an attack run that has finished while others in
// its batch go on.
func (a *Adam[T]) StepWhere(keep func(i int) bool) {
	a.step++
	c1 := 1 - math.Pow(a.Beta1, float64(a.step))
	c2 := 1 - math.Pow(a.Beta2, float64(a.step))
	for i, p := range a.params {
		if keep != nil && !keep(i) {
			continue
		}
		if a.WeightDecay > 0 && (a.Decay == nil || a.Decay(p)) {
			f := T(1 - a.LR*a.WeightDecay)
			for j := range p.W.Data {
				p.W.Data[j] *= f
			}
		}
		m, v := a.m[i], a.v[i]
		for j, g := range p.G.Data {
			gf := float64(g)
			m[j] = a.Beta1*m[j] + (1-a.Beta1)*gf
			v[j] = a.Beta2*v[j] + (1-a.Beta2)*gf*gf
			p.W.Data[j] -= T(a.LR * (m[j] / c1) / (math.Sqrt(v[j]/c2) + a.Eps))
		}
	}
}

// Steps is the number of updates applied so far.
func (a *Adam[T]) Steps() int { return a.step }

// State returns the step count and moment vectors, for checkpoints.
func (a *Adam[T]) State() (step int, m, v [][]float64) { return a.step, a.m, a.v }

// SetState restores a checkpoint taken with State.
func (a *Adam[T]) SetState(step int, m, v [][]float64) {
	a.step = step
	for i := range a.m {
		copy(a.m[i], m[i])
		copy(a.v[i], v[i])
	}
}
