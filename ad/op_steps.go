package ad

import "fmt"

// Steps is a time-major sequence [t, B, D] that grows a step at a time: a
// decoder's cache of keys or values. Appending writes the new steps after
// the old ones in a buffer with room to spare, so a step of greedy decoding
// costs the new rows, not a copy of the t before them, and the tape holds
// one buffer per cache, not one per step. Node is the sequence so far; its
// value is the buffer's first t steps, which later appends never change.
//
// A Steps is a value: appending to one that is not the newest of its
// buffer (a search that continues one state two ways) copies it first.
type Steps[T Float] struct {
	// Node is the t steps so far, [t, B, D].
	Node *Node[T]
	buf  *stepsBuf[T]
}

// stepsBuf is the memory behind a Steps: its values, its gradient (shared
// by every Node over it, allocated when the first needs one) and how many
// values the newest Steps has written.
type stepsBuf[T Float] struct {
	data, grad []T
	filled     int
}

// Len is the number of steps, 0 for a nil sequence.
func (s *Steps[T]) Len() int {
	if s == nil {
		return 0
	}
	return s.Node.Value.Shape[0]
}

// AppendSteps returns s followed by x's steps: x is [n, B, D], or [B, D]
// for one step, and s is nil (no steps yet) or a sequence of the same B and
// D. When the buffer has to be (re)allocated it gets room for capacity
// steps (at least twice those it holds).
//
// The gradient of every Node over one buffer is one shared buffer too: a
// later Node's gradient on the earlier steps is the earlier Node's, which
// is what the chain rule of the append asks, so appending in place passes
// back only the new steps' rows.
func (tp *Tape[T]) AppendSteps(s *Steps[T], x *Node[T], capacity int) *Steps[T] {
	xs := x.Value.Shape
	n, inner := 1, xs
	if len(xs) == 3 {
		n, inner = xs[0], xs[1:]
	}
	if len(inner) != 2 || (s != nil && (s.Node.Value.Shape[1] != inner[0] || s.Node.Value.Shape[2] != inner[1])) {
		panic(fmt.Sprintf("ad.AppendSteps: steps %v and %v", nodeShape(s.node()), xs))
	}
	row, t := inner[0]*inner[1], s.Len()
	buf := (*stepsBuf[T])(nil)
	inPlace := s != nil && s.buf.filled == t*row && cap(s.buf.data) >= (t+n)*row
	if inPlace {
		buf = s.buf
	} else {
		size := max(capacity, 2*(t+n)) * row
		buf = &stepsBuf[T]{data: tp.alloc(false, size).Data}
		if s != nil {
			copy(buf.data, s.Node.Value.Data)
		}
	}
	copy(buf.data[t*row:(t+n)*row], x.Value.Data)
	buf.filled = (t + n) * row
	out := &Tensor[T]{Shape: []int{t + n, inner[0], inner[1]}, Data: buf.data[:(t+n)*row]}
	inputs := []*Node[T]{x}
	if s != nil {
		inputs = append(inputs, s.Node)
	}
	node := tp.op(out, func(o *Node[T]) {
		accumulate(x, o.Grad.Data[t*row:], 1)
		if !inPlace && s != nil {
			accumulate(s.Node, o.Grad.Data[:t*row], 1)
		}
	}, inputs...)
	if node.needsGrad {
		if buf.grad == nil {
			buf.grad = tp.alloc(true, len(buf.data)).Data
		}
		node.Grad = &Tensor[T]{Shape: out.Shape, Data: buf.grad[:(t+n)*row]}
	}
	return &Steps[T]{Node: node, buf: buf}
}

// node is s's Node, nil for a nil sequence.
func (s *Steps[T]) node() *Node[T] {
	if s == nil {
		return nil
	}
	return s.Node
}
