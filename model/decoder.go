package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/lenspec/lenspec/ad"
)

// InputKind says what a model reads.
type InputKind int

const (
	// Continuous inputs are tensors of real values in a box (images).
	Continuous InputKind = iota
	// Tokens inputs are sequences of token ids (sentences).
	Tokens
)

// String names the kind as docs and errors do.
func (k InputKind) String() string {
	switch k {
	case Continuous:
		return "continuous"
	case Tokens:
		return "tokens"
	}
	return fmt.Sprintf("InputKind(%d)", int(k))
}

// InputSpec describes a model's input: its kind, and for continuous inputs
// the shape and the range [Min, Max] every value must lie in; for token
// inputs the source vocabulary, the ids that are not words and the longest
// sequence Start accepts (MaxLen tokens; 0: no limit), so that callers can
// set aside a source the model would refuse instead of failing its batch.
type InputSpec struct {
	Kind     InputKind
	Shape    []int
	Min, Max float64
	Vocab    int
	Special  []int
	MaxLen   int
}

// Size is the number of values of one continuous input (0 for tokens).
func (s InputSpec) Size() int {
	if s.Kind != Continuous {
		return 0
	}
	n := 1
	for _, d := range s.Shape {
		n *= d
	}
	return n
}

// Input is a batch of inputs presented to a decoder on a tape. Exactly one
// of X and Tokens is set, matching the model's InputKind; Soft and Embedded
// optionally replace the embeddings of Tokens, which then only gives each
// row's length (the relaxed text attacks need both).
type Input[T ad.Float] struct {
	// X is a batch of continuous inputs, [B, Size].
	X *ad.Node[T]
	// Tokens are token sequences, one per row.
	Tokens [][]int
	// Soft holds a distribution over the source vocabulary for every
	// position of Tokens, rows in order [Σ len(Tokens[r]), Vocab]: the
	// embedding of a position is Soft·table.
	Soft *ad.Node[T]
	// Embedded holds the embedding of every position of Tokens directly,
	// [Σ len(Tokens[r]), EmbeddingSize].
	Embedded *ad.Node[T]
	// Dropout, if positive, is the drop probability the architecture
	// applies where it has dropout, masks drawn from Rng: for training.
	Dropout float64
	Rng     *rand.Rand
	// LabelSmoothing, if positive, is the weight TeacherForcedLoss moves
	// from each target token to the uniform distribution: for training.
	LabelSmoothing float64
}

// Rows is the batch size.
func (in Input[T]) Rows() int {
	if in.X != nil {
		return in.X.Value.Shape[0]
	}
	return len(in.Tokens)
}

// State is the decoding state of a batch between steps. It is opaque and
// owned by the architecture: an RNN's h, an LSTM's (h, c), an attention
// decoder's (h, c, memory, mask), a transformer's key–value cache.
type State[T ad.Float] interface {
	// Rows returns the state of the given rows, in that order, so a batch
	// can drop rows that finished or a search can duplicate them.
	// Gradients flow back to the rows taken.
	Rows(tp *ad.Tape[T], idx []int) State[T]
}

// Decoder is what every architecture provides and everything else uses:
// decoding, attacks, verification, training and benchmarks meet models
// only through it. T is float32 for speed or float64 for exact replay; both
// run the same code.
type Decoder[T ad.Float] interface {
	// Config is the model's configuration (config.json).
	Config() *Config
	// Input describes what the model reads.
	Input() InputSpec
	// Vocab is the number of output tokens, EOS the end-of-sequence id and
	// MaxSteps the default decoding step cap.
	Vocab() int
	EOS() int
	MaxSteps() int
	// Start encodes a batch and returns the state before the first step.
	// An input of the wrong kind or shape is an error.
	Start(tp *ad.Tape[T], in Input[T]) (State[T], error)
	// Step runs one decoder step: from the state and the tokens each row
	// emitted at the previous step (nil at the first step) to the logits
	// [B, Vocab] of this step and the next state.
	Step(tp *ad.Tape[T], s State[T], prev []int) (logits *ad.Node[T], next State[T])
	// Params lists every parameter in file order.
	Params() []*ad.Param[T]
}

// Batch is a batch of inputs held in memory: N continuous inputs stored
// one after the other in X, or N token sequences.
type Batch[T ad.Float] struct {
	X      []T
	Tokens [][]int
}

// rows returns the batch size for inputs described by spec, checking the
// batch has the right kind.
func (b Batch[T]) rows(spec InputSpec) (int, error) {
	switch spec.Kind {
	case Continuous:
		if b.Tokens != nil {
			return 0, fmt.Errorf("token inputs for a model that reads %v inputs", spec.Shape)
		}
		size := spec.Size()
		if len(b.X)%size != 0 {
			return 0, fmt.Errorf("%d input values are not a whole number of inputs of %d", len(b.X), size)
		}
		return len(b.X) / size, nil
	default:
		if b.X != nil {
			return 0, fmt.Errorf("continuous inputs for a model that reads token sequences")
		}
		return len(b.Tokens), nil
	}
}

// slice returns rows lo..hi−1.
func (b Batch[T]) slice(spec InputSpec, lo, hi int) Batch[T] {
	if spec.Kind == Continuous {
		size := spec.Size()
		return Batch[T]{X: b.X[lo*size : hi*size]}
	}
	return Batch[T]{Tokens: b.Tokens[lo:hi]}
}

// input puts the batch on a tape as constants.
func (b Batch[T]) input(tp *ad.Tape[T], spec InputSpec, rows int) Input[T] {
	if spec.Kind == Continuous {
		return Input[T]{X: tp.Const(ad.FromSlice(b.X, rows, spec.Size()))}
	}
	return Input[T]{Tokens: b.Tokens}
}

// SourceEmbedder is implemented by token-input models: the table whose
// rows embed source tokens (Input.Soft multiplies by it). Relaxed text
// attacks build their inputs from it.
type SourceEmbedder[T ad.Float] interface {
	SourceEmbedding() *ad.Param[T]
}
