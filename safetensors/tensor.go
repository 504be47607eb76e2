package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrFormat is wrapped by every error that reports a malformed file or an
// invalid tensor, so callers can tell bad data from I/O failures.
var ErrFormat = errors.New("safetensors: invalid file")

// Tensor is one named tensor. Data holds the elements in row-major order as
// little-endian bytes, exactly as stored in the file.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// File is the content of a safetensors file.
type File struct {
	// Metadata is the optional "__metadata__" map. A nil map is omitted when
	// writing; a non-nil empty map is written as {}.
	Metadata map[string]string
	// Tensors are ordered by their position in the data buffer after Read.
	// Write accepts any order and lays tensors out as the reference does.
	Tensors []Tensor
}

// Tensor returns the tensor with the given name. The pointer aliases
// f.Tensors, so changes through it are visible in f.
func (f *File) Tensor(name string) (*Tensor, bool) {
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			return &f.Tensors[i], true
		}
	}
	return nil, false
}

// F32 returns a float32 tensor holding a little-endian copy of data. The
// shape is copied too. A length that does not match the shape is reported by
// Write, not here, so that building a File never panics.
func F32(name string, shape []int, data []float32) Tensor {
	b := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return Tensor{Name: name, DType: Float32, Shape: append([]int{}, shape...), Data: b}
}

// F64 returns a float64 tensor holding a little-endian copy of data. The
// shape is copied too. A length that does not match the shape is reported by
// Write.
func F64(name string, shape []int, data []float64) Tensor {
	b := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
	return Tensor{Name: name, DType: Float64, Shape: append([]int{}, shape...), Data: b}
}

// I32 returns an int32 tensor (token ids, lengths) holding a
// little-endian copy of data. The shape is copied too; a length that does
// not match it is reported by Write.
func I32(name string, shape []int, data []int32) Tensor {
	b := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return Tensor{Name: name, DType: Int32, Shape: append([]int{}, shape...), Data: b}
}

// NumElements returns the product of the shape, which is 1 for a scalar.
// It fails on a negative dimension or an overflowing product.
func (t *Tensor) NumElements() (int, error) {
	n, err := t.numBytes(1)
	return int(n), err
}

// numBytes returns product(shape)*size as a checked byte count.
func (t *Tensor) numBytes(size int) (uint64, error) {
	shape := make([]uint64, len(t.Shape))
	for i, d := range t.Shape {
		if d < 0 {
			return 0, fmt.Errorf("%w: tensor %q: negative dimension in shape %v", ErrFormat, t.Name, t.Shape)
		}
		shape[i] = uint64(d)
	}
	n, ok := numBytes(shape, size)
	if !ok {
		return 0, fmt.Errorf("%w: tensor %q: shape %v overflows", ErrFormat, t.Name, t.Shape)
	}
	return n, nil
}

// check verifies that t has a known dtype and that Data has exactly the
// length its shape and dtype demand, and returns the element count.
func (t *Tensor) check() (int, error) {
	size := t.DType.Size()
	if size == 0 {
		return 0, fmt.Errorf("%w: tensor %q: unknown dtype %q", ErrFormat, t.Name, t.DType)
	}
	n, err := t.numBytes(size)
	if err != nil {
		return 0, err
	}
	if uint64(len(t.Data)) != n {
		return 0, fmt.Errorf("%w: tensor %q: %d data bytes, but shape %v of %s needs %d",
			ErrFormat, t.Name, len(t.Data), t.Shape, t.DType, n)
	}
	return int(n) / size, nil
}

// Float32s returns the elements converted to float32. F32, F16, BF16 and the
// 8-bit floats convert exactly; F64 rounds to nearest, so values beyond the
// float32 range become ±Inf. Integer and boolean tensors are an error.
func (t *Tensor) Float32s() ([]float32, error) {
	n, err := t.check()
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	b := t.Data
	switch t.DType {
	case Float32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case Float64:
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
		}
	case Float16:
		for i := range out {
			out[i] = float16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case BFloat16:
		for i := range out {
			out[i] = bfloat16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case Float8E5M2:
		for i := range out {
			out[i] = float8E5M2ToFloat32(b[i])
		}
	case Float8E4M3:
		for i := range out {
			out[i] = float8E4M3ToFloat32(b[i])
		}
	default:
		return nil, fmt.Errorf("safetensors: tensor %q: cannot convert %s to float32", t.Name, t.DType)
	}
	return out, nil
}

// Int32s returns the elements of an I32 tensor (token ids, lengths).
// Other dtypes are an error: ids must not pass through a float.
func (t *Tensor) Int32s() ([]int32, error) {
	if t.DType != Int32 {
		return nil, fmt.Errorf("safetensors: tensor %q is %s, not I32", t.Name, t.DType)
	}
	n, err := t.check()
	if err != nil {
		return nil, err
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out, nil
}

// Float64s returns the elements converted to float64. Every float dtype
// converts exactly. Integer and boolean tensors are an error.
func (t *Tensor) Float64s() ([]float64, error) {
	if t.DType == Float64 {
		n, err := t.check()
		if err != nil {
			return nil, err
		}
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
		}
		return out, nil
	}
	if t.DType.Size() != 0 && !t.DType.isFloat() {
		return nil, fmt.Errorf("safetensors: tensor %q: cannot convert %s to float64", t.Name, t.DType)
	}
	// Every other float dtype widens to float32 exactly, and float32 to
	// float64 exactly.
	f, err := t.Float32s()
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out, nil
}

// CheckFinite reports the first NaN or infinite element of a float tensor.
// Integer and boolean tensors are always finite. The codec itself stores
// non-finite values faithfully; this is for callers loading model weights.
func (t *Tensor) CheckFinite() error {
	if _, err := t.check(); err != nil {
		return err
	}
	if !t.DType.isFloat() {
		return nil
	}
	vals, err := t.Float64s()
	if err != nil {
		return err
	}
	for i, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("safetensors: tensor %q: element %d is %v", t.Name, i, v)
		}
	}
	return nil
}
