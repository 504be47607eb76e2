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
	tp        *Tape[T] // where its gradient is allocated; nil for constants
}

// NeedsGrad reports whether a gradient flows into this node.
func (n *Node[T]) NeedsGrad() bool { return n.needsGrad }

// Shape is a shortcut for n.Value.Shape.
func (n *Node[T]) Shape() []int { return n.Value.Shape }

// gradInit returns n.Grad for an op about to add its contribution, and
// whether that contribution is the first: n.Grad is then new and not
// zeroed, and the op must write every element instead of adding (a GEMM
// with beta 0): the zeroing a first add needs is a pass over memory saved.
func (n *Node[T]) gradInit() (g *Tensor[T], first bool) {
	if n.Grad != nil {
		return n.Grad, false
	}
	if n.tp != nil {
		n.Grad = n.tp.alloc(false, n.Value.Shape...)
	} else {
		n.Grad = New[T](n.Value.Shape...)
	}
	return n.Grad, true
}

// grad returns n.Grad, allocating it (zeroed) on first use.
func (n *Node[T]) grad() *Tensor[T] {
	if n.Grad == nil {
		if n.tp != nil {
			n.Grad = n.tp.alloc(true, n.Value.Shape...)
		} else {
			n.Grad = New[T](n.Value.Shape...)
		}
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
	arena       *Arena[T]
	scratch     *Tape[T]
	// ownGrads: parameter gradients go to buffers of the tape's own (see
	// SeparateGrads), not to the parameters' G.
	ownGrads bool
}

// NewTape returns a tape. With record false no gradient bookkeeping happens.
func NewTape[T Float](record bool) *Tape[T] {
	return &Tape[T]{record: record, params: map[*Param[T]]*Node[T]{}}
}

// Use makes the tape take the memory of every value and gradient it
// creates from a, so that a loop that builds a tape per iteration (decoding
// chunks, PGD steps, training steps) reuses the same buffers instead of
// allocating afresh: the caller resets a between iterations, once nothing
// of the previous tape is used any more. It returns tp.
func (tp *Tape[T]) Use(a *Arena[T]) *Tape[T] {
	tp.arena = a
	return tp
}

// Zeros returns a zero tensor of the given shape from the tape's memory
// (its arena, if it uses one): for results that layers assemble before
// putting them on the tape.
func (tp *Tape[T]) Zeros(shape ...int) *Tensor[T] { return tp.alloc(true, shape...) }

// Empty is Zeros without the zeroing: its contents are undefined (a reused
// arena's memory holds earlier values), for results the caller writes in
// full before reading them.
func (tp *Tape[T]) Empty(shape ...int) *Tensor[T] { return tp.alloc(false, shape...) }

// Scratch returns a non-recording tape on memory of its own, emptied at
// each call: for work whose intermediate values are dropped as soon as its
// result is copied out, such as one block of a batch run so that its
// intermediates stay in cache. Parameters bind to it as constants.
func (tp *Tape[T]) Scratch() *Tape[T] {
	if tp.scratch == nil {
		tp.scratch = NewTape[T](false)
		if tp.arena != nil {
			tp.scratch.arena = tp.arena.child()
		} else {
			tp.scratch.arena = NewArena[T]()
		}
	}
	tp.scratch.arena.Reset()
	clear(tp.scratch.params)
	return tp.scratch
}

// alloc returns a tensor of the given shape from the tape's arena (or the
// heap), zeroed if zero is set; otherwise its contents are undefined and
// the caller writes every element.
func (tp *Tape[T]) alloc(zero bool, shape ...int) *Tensor[T] {
	if tp.arena == nil {
		return New[T](shape...)
	}
	data := tp.arena.get(numel(shape))
	if zero {
		clear(data)
	}
	return &Tensor[T]{Shape: append([]int(nil), shape...), Data: data}
}

// Arena is reusable memory for tapes (Tape.Use): chunks handed out in
// order and all taken back by Reset. After the first iteration of a loop
// it holds as much as one iteration needs, and later iterations allocate
// nothing. An arena is used by one goroutine at a time.
type Arena[T Float] struct {
	chunks [][]T
	cur    int // chunk being filled
	off    int // next free element in it
	kid    *Arena[T]
}

// child is a second arena that lives as long as a, for scratch tapes: their
// memory is reused across a's resets too.
func (a *Arena[T]) child() *Arena[T] {
	if a.kid == nil {
		a.kid = NewArena[T]()
	}
	return a.kid
}

// NewArena returns an empty arena.
func NewArena[T Float]() *Arena[T] { return &Arena[T]{} }

// Reset takes every buffer back: values from before are overwritten by
// what comes after.
func (a *Arena[T]) Reset() { a.cur, a.off = 0, 0 }

// get returns n elements (not zeroed).
func (a *Arena[T]) get(n int) []T {
	for a.cur < len(a.chunks) {
		c := a.chunks[a.cur]
		if a.off+n <= len(c) {
			a.off += n
			return c[a.off-n : a.off : a.off]
		}
		a.cur, a.off = a.cur+1, 0
	}
	size := max(n, 1<<16)
	if k := len(a.chunks); k > 0 {
		size = max(n, 2*len(a.chunks[k-1]))
	}
	a.chunks = append(a.chunks, make([]T, size))
	a.cur, a.off = len(a.chunks)-1, n
	return a.chunks[a.cur][:n:n]
}

// NewTrainingTape returns a recording tape on which parameters require
// gradients.
func NewTrainingTape[T Float]() *Tape[T] {
	tp := NewTape[T](true)
	tp.trainParams = true
	return tp
}

// SeparateGrads makes the tape accumulate parameter gradients in buffers
// of its own (from its arena, if it uses one) instead of the parameters'
// G, so that several tapes over the same parameters can run Backward at
// once — the shards of a data-parallel training step. AddGrads then adds
// them to G, in whatever order the caller fixes. It returns tp.
func (tp *Tape[T]) SeparateGrads() *Tape[T] {
	if len(tp.params) > 0 {
		panic("ad: SeparateGrads after parameters were bound")
	}
	tp.ownGrads = true
	return tp
}

// AddGrads adds the parameter gradients a SeparateGrads tape accumulated
// to the parameters' G (a no-op on other tapes, whose gradients are there
// already).
func (tp *Tape[T]) AddGrads() {
	if !tp.ownGrads {
		return
	}
	for p, n := range tp.params {
		for i, v := range n.Grad.Data {
			p.G.Data[i] += v
		}
	}
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
	return &Node[T]{Value: t, needsGrad: tp.record, tp: tp}
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
		if tp.ownGrads {
			n.Grad = tp.alloc(true, p.W.Shape...)
		} else {
			n.Grad = p.G
		}
	}
	tp.params[p] = n
	return n
}

// op creates the output node of an operation on inputs. The backward rule is
// kept only if recording and some input needs a gradient.
func (tp *Tape[T]) op(out *Tensor[T], backward func(out *Node[T]), inputs ...*Node[T]) *Node[T] {
	n := &Node[T]{Value: out, tp: tp}
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

// Float64s returns a copy of the parameter's values as float64: how a
// layer's description hands its weights to the verifier (nn.Tensor).
func (p *Param[T]) Float64s() []float64 {
	out := make([]float64, len(p.W.Data))
	for i, v := range p.W.Data {
		out[i] = float64(v)
	}
	return out
}
