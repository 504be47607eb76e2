package model

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/nn"
)

// Captioner cells (config.json "cell").
const (
	// CellReLU is the vanilla RNN cell with ReLU (PyTorch nn.RNNCell with
	// nonlinearity "relu"): only affine maps and ReLU.
	CellReLU = "rnn_relu"
	// CellLSTM is PyTorch's nn.LSTMCell (gates i, f, g, o).
	CellLSTM = "lstm"
	// CellGRU is PyTorch's nn.GRUCell (gates r, z, n).
	CellGRU = "gru"
)

// cellKinds lists the cells a captioner can have, with how many gate
// blocks of Hidden rows their weights hold (operation counts, sizes).
var cellKinds = map[string]int{CellReLU: 1, CellLSTM: 4, CellGRU: 3}

// cellNames lists the cell kinds, sorted, for messages.
func cellNames() []string {
	var out []string
	for k := range cellKinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// cell is a decoder cell as the captioner drives it: its state is a list
// of [B, Hidden] vectors, h first (an LSTM's c second), all zero at the
// start. A new cell is a file in nn (its description) and a case in
// newCell.
type cell[T ad.Float] interface {
	// states is the number of state vectors.
	states() int
	// describe is one step from input x and state s; s holds zero Values
	// at the first step as the verifier describes it.
	describe(b nn.Builder, x nn.Value, s []nn.Value) []nn.Value
	params() []*ad.Param[T]
}

// newCell builds a cell of the given kind named prefix.
func newCell[T ad.Float](kind, prefix string, in, hidden int, rng *rand.Rand) (cell[T], error) {
	switch kind {
	case CellReLU:
		return rnnCell[T]{nn.NewRNNCell[T](prefix, in, hidden, rng)}, nil
	case CellLSTM:
		return lstmCell[T]{nn.NewLSTMCell[T](prefix, in, hidden, rng)}, nil
	case CellGRU:
		return gruCell[T]{nn.NewGRUCell[T](prefix, in, hidden, rng)}, nil
	}
	return nil, fmt.Errorf("cell %q is not supported (want one of %q)", kind, cellNames())
}

type rnnCell[T ad.Float] struct{ *nn.RNNCell[T] }

func (rnnCell[T]) states() int { return 1 }
func (c rnnCell[T]) describe(b nn.Builder, x nn.Value, s []nn.Value) []nn.Value {
	return []nn.Value{c.Describe(b, x, s[0])}
}
func (c rnnCell[T]) params() []*ad.Param[T] { return c.Params() }

type lstmCell[T ad.Float] struct{ *nn.LSTMCell[T] }

func (lstmCell[T]) states() int { return 2 }
func (c lstmCell[T]) describe(b nn.Builder, x nn.Value, s []nn.Value) []nn.Value {
	h, cn := c.Describe(b, x, s[0], s[1])
	return []nn.Value{h, cn}
}
func (c lstmCell[T]) params() []*ad.Param[T] { return c.Params() }

type gruCell[T ad.Float] struct{ *nn.GRUCell[T] }

func (gruCell[T]) states() int { return 1 }
func (c gruCell[T]) describe(b nn.Builder, x nn.Value, s []nn.Value) []nn.Value {
	return []nn.Value{c.Describe(b, x, s[0])}
}
func (c gruCell[T]) params() []*ad.Param[T] { return c.Params() }
