package ad

import (
	"fmt"
	"math"
)

// Float is the set of element types a Tensor may hold.
type Float interface {
	float32 | float64
}

// Tensor is a dense row-major array with an explicit shape.
type Tensor[T Float] struct {
	Shape []int
	Data  []T
}

// New returns a zero tensor of the given shape.
func New[T Float](shape ...int) *Tensor[T] {
	return &Tensor[T]{Shape: append([]int(nil), shape...), Data: make([]T, numel(shape))}
}

// Full returns a tensor of the given shape with every element v.
func Full[T Float](v T, shape ...int) *Tensor[T] {
	t := New[T](shape...)
	for i := range t.Data {
		t.Data[i] = v
	}
	return t
}

// FromSlice wraps data (not copied) as a tensor of the given shape. It panics
// if the sizes disagree, which is a programming error, not bad input.
func FromSlice[T Float](data []T, shape ...int) *Tensor[T] {
	if numel(shape) != len(data) {
		panic(fmt.Sprintf("ad.FromSlice: %d elements for shape %v", len(data), shape))
	}
	return &Tensor[T]{Shape: append([]int(nil), shape...), Data: data}
}

// Convert returns a copy of t with elements converted to U.
func Convert[U, T Float](t *Tensor[T]) *Tensor[U] {
	out := New[U](t.Shape...)
	for i, v := range t.Data {
		out.Data[i] = U(v)
	}
	return out
}

// Len is the number of elements.
func (t *Tensor[T]) Len() int { return len(t.Data) }

// Clone returns a deep copy.
func (t *Tensor[T]) Clone() *Tensor[T] {
	return &Tensor[T]{Shape: append([]int(nil), t.Shape...), Data: append([]T(nil), t.Data...)}
}

// Rows is the product of all dimensions but the last; Cols is the last one.
// Most operations treat a tensor as a [Rows, Cols] matrix.
func (t *Tensor[T]) Rows() int { return len(t.Data) / t.Cols() }

// Cols is the size of the last dimension (1 for a scalar).
func (t *Tensor[T]) Cols() int {
	if len(t.Shape) == 0 {
		return 1
	}
	return t.Shape[len(t.Shape)-1]
}

// CheckFinite reports the first NaN or infinite element.
func (t *Tensor[T]) CheckFinite() error {
	for i, v := range t.Data {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("element %d is %v", i, f)
		}
	}
	return nil
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
