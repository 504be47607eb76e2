package model

import (
	"github.com/lenspec/lenspec/nn"
)

// Lowerer is implemented by architectures that describe themselves to the
// verifier (verify.Lower) as graphs of operators: the encoder once, the
// first decoder step, and a later decoder step, which the verifier
// unrolls for as many steps as a property needs. The state a step reads
// and writes is named ("h", "c", "i0"): a later step must write back
// every name it reads. It may write one wider than it read it (a cache of
// the tokens emitted so far, appended to by Concat): LowerStep is then
// called again for each step, on the widths the step before wrote.
type Lowerer interface {
	// LowerEncoder describes the encoder from the input x (the model's
	// continuous input) to the state the first step reads.
	LowerEncoder(b nn.Builder, x nn.Value) (map[string]nn.Value, error)
	// LowerStep describes one decoder step on state s: the first step
	// (first set) is fed no token; a later step reads the token the step
	// before emitted through b.Token. It returns the vector the output
	// layer reads and the next state.
	LowerStep(b nn.Builder, first bool, s map[string]nn.Value) (out nn.Value, next map[string]nn.Value, err error)
	// LowerLogits returns the output layer, logits = W·out + b, with W
	// row-major [vocabulary × width of out].
	LowerLogits() (w, b []float64)
}

// LowerEncoder describes the encoder to b: the state "i0", the first
// step's input.
func (m *Captioner[T]) LowerEncoder(b nn.Builder, x nn.Value) (map[string]nn.Value, error) {
	return map[string]nn.Value{"i0": m.describe(b, x)}, nil
}

// cellState names the cell's state vectors: h, then c.
var cellState = []string{"h", "c"}

// LowerStep describes one step of the cell (describeStep): fed i₀ with a
// zero state at the first step, the token fed back afterwards.
func (m *Captioner[T]) LowerStep(b nn.Builder, first bool, s map[string]nn.Value) (nn.Value, map[string]nn.Value, error) {
	state := make([]nn.Value, m.cell.states())
	if !first {
		for k := range state {
			state[k] = s[cellState[k]]
		}
	}
	out, next := m.describeStep(b, first, s["i0"], state)
	named := map[string]nn.Value{}
	for k, v := range next {
		named[cellState[k]] = v
	}
	return out, named, nil
}

// LowerLogits returns the output layer.
func (m *Captioner[T]) LowerLogits() (w, b []float64) {
	return m.Out.W.Float64s(), m.Out.B.Float64s()
}
