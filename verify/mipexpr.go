package verify

import (
	"fmt"
	"slices"

	"github.com/lenspec/lenspec/mip"
)

// The MIP an encoding builds, as the operators see it: linear expressions
// over its variables and the rows that tie an operator's output to its
// inputs'. encode.go builds the whole model from these.

// encoding is the MIP of "some input of the set decodes more than K
// tokens" (docs/verification.md): the unrolled network node by node, each
// operator adding its own variables and rows (big-M ReLUs), a one-hot
// argmax over the non-eos tokens that can win at each step, the fed-back
// embedding as a linear function of the one-hot, and the margin
// m ≤ max_{z≠eos} o_t[z] − o_t[eos] for t = 0..K. The objective minimises
// −m.
type encoding struct {
	m        *mip.Model
	g        *graph
	b        *Bounds
	K        int
	relaxGap float64
	x        []int   // input variables
	vars     [][]int // per node, the variable of each output (−1: none)
	// ind are the binaries whose value at a point is whether a neuron's
	// pre-activation lies above a threshold (a ReLU's phase).
	ind   []indicator
	logit [][]int // per step, per token: variable or −1
	delta [][]int // per step, per token: one-hot binary, −1 if not allowed, loneToken if the only one
	omax  []int   // per step: max non-eos logit variable, −1 if a single token is allowed
	mvar  int
	// Binaries counts the binary variables (activations and argmax),
	// ActBinaries those of activations.
	Binaries, ActBinaries int
	// Relaxed counts unstable neurons encoded by a relaxation rather than
	// exactly.
	Relaxed    int
	abstractAt int
}

// lin is a linear expression Σ coef·var + c.
type lin struct {
	idx  []int
	coef []float64
	c    float64
}

func (l *lin) add(v int, w float64) {
	if v >= 0 && w != 0 {
		l.idx = append(l.idx, v)
		l.coef = append(l.coef, w)
	}
}

// addExpr adds w·ex (repeated variables are summed by the model).
func (l *lin) addExpr(ex lin, w float64) {
	if w == 0 {
		return
	}
	for k, v := range ex.idx {
		l.add(v, w*ex.coef[k])
	}
	l.c += w * ex.c
}

// scaled is s·l.
func (l lin) scaled(s float64) lin {
	out := lin{idx: slices.Clone(l.idx), c: s * l.c, coef: make([]float64, len(l.coef))}
	for k, c := range l.coef {
		out.coef[k] = s * c
	}
	return out
}

func varExpr(v int) lin { return lin{idx: []int{v}, coef: []float64{1}} }

// affineExpr is Σ w·in + b.
func affineExpr(w []float64, b float64, in []lin) lin {
	ex := lin{c: b}
	for i, wi := range w {
		ex.addExpr(in[i], wi)
	}
	return ex
}

// rowVar adds the constraint a·v − ex (sense) rhs + extras.
func (e *encoding) rowVar(name string, v int, a float64, ex lin, extra []int, extraCoef []float64, sense mip.Sense, rhs float64) {
	idx := append([]int{v}, extra...)
	coef := append([]float64{a}, extraCoef...)
	for k, j := range ex.idx {
		idx = append(idx, j)
		coef = append(coef, -ex.coef[k])
	}
	e.m.AddRow(name, idx, coef, sense, rhs+ex.c)
}

// name names output j of node n.
func (e *encoding) name(n *node, j int) string { return fmt.Sprintf("%s_%d", n.name, j) }

// materialise gives ex a variable of its own, bounded by iv: a node read
// by an affine node would otherwise multiply out into long rows.
func (e *encoding) materialise(name string, ex lin, iv Interval) lin {
	v := e.m.AddVar(name, iv.Lo, iv.Hi, mip.Continuous)
	e.rowVar(name+"_def", v, 1, ex, nil, nil, mip.EQ, 0)
	return varExpr(v)
}

// indicator is a binary variable v of the MIP that is 1 at a point
// exactly when neuron nu's pre-activation is above at (for a MIP start).
type indicator struct {
	v  int
	nu neuron
	at float64
}

// indicator records that binary v is 1 where nu's pre-activation is above
// at.
func (e *encoding) indicator(v int, nu neuron, at float64) {
	e.ind = append(e.ind, indicator{v, nu, at})
}
