package safetensors

import (
	"math"
	"math/bits"
)

// DType names the element type of a tensor exactly as it is spelled in a
// safetensors header, for example "F32".
type DType string

// Element types understood by this package. Integer, boolean and 8-bit float
// tensors are carried as raw bytes; the float types convert with
// [Tensor.Float32s] and [Tensor.Float64s].
const (
	Bool       DType = "BOOL"
	Uint8      DType = "U8"
	Int8       DType = "I8"
	Float8E5M2 DType = "F8_E5M2"
	Float8E4M3 DType = "F8_E4M3"
	Int16      DType = "I16"
	Uint16     DType = "U16"
	Float16    DType = "F16"
	BFloat16   DType = "BF16"
	Int32      DType = "I32"
	Uint32     DType = "U32"
	Float32    DType = "F32"
	Float64    DType = "F64"
	Int64      DType = "I64"
	Uint64     DType = "U64"
)

// Size returns the number of bytes one element of d occupies, or 0 if d is
// not a known dtype.
func (d DType) Size() int {
	switch d {
	case Bool, Uint8, Int8, Float8E5M2, Float8E4M3:
		return 1
	case Int16, Uint16, Float16, BFloat16:
		return 2
	case Int32, Uint32, Float32:
		return 4
	case Float64, Int64, Uint64:
		return 8
	}
	return 0
}

// rank is the position of d in the reference implementation's Dtype enum.
// The reference writer lays tensors out by descending rank, which keeps
// wider types first so every tensor stays aligned to its element size; the
// exact order (I64 after F64, for instance) is reproduced so that our files
// are byte-identical to the reference's.
func (d DType) rank() int {
	switch d {
	case Bool:
		return 0
	case Uint8:
		return 1
	case Int8:
		return 2
	case Float8E5M2:
		return 3
	case Float8E4M3:
		return 4
	case Int16:
		return 5
	case Uint16:
		return 6
	case Float16:
		return 7
	case BFloat16:
		return 8
	case Int32:
		return 9
	case Uint32:
		return 10
	case Float32:
		return 11
	case Float64:
		return 12
	case Int64:
		return 13
	case Uint64:
		return 14
	}
	return -1
}

// isFloat reports whether elements of d are floating-point numbers.
func (d DType) isFloat() bool {
	switch d {
	case Float8E5M2, Float8E4M3, Float16, BFloat16, Float32, Float64:
		return true
	}
	return false
}

// numBytes returns product(shape)*size, checking every multiplication for
// overflow in the same order as the reference so that the same headers are
// rejected.
func numBytes(shape []uint64, size int) (uint64, bool) {
	n := uint64(1)
	for _, d := range shape {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 {
			return 0, false
		}
		n = lo
	}
	hi, lo := bits.Mul64(n, uint64(size))
	return lo, hi == 0 && lo <= math.MaxInt
}

// float16ToFloat32 converts IEEE 754 binary16 bits exactly.
func float16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		// Subnormal: mant × 2⁻²⁴ is exact in float32.
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// bfloat16ToFloat32 converts bfloat16 bits, which are the top half of a
// float32, exactly.
func bfloat16ToFloat32(b uint16) float32 {
	return math.Float32frombits(uint32(b) << 16)
}

// float8E5M2ToFloat32 converts an OCP E5M2 byte, which is the top half of a
// binary16, exactly.
func float8E5M2ToFloat32(b byte) float32 {
	return float16ToFloat32(uint16(b) << 8)
}

// float8E4M3ToFloat32 converts an OCP E4M3FN byte exactly. The format has no
// infinities; S.1111.111 is NaN.
func float8E4M3ToFloat32(b byte) float32 {
	exp := int(b>>3) & 0xf
	mant := int(b) & 0x7
	if exp == 0xf && mant == 0x7 {
		return float32(math.NaN())
	}
	var f float64
	if exp == 0 {
		f = math.Ldexp(float64(mant), -9)
	} else {
		f = math.Ldexp(float64(8+mant), exp-10)
	}
	if b&0x80 != 0 {
		f = -f
	}
	return float32(f)
}
