package ad

import "fmt"

// Node is a value on a tape together with its gradient.
type Node[T Float] struct {
	// Value is the forward result. Operations never modify it in place.
	Value *Tensor[T]
	// Grad accumulates d(loss)/d(Value) during Backward; nil until needed.
	Grad *Tensor[T]

	needsGrad bool
	backward  func()
}

// NeedsGrad reports whether a gradient flows into this node.
func (n *Node[T]) NeedsGrad() bool { return n.needsGrad }

// Shape is a shortcut for n.Value.Shape.
func (n *Node[T]) Shape() []int { return n.Value.Shape }

// grad returns n.Grad, allocating it on first use.
func (n *Node[T]) grad() *Tensor[T] {
	if n.Grad == nil {
		n.Grad = New[T](n.Value.Shape...)
	}
	return n.Grad
}

// Param is a trainable tensor with a persistent gradient buffer, owned by a
// layer. Binding it to a tape (Tape.Param) makes gradients accumulate in G.
type Param[T Float] struct {
	Name string
	W    *Tensor[T]
	G    *Tensor[T]
}

// NewParam allocates a zero parameter of the given shape.
func NewParam[T Float](name string, shape ...int) *Param[T] {
	return &Param[T]{Name: name, W: New[T](shape...), G: New[T](shape...)}
}

// ZeroGrad clears the accumulated gradient.
func (p *Param[T]) ZeroGrad() { clear(p.G.Data) }

// Tape records operations for reverse-mode differentiation.
//
// A tape is used by one goroutine, for one forward/backward pass, then
// dropped. With recording off it is a plain inference context.
type Tape[T Float] struct {
	record bool
	// trainParams makes Param leaves require gradients. Off for attacks,
	// which need only the input gradient and so skip every weight gradient.
	trainParams bool
	nodes       []*Node[T]
	params      map[*Param[T]]*Node[T]
}

// NewTape returns a tape. With record false no gradient bookkeeping happens.
func NewTape[T Float](record bool) *Tape[T] {
	return &Tape[T]{record: record, params: map[*Param[T]]*Node[T]{}}
}

// NewTrainingTape returns a recording tape on which parameters require
// gradients.
func NewTrainingTape[T Float]() *Tape[T] {
	tp := NewTape[T](true)
	tp.trainParams = true
	return tp
}

// Recording reports whether the tape records gradient rules.
func (tp *Tape[T]) Recording() bool { return tp.record }

// Const adds a value that never receives a gradient.
func (tp *Tape[T]) Const(t *Tensor[T]) *Node[T] {
	return &Node[T]{Value: t}
}

// Var adds a leaf that receives a gradient (when recording): an attack's
// input, say.
func (tp *Tape[T]) Var(t *Tensor[T]) *Node[T] {
	n := &Node[T]{Value: t, needsGrad: tp.record}
	return n
}

// Param binds p to the tape. Repeated calls return the same node, so a
// weight shared across decoder steps accumulates one gradient.
func (tp *Tape[T]) Param(p *Param[T]) *Node[T] {
	if n, ok := tp.params[p]; ok {
		return n
	}
	n := &Node[T]{Value: p.W}
	if tp.record && tp.trainParams {
		n.needsGrad = true
		n.Grad = p.G
	}
	tp.params[p] = n
	return n
}

// op creates the output node of an operation on inputs. The backward rule is
// kept only if recording and some input needs a gradient.
func (tp *Tape[T]) op(out *Tensor[T], backward func(out *Node[T]), inputs ...*Node[T]) *Node[T] {
	n := &Node[T]{Value: out}
	if !tp.record {
		return n
	}
	for _, in := range inputs {
		if in.needsGrad {
			n.needsGrad = true
			break
		}
	}
	if n.needsGrad && backward != nil {
		n.backward = func() { backward(n) }
		tp.nodes = append(tp.nodes, n)
	}
	return n
}

// Backward seeds d(loss)/d(loss) = 1 for the scalar loss and runs every
// recorded gradient rule in reverse order.
func (tp *Tape[T]) Backward(loss *Node[T]) error {
	if !tp.record {
		return fmt.Errorf("ad: Backward on a tape that does not record")
	}
	if loss.Value.Len() != 1 {
		return fmt.Errorf("ad: Backward needs a scalar loss, got shape %v", loss.Value.Shape)
	}
	if !loss.needsGrad {
		return fmt.Errorf("ad: loss does not depend on any variable")
	}
	loss.grad().Data[0] += 1
	for i := len(tp.nodes) - 1; i >= 0; i-- {
		n := tp.nodes[i]
		if n.Grad != nil {
			n.backward()
		}
	}
	return nil
}
