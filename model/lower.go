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

// LowerEncoder describes the convolutions, FC₁ (each with its ReLU) and
// FC₂ to b: the state "i0", the first step's input.
func (m *Captioner[T]) LowerEncoder(b nn.Builder, x nn.Value) (map[string]nn.Value, error) {
	return map[string]nn.Value{"i0": m.lower(b, x)}, nil
}

// cellState names the cell's state tensors: h, then c.
var cellState = []string{"h", "c"}

// LowerStep describes one step of the cell: fed i₀ with a zero state at
// the first step, the embedding of the token fed back afterwards.
func (m *Captioner[T]) LowerStep(b nn.Builder, first bool, s map[string]nn.Value) (nn.Value, map[string]nn.Value, error) {
	in := nn.CellInput{Emb: m.Emb.Rows()}
	if first {
		in = nn.CellInput{X: s["i0"]}
	}
	state := make([]nn.Value, m.cell.states())
	if !first {
		for k := range state {
			state[k] = s[cellState[k]]
		}
	}
	next := map[string]nn.Value{}
	for k, v := range m.cell.lower(b, in, state) {
		next[cellState[k]] = v
	}
	return next["h"], next, nil
}

// LowerLogits returns the output layer.
func (m *Captioner[T]) LowerLogits() (w, b []float64) {
	return nn.Float64s(m.Out.W.W.Data), nn.Float64s(m.Out.B.W.Data)
}
