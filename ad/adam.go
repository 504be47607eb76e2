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
	m, v   [][]T
	step   int
}

// NewAdam returns Adam over params with the usual defaults (β1 0.9,
// β2 0.999, ε 1e-8). Moments have the parameters' type, as in PyTorch: a
// step streams every parameter, gradient and moment through memory, and
// float64 moments made float32 training's optimiser step the slowest part
// of it.
func NewAdam[T Float](params []*Param[T], lr float64) *Adam[T] {
	a := &Adam[T]{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, params: params}
	for _, p := range params {
		a.m = append(a.m, make([]T, p.W.Len()))
		a.v = append(a.v, make([]T, p.W.Len()))
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
		decay := 1.0
		if a.WeightDecay > 0 && (a.Decay == nil || a.Decay(p)) {
			decay = 1 - a.LR*a.WeightDecay
		}
		adamUpdate(p.W.Data, p.G.Data, a.m[i], a.v[i], a.LR, a.Beta1, a.Beta2, c1, c2, a.Eps, decay)
	}
}

// Steps is the number of updates applied so far.
func (a *Adam[T]) Steps() int { return a.step }

// State returns the step count and copies of the moment vectors, for
// checkpoints (float64, which holds float32 moments exactly).
func (a *Adam[T]) State() (step int, m, v [][]float64) {
	widen := func(xs [][]T) [][]float64 {
		out := make([][]float64, len(xs))
		for i, x := range xs {
			out[i] = make([]float64, len(x))
			for j, e := range x {
				out[i][j] = float64(e)
			}
		}
		return out
	}
	return a.step, widen(a.m), widen(a.v)
}

// SetState restores a checkpoint taken with State.
func (a *Adam[T]) SetState(step int, m, v [][]float64) {
	a.step = step
	for i := range a.m {
		for j := range a.m[i] {
			a.m[i][j], a.v[i][j] = T(m[i][j]), T(v[i][j])
		}
	}
}

// adamUpdateGo is the update of one parameter, in the parameters' type:
// the reference the C kernel (ls_adam) is tested against, and the path of
// float64 and pure-Go builds.
func adamUpdateGo[T Float](w, g, m, v []T, lr, b1, b2, c1, c2, eps, decay float64) {
	d, B1, B2 := T(decay), T(b1), T(b2)
	step, ic2, e := T(lr/c1), T(1/c2), T(eps)
	for j, gj := range g {
		if decay != 1 {
			w[j] *= d
		}
		m[j] = B1*m[j] + (1-B1)*gj
		v[j] = B2*v[j] + (1-B2)*gj*gj
		w[j] -= step * m[j] / (T(math.Sqrt(float64(v[j]*ic2))) + e)
	}
}
